//! GPIO through the Linux GPIO character device.

use crate::board::GpioPin;
use crate::bus::{BusInfo, Gpio};
use crate::error::HwError;
use crate::validate::Level;

/// GPIO lines on `/dev/gpiochip*`.
#[derive(Debug, Default)]
pub struct LinuxGpio {}

impl LinuxGpio {
    pub fn new() -> LinuxGpio {
        LinuxGpio::default()
    }
}

impl Gpio for LinuxGpio {
    fn info(&mut self) -> Result<BusInfo, HwError> {
        Ok(BusInfo {
            name: "gpio".to_string(),
            device: None,
            backend: "linux",
            detail: serde_json::Value::Null,
        })
    }

    fn read(&mut self, pin: &GpioPin) -> Result<Level, HwError> {
        Err(HwError::Unsupported(format!(
            "pin {}: the gpio backend is not built yet",
            pin.pin
        )))
    }

    fn write(&mut self, pin: &GpioPin, _level: Level) -> Result<(), HwError> {
        Err(HwError::Unsupported(format!(
            "pin {}: the gpio backend is not built yet",
            pin.pin
        )))
    }
}
