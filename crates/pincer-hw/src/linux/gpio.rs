//! GPIO through the Linux GPIO character device (uAPI v2), via `gpiocdev`
//! (pure Rust, maintained, no libgpiod; built with only `uapi_v2`). The
//! deprecated sysfs interface is not used.
//!
//! A pin's chip is a gpiochip *label* ("pinctrl-bcm2835",
//! "tegra234-gpio"), resolved by scanning /dev/gpiochip*, or a literal
//! "/dev/gpiochipN" path. Reads request the line as-is (no direction, so
//! an output stays an output and keeps its level), read it and release it. Writes request the line as an output with the value and
//! keep the request inside this `LinuxGpio`, so the level stays driven
//! while the object lives (releasing a line lets the kernel reset it); a
//! read of a held output returns the driven value instead of re-requesting
//! the line (which the kernel would refuse with EBUSY).

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use gpiocdev::Request;
use gpiocdev::line::Value;

use crate::board::GpioPin;
use crate::bus::{BusInfo, Gpio};
use crate::error::HwError;
use crate::validate::Level;

const CONSUMER: &str = "pincer";

#[derive(Debug)]
struct Held {
    request: Request,
    chip: PathBuf,
    line: u32,
    level: Level,
}

/// GPIO lines on `/dev/gpiochip*`; holds the lines it drives.
#[derive(Debug, Default)]
pub struct LinuxGpio {
    held: HashMap<u32, Held>,
}

fn os(e: gpiocdev::Error) -> io::Error {
    io::Error::other(e.to_string())
}

fn value(level: Level) -> Value {
    match level {
        Level::Low => Value::Inactive,
        Level::High => Value::Active,
    }
}

/// (path, label, lines) of every gpiochip.
fn chips() -> Result<Vec<(PathBuf, String, u32)>, HwError> {
    let paths =
        gpiocdev::chip::chips().map_err(|e| HwError::io("list", "/dev/gpiochip*", os(e)))?;
    Ok(paths
        .into_iter()
        .filter_map(|p| {
            let info = gpiocdev::chip::Chip::from_path(&p).ok()?.info().ok()?;
            Some((p, info.label, info.num_lines))
        })
        .collect())
}

/// The request a read makes: the line as-is, with no direction, so the
/// kernel leaves an output an output (at its level) and an input an input.
/// Requesting it as an input would turn a line someone else set as an
/// output into an input: a read that changes the hardware.
fn read_request(chip: &Path, line: u32) -> gpiocdev::request::Builder {
    let mut b = Request::builder();
    b.on_chip(chip)
        .with_consumer(CONSUMER)
        .with_line(line)
        .as_is();
    b
}

impl LinuxGpio {
    pub fn new() -> LinuxGpio {
        LinuxGpio::default()
    }

    /// The /dev path of a chip given by label or path.
    pub fn resolve_chip(chip: &str) -> Result<PathBuf, HwError> {
        if chip.starts_with("/dev/") {
            return Ok(PathBuf::from(chip));
        }
        let all = chips()?;
        if let Some((p, _, _)) = all.iter().find(|(_, label, _)| label == chip) {
            return Ok(p.clone());
        }
        let found: Vec<String> = all
            .iter()
            .map(|(p, l, _)| format!("{} ({l})", p.display()))
            .collect();
        Err(HwError::io(
            "find gpiochip",
            chip,
            io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "no /dev/gpiochip* is labelled {chip:?}; found: {}",
                    if found.is_empty() {
                        "none".to_string()
                    } else {
                        found.join(", ")
                    }
                ),
            ),
        ))
    }

    /// Header pins currently driven by this object.
    pub fn held_pins(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.held.keys().copied().collect();
        v.sort_unstable();
        v
    }
}

impl Gpio for LinuxGpio {
    fn info(&mut self) -> Result<BusInfo, HwError> {
        let chips: Vec<serde_json::Value> = chips()?
            .into_iter()
            .map(|(p, label, lines)| serde_json::json!({"path": p, "label": label, "lines": lines}))
            .collect();
        let held: Vec<serde_json::Value> = self
            .held_pins()
            .iter()
            .filter_map(|p| self.held.get(p).map(|h| (p, h)))
            .map(|(p, h)| serde_json::json!({"pin": p, "chip": h.chip, "line": h.line, "level": h.level}))
            .collect();
        Ok(BusInfo {
            name: "gpio".to_string(),
            device: None,
            backend: "linux",
            detail: serde_json::json!({ "chips": chips, "held_outputs": held }),
        })
    }

    fn read(&mut self, pin: &GpioPin) -> Result<Level, HwError> {
        if let Some(h) = self.held.get(&pin.pin()) {
            return Ok(h.level);
        }
        let chip = Self::resolve_chip(pin.chip())?;
        let device = format!("{}:{}", chip.display(), pin.line());
        let req = read_request(&chip, pin.line())
            .request()
            .map_err(|e| HwError::io("request line", &device, os(e)))?;
        let v = req
            .value(pin.line())
            .map_err(|e| HwError::io("read line", &device, os(e)))?;
        Ok(Level::from_bool(v == Value::Active))
    }

    fn write(&mut self, pin: &GpioPin, level: Level) -> Result<(), HwError> {
        if let Some(h) = self.held.get_mut(&pin.pin()) {
            h.request.set_value(h.line, value(level)).map_err(|e| {
                HwError::io(
                    "set line",
                    format!("{}:{}", h.chip.display(), h.line),
                    os(e),
                )
            })?;
            h.level = level;
            return Ok(());
        }
        let chip = Self::resolve_chip(pin.chip())?;
        let device = format!("{}:{}", chip.display(), pin.line());
        let request = Request::builder()
            .on_chip(&chip)
            .with_consumer(CONSUMER)
            .with_line(pin.line())
            .as_output(value(level))
            .request()
            .map_err(|e| HwError::io("request output line", &device, os(e)))?;
        self.held.insert(
            pin.pin(),
            Held {
                request,
                chip,
                line: pin.line(),
                level,
            },
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn unknown_label_is_a_clear_error() {
        let e = LinuxGpio::resolve_chip("no-such-chip-label").unwrap_err();
        assert!(e.to_string().contains("no-such-chip-label"), "{e}");
        assert_eq!(
            LinuxGpio::resolve_chip("/dev/gpiochip3").unwrap(),
            PathBuf::from("/dev/gpiochip3")
        );
    }

    #[test]
    fn reads_leave_the_direction_alone() {
        let b = read_request(Path::new("/dev/gpiochip0"), 17);
        let cfg = b.config();
        assert_eq!(cfg.lines().as_slice(), &[17]);
        let line = cfg.line_config(17).unwrap();
        // None = as-is: the kernel keeps the line's current direction.
        assert_eq!(line.direction, None);
        assert_eq!(line.value, None);
    }

    #[test]
    fn read_of_missing_chip_fails_without_panicking() {
        let mut g = LinuxGpio::new();
        let pin = GpioPin::new(7, "GPIO4", "/dev/gpiochip-missing", 4);
        assert!(matches!(g.read(&pin), Err(HwError::Io { .. })));
        assert!(g.write(&pin, Level::High).is_err());
        assert!(g.held_pins().is_empty());
    }
}
