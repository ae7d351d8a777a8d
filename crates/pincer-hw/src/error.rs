//! The one error type of the crate. Each variant is a decision for the
//! caller: `Invalid`/`Pinmux`/`Config` → fix the input (nothing touched a
//! bus), `NoDevice` → nothing there, `Io` → the OS said no, `Unsupported` →
//! this adapter or board cannot do it, `RateLimited` → wait and retry.

use crate::validate::I2cAddr;

#[derive(Debug, thiserror::Error)]
pub enum HwError {
    /// Bad input; nothing was sent to a bus. `field` names the argument
    /// ("address", "length", "data", "register", "pin", "level", "bus", "device").
    #[error("{field}: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
    /// A special-function pin (I2C/UART/SPI...) asked for as GPIO.
    #[error("pin {pin}: pinmux: pin {pin} is {function} on {board}, not a GPIO; {hint}")]
    Pinmux {
        pin: u32,
        function: String,
        board: String,
        hint: String,
    },
    /// Nothing acknowledged at that address (ENXIO/EREMOTEIO/NACK, or nothing in the sim).
    #[error("{bus}: no device answered at {addr}")]
    NoDevice { bus: String, addr: I2cAddr },
    #[error("{op} on {device}: {source}")]
    Io {
        op: &'static str,
        device: String,
        #[source]
        source: std::io::Error,
    },
    /// The adapter/board cannot do this (e.g. a 40-byte register read on an
    /// SMBus-only adapter; SPI on a board with none).
    #[error("{0}")]
    Unsupported(String),
    /// Bad `[hardware]` config; `field` is a dotted path like
    /// `hardware.sim.devices[1].address`.
    #[error("config {field}: {message}")]
    Config { field: String, message: String },
    #[error("camera: rate limited, try again in {retry_after_ms} ms")]
    RateLimited { retry_after_ms: u64 },
}

impl HwError {
    /// The input field the error is about, when it is about one.
    pub fn field(&self) -> Option<&str> {
        match self {
            HwError::Invalid { field, .. } => Some(field),
            HwError::Pinmux { .. } => Some("pin"),
            HwError::Config { field, .. } => Some(field),
            _ => None,
        }
    }

    pub(crate) fn invalid(field: &'static str, message: impl Into<String>) -> HwError {
        HwError::Invalid {
            field,
            message: message.into(),
        }
    }

    pub(crate) fn config(field: impl Into<String>, message: impl Into<String>) -> HwError {
        HwError::Config {
            field: field.into(),
            message: message.into(),
        }
    }

    pub(crate) fn io(
        op: &'static str,
        device: impl Into<String>,
        source: std::io::Error,
    ) -> HwError {
        HwError::Io {
            op,
            device: device.into(),
            source,
        }
    }
}
