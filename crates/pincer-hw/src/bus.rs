//! The bus traits (HW1). Blocking: async callers use `spawn_blocking`.
//! Methods take only validated values (see `validate`), so a backend never
//! re-checks ranges.

use std::fmt;

use serde::Serialize;

use crate::board::GpioPin;
use crate::error::HwError;
use crate::validate::{I2cAddr, Level, ReadLen, SpiData, WriteData};

/// Which path a transfer used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TransferPath {
    /// Plain I2C messages through the I2C_RDWR ioctl.
    I2cRdwr,
    /// SMBus commands through the I2C_SMBUS ioctl (SMBus-only adapters).
    Smbus,
    /// The simulated board.
    Sim,
}

impl fmt::Display for TransferPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TransferPath::I2cRdwr => "i2c-rdwr",
            TransferPath::Smbus => "smbus",
            TransferPath::Sim => "sim",
        })
    }
}

/// Bytes read from an I2C device and the path used to read them.
#[derive(Debug, Clone, Serialize)]
pub struct I2cRead {
    pub data: Vec<u8>,
    pub path: TransferPath,
}

/// What a bus is, for `info` output.
#[derive(Debug, Clone, Serialize)]
pub struct BusInfo {
    /// "i2c-1", "sim-i2c", "spidev0.0", "gpio".
    pub name: String,
    /// "/dev/i2c-1"; None for the sim.
    pub device: Option<String>,
    /// "linux" | "sim".
    pub backend: &'static str,
    /// Backend specifics, e.g. linux i2c:
    /// {"funcs":"0x0c7f0000","plain_i2c":false,"smbus":[...]}.
    pub detail: serde_json::Value,
}

/// An I2C bus (one adapter).
pub trait I2cBus: Send {
    fn info(&mut self) -> Result<BusInfo, HwError>;
    /// Probes `I2cAddr::SCAN_FIRST..=I2cAddr::LAST` and returns who answered.
    fn scan(&mut self) -> Result<Vec<I2cAddr>, HwError>;
    /// Register read = write the register byte then read `len` bytes
    /// (combined transaction); `register: None` = plain read from the device.
    fn read(
        &mut self,
        addr: I2cAddr,
        register: Option<u8>,
        len: ReadLen,
    ) -> Result<I2cRead, HwError>;
    /// Raw write; by convention `data[0]` is the register/pointer byte.
    fn write(&mut self, addr: I2cAddr, data: &WriteData) -> Result<TransferPath, HwError>;
}

/// An SPI device (bus + chip select).
pub trait SpiBus: Send {
    fn info(&mut self) -> Result<BusInfo, HwError>;
    /// Full duplex: the result has exactly `tx.bytes().len()` bytes.
    fn transfer(&mut self, tx: &SpiData) -> Result<Vec<u8>, HwError>;
}

/// GPIO lines; pins come from `Board::gpio_pin`, so they are GPIO-capable.
pub trait Gpio: Send {
    fn info(&mut self) -> Result<BusInfo, HwError>;
    fn read(&mut self, pin: &GpioPin) -> Result<Level, HwError>;
    fn write(&mut self, pin: &GpioPin, level: Level) -> Result<(), HwError>;
}
