//! Linux backends: `/dev/i2c-N` (i2c-dev), `/dev/spidevB.C` (spidev) and
//! GPIO character devices (uAPI v2).

mod gpio;
mod i2c;
// The one module allowed to use unsafe code (ioctls); see its docs.
#[allow(unsafe_code)]
mod ioctl;
mod spi;

pub use gpio::LinuxGpio;
pub use i2c::{LinuxI2c, Probe, ReadPlan, WritePlan, funcs, plan_probe, plan_read, plan_write};
pub use spi::LinuxSpi;
