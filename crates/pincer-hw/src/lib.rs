//! pincer-hw owns the hardware: I2C, SPI and GPIO behind small blocking
//! traits, their Linux backends (i2c-dev, spidev, GPIO character device),
//! a simulated board, input validation (HW2), board detection and pin
//! tables (HW3), and camera capture (HW6).
//!
//! It must not know about agents, tools, the gate, config files or
//! environment variables: it is a leaf crate (no pincer dependency), takes
//! already-read values (the `[hardware]` toml table, the PINCER_BOARD value)
//! instead of reading them (its one look at the environment forwards an
//! allowlist, PATH, HOME, the locale and XDG_RUNTIME_DIR, to the camera
//! process it spawns; see `camera::capture_env`), and never decides whether an operation is allowed — pincer-tools does,
//! through the gate, before calling in. All I/O blocks; async callers use
//! `spawn_blocking`.

pub mod board;
pub mod bus;
pub mod camera;
pub mod config;
pub mod error;
pub mod hardware;
#[cfg(target_os = "linux")]
pub mod linux;
pub mod sim;
pub mod validate;

pub use board::{
    Board, BoardKind, DEVICE_TREE_COMPATIBLE, DetectSource, Detection, GpioPin, PinDef,
    PinFunction, detect,
};
pub use bus::{BusInfo, Gpio, I2cBus, I2cRead, SpiBus, TransferPath};
pub use config::{HardwareConfig, SimConfig, SimDeviceConfig, SimGpioConfig, SimModel};
pub use error::HwError;
pub use hardware::{Capture, Hardware};
#[cfg(target_os = "linux")]
pub use linux::{LinuxGpio, LinuxI2c, LinuxSpi};
pub use sim::{SimBoard, SimTransaction};
pub use validate::{
    I2cAddr, Level, MAX_READ, MAX_SPI, MAX_WRITE, ReadLen, SpiData, WriteData, hex_string,
    parse_hex_bytes, parse_spi_device, parse_u8,
};
