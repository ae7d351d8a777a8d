//! Linux backends: `/dev/i2c-N` (i2c-dev), `/dev/spidevB.C` (spidev) and
//! GPIO character devices (uAPI v2).

mod gpio;
mod i2c;
mod spi;

pub use gpio::LinuxGpio;
pub use i2c::LinuxI2c;
pub use spi::LinuxSpi;
