//! `/dev/spidevB.C` through spidev: one full-duplex SPI_IOC_MESSAGE per
//! transfer, at the mode, speed and word size already configured on the
//! device (device tree / a previous user). We do not change them: a wrong
//! mode from an agent could confuse another user of the device.

use std::fs::{File, OpenOptions};
use std::os::fd::AsFd;

use super::ioctl;
use crate::bus::{BusInfo, SpiBus};
use crate::error::HwError;
use crate::validate::SpiData;

/// An open `/dev/spidevB.C`.
#[derive(Debug)]
pub struct LinuxSpi {
    device: String,
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
        let (mode, speed, bits) = ioctl::spi_settings(self.file.as_fd())
            .map_err(|e| HwError::io("SPI_IOC_RD_*", &self.device, e))?;
        Ok(BusInfo {
            name: self.device.trim_start_matches("/dev/").to_string(),
            device: Some(self.device.clone()),
            backend: "linux",
            detail: serde_json::json!({
                "mode": mode & 0x3,
                "mode_bits": format!("0x{mode:x}"),
                "max_speed_hz": speed,
                // 0 means the kernel default of 8.
                "bits_per_word": if bits == 0 { 8 } else { bits },
            }),
        })
    }

    fn transfer(&mut self, tx: &SpiData) -> Result<Vec<u8>, HwError> {
        let mut rx = vec![0u8; tx.bytes().len()];
        ioctl::spi_transfer(self.file.as_fd(), tx.bytes(), &mut rx)
            .map_err(|e| HwError::io("SPI_IOC_MESSAGE", &self.device, e))?;
        Ok(rx)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn missing_device_names_it() {
        let e = LinuxSpi::open(9, 9).unwrap_err();
        assert!(e.to_string().contains("/dev/spidev9.9"), "{e}");
    }
}
