//! `pincer hw info|scan|read|write|gpio|spi|camera`: the same validated
//! operations the agent's hardware tools run, for a person at the
//! terminal. People are not gated, but every attempt is recorded (by the
//! runtime): an `hw.op` entry (actor `human:cli`) before the bus is
//! touched, and an `hw.result` entry with the outcome. Bad input exits 2
//! with an error naming the argument, is recorded as `invalid`, and touches
//! no bus.

use crate::Ctx;
use anyhow::Result;
use pincer_core::actor::HUMAN_CLI;
use pincer_core::audit::Audit;
use pincer_core::text::terminal_safe;
use pincer_hw::{Hardware, HwError};
use pincer_runtime::person;
use pincer_tools::hw::HwKind;
use serde_json::{Value, json};
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Subcommand, Debug)]
pub enum HwCmd {
    /// The board, how it was detected, its buses and its pin table.
    Info {
        #[arg(long)]
        json: bool,
    },
    /// Which I2C addresses (0x08-0x77) answer.
    Scan {
        /// I2C bus N of /dev/i2c-N (default: the board's).
        #[arg(long, value_name = "N")]
        bus: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Read bytes from an I2C device, optionally from a register.
    Read {
        /// 7-bit address, e.g. 0x48.
        address: String,
        #[arg(long, value_name = "REG")]
        register: Option<String>,
        /// Bytes to read, 1-256.
        #[arg(long, value_name = "N", default_value = "1")]
        len: String,
        #[arg(long, value_name = "N")]
        bus: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Write bytes (hex) to an I2C device; the first is the register.
    Write {
        address: String,
        /// Bytes as hex: `0x00 0x17 0x80` or `001780`.
        #[arg(required = true, num_args = 1..)]
        data: Vec<String>,
        #[arg(long, value_name = "N")]
        bus: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Read or drive a GPIO pin by its header number.
    #[command(subcommand)]
    Gpio(GpioCmd),
    /// Full-duplex SPI transfer of hex bytes.
    Spi {
        #[arg(required = true, num_args = 1..)]
        data: Vec<String>,
        /// spidev bus.chip-select, e.g. 0.0 (default: the board's).
        #[arg(long, value_name = "B.C")]
        device: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Take one picture (the sim board generates one).
    Camera {
        #[arg(long)]
        json: bool,
    },
}

#[derive(clap::Subcommand, Debug)]
pub enum GpioCmd {
    Read {
        pin: String,
        #[arg(long)]
        json: bool,
    },
    Write {
        pin: String,
        /// 0/1, low/high.
        level: String,
        /// Keep the line driven this long before exiting (the kernel
        /// releases a line when its holder exits).
        #[arg(long, value_name = "MS")]
        hold_ms: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

/// Exit code for bad input (clap's own usage errors use 2 as well).
const EXIT_INVALID: u8 = 2;

fn is_input_error(e: &HwError) -> bool {
    matches!(e, HwError::Invalid { .. } | HwError::Pinmux { .. })
}

pub fn run(ctx: &Ctx, cmd: HwCmd) -> Result<ExitCode> {
    let audit = pincer_runtime::open_audit(&ctx.home)?;
    let hw = pincer_runtime::tools::hardware(&ctx.settings, &ctx.env)?;
    let (kind, args, json_out, hold) = match cmd {
        HwCmd::Info { json } => return info(&audit, &hw, json),
        HwCmd::Scan { bus, json } => (HwKind::I2cScan, obj(&[("bus", bus)]), json, None),
        HwCmd::Read {
            address,
            register,
            len,
            bus,
            json,
        } => (
            HwKind::I2cRead,
            obj(&[
                ("address", Some(address)),
                ("register", register),
                ("length", Some(len)),
                ("bus", bus),
            ]),
            json,
            None,
        ),
        HwCmd::Write {
            address,
            data,
            bus,
            json,
        } => (
            HwKind::I2cWrite,
            obj(&[
                ("address", Some(address)),
                ("data", Some(data.join(" "))),
                ("bus", bus),
            ]),
            json,
            None,
        ),
        HwCmd::Spi { data, device, json } => (
            HwKind::SpiTransfer,
            obj(&[("data", Some(data.join(" "))), ("device", device)]),
            json,
            None,
        ),
        HwCmd::Camera { json } => (HwKind::CameraCapture, json!({}), json, None),
        HwCmd::Gpio(GpioCmd::Read { pin, json }) => {
            (HwKind::GpioRead, obj(&[("pin", Some(pin))]), json, None)
        }
        HwCmd::Gpio(GpioCmd::Write {
            pin,
            level,
            hold_ms,
            json,
        }) => {
            let hold = match hold_ms {
                None => None,
                Some(s) => match s.parse::<u64>() {
                    Ok(ms) if ms <= 3_600_000 && s.bytes().all(|b| b.is_ascii_digit()) => {
                        Some(Duration::from_millis(ms))
                    }
                    _ => {
                        let e = HwError::Invalid {
                            field: "--hold-ms",
                            message: format!("`{s}` is not a number of milliseconds (0-3600000)"),
                        };
                        person::record_invalid(
                            &audit,
                            HUMAN_CLI,
                            HwKind::GpioWrite,
                            &obj(&[("hold_ms", Some(s))]),
                            &e,
                        )?;
                        return fail(HwKind::GpioWrite.name(), &e, json);
                    }
                },
            };
            (
                HwKind::GpioWrite,
                obj(&[("pin", Some(pin)), ("level", Some(level))]),
                json,
                hold,
            )
        }
    };
    let done = person::hw_op(&ctx.home, &audit, &hw, HUMAN_CLI, kind, &args)?;
    let name = done.op;
    let outcome = done.outcome;
    match outcome {
        Ok(o) => {
            if json_out {
                println!("{}", o.json);
            } else {
                println!("{}", o.text);
            }
            if let Some(d) = hold {
                // Said before the wait, so a script can act while it holds.
                println!("holding the line for {} ms", d.as_millis());
                std::io::stdout().flush()?;
                std::thread::sleep(d);
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => fail(name, &e, json_out),
    }
}

fn fail(name: &str, e: &HwError, json_out: bool) -> Result<ExitCode> {
    if json_out {
        println!(
            "{}",
            json!({"op": name, "error": e.to_string(), "field": e.field()})
        );
    }
    eprintln!("error: {name}: {e}");
    Ok(if is_input_error(e) {
        ExitCode::from(EXIT_INVALID)
    } else {
        ExitCode::FAILURE
    })
}

/// A JSON object of the given string arguments (absent ones left out); the
/// request parser reads numbers given as strings, so every field is
/// checked by the same code the agent's tools use.
fn obj(pairs: &[(&str, Option<String>)]) -> Value {
    let map = pairs
        .iter()
        .filter_map(|(k, v)| {
            v.as_ref()
                .map(|v| ((*k).to_string(), Value::from(v.as_str())))
        })
        .collect();
    Value::Object(map)
}

fn info(audit: &Audit, hw: &Hardware, json_out: bool) -> Result<ExitCode> {
    person::record_hw_info(audit, HUMAN_CLI, hw)?;
    let info = hw.info();
    if json_out {
        println!("{info}");
        return Ok(ExitCode::SUCCESS);
    }
    let d = hw.detection();
    println!("board: {}", d.board.name);
    let from = match &d.source {
        pincer_hw::DetectSource::Env { value } => format!("PINCER_BOARD={value}"),
        pincer_hw::DetectSource::Config { value } => format!("[hardware] board = \"{value}\""),
        pincer_hw::DetectSource::DeviceTree { compatible } => {
            format!("the device tree ({})", compatible.join(", "))
        }
        pincer_hw::DetectSource::UnknownDeviceTree { compatible } => format!(
            "an unknown device tree ({}), so the simulated board",
            compatible.join(", ")
        ),
        pincer_hw::DetectSource::NoDeviceTree => {
            "no device tree, so the simulated board".to_string()
        }
    };
    println!("detected from: {}", terminal_safe(&from));
    if let Some(w) = &d.warning {
        println!("warning: {w}");
    }
    match hw.default_i2c_bus() {
        Some(n) => println!("i2c: /dev/i2c-{n}"),
        None if hw.sim().is_some() => println!("i2c: simulated bus"),
        None => println!("i2c: no default bus (set [hardware] i2c_bus)"),
    }
    println!("gpio pins:");
    for p in d.board.pins {
        let what = match &p.function {
            pincer_hw::PinFunction::Gpio { chip, line, name } => {
                format!("{name} ({chip} line {line})")
            }
            pincer_hw::PinFunction::Special(f) => format!("{f} (special function)"),
            pincer_hw::PinFunction::Power(f) => f.to_string(),
        };
        println!("  {:>2}  {what}", p.pin);
    }
    Ok(ExitCode::SUCCESS)
}
