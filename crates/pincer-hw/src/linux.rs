//! Linux backends: `/dev/i2c-N` (i2c-dev), `/dev/spidevB.C` (spidev) and
//! GPIO character devices (uAPI v2).
//!
//! Crate choices: i2c-dev and spidev go through our own `ioctl` module on
//! `rustix::ioctl` (see its docs for why not `i2cdev`/`spidev`); GPIO uses
//! `gpiocdev` (see `gpio`). Nothing here is opened until an operation needs
//! it, and each handle is closed when dropped, except driven GPIO lines,
//! which `LinuxGpio` holds.

mod gpio;
mod i2c;
// The one module allowed to use unsafe code (ioctls); see its docs.
#[allow(unsafe_code)]
mod ioctl;
mod spi;

pub use gpio::LinuxGpio;
pub use i2c::{LinuxI2c, Probe, ReadPlan, WritePlan, funcs, plan_probe, plan_read, plan_write};
pub use spi::LinuxSpi;
