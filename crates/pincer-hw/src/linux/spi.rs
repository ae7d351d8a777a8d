//! `/dev/spidevB.C` through spidev.

use std::fs::{File, OpenOptions};

use crate::bus::{BusInfo, SpiBus};
use crate::error::HwError;
use crate::validate::SpiData;

/// An open `/dev/spidevB.C`.
#[derive(Debug)]
pub struct LinuxSpi {
    device: String,
    #[allow(dead_code)]
    file: File,
}

impl LinuxSpi {
    pub fn open(bus: u8, chip_select: u8) -> Result<LinuxSpi, HwError> {
        let device = format!("/dev/spidev{bus}.{chip_select}");
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&device)
            .map_err(|e| HwError::io("open", &device, e))?;
        Ok(LinuxSpi { device, file })
    }
}

impl SpiBus for LinuxSpi {
    fn info(&mut self) -> Result<BusInfo, HwError> {
        Ok(BusInfo {
            name: self.device.trim_start_matches("/dev/").to_string(),
            device: Some(self.device.clone()),
            backend: "linux",
            detail: serde_json::Value::Null,
        })
    }

    fn transfer(&mut self, _tx: &SpiData) -> Result<Vec<u8>, HwError> {
        Err(HwError::Unsupported(format!(
            "{}: the spidev backend is not built yet",
            self.device
        )))
    }
}
