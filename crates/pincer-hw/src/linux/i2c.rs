//! `/dev/i2c-N` through i2c-dev.

use std::fs::{File, OpenOptions};

use crate::bus::{BusInfo, I2cBus, I2cRead, TransferPath};
use crate::error::HwError;
use crate::validate::{I2cAddr, ReadLen, WriteData};

/// An open `/dev/i2c-N`.
#[derive(Debug)]
pub struct LinuxI2c {
    bus: u8,
    device: String,
    #[allow(dead_code)]
    file: File,
}

impl LinuxI2c {
    /// Opens `/dev/i2c-{bus}` read-write.
    pub fn open(bus: u8) -> Result<LinuxI2c, HwError> {
        let device = format!("/dev/i2c-{bus}");
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&device)
            .map_err(|e| HwError::io("open", &device, e))?;
        Ok(LinuxI2c { bus, device, file })
    }

    fn todo(&self) -> HwError {
        HwError::Unsupported(format!(
            "{}: the i2c-dev backend is not built yet",
            self.device
        ))
    }
}

impl I2cBus for LinuxI2c {
    fn info(&mut self) -> Result<BusInfo, HwError> {
        Ok(BusInfo {
            name: format!("i2c-{}", self.bus),
            device: Some(self.device.clone()),
            backend: "linux",
            detail: serde_json::Value::Null,
        })
    }

    fn scan(&mut self) -> Result<Vec<I2cAddr>, HwError> {
        Err(self.todo())
    }

    fn read(&mut self, _: I2cAddr, _: Option<u8>, _: ReadLen) -> Result<I2cRead, HwError> {
        Err(self.todo())
    }

    fn write(&mut self, _: I2cAddr, _: &WriteData) -> Result<TransferPath, HwError> {
        Err(self.todo())
    }
}
