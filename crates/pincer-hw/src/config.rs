//! The `[hardware]` table of config.toml, parsed strictly from a
//! `toml::Value` the binary hands over (None when the table is absent).
//! Every error names the dotted field, e.g. `hardware.sim.devices[1].address`.
//!
//! ```toml
//! [hardware]
//! board = "auto"               # sim | jetson | rpi | auto
//! i2c_bus = 1                  # N of /dev/i2c-N; default: the board's
//! spi_device = "0.0"           # B.C of /dev/spidevB.C (or [0, 0])
//! camera_min_interval_ms = 2000
//!
//! [hardware.sim]
//! devices = [
//!   { address = "0x48", kind = "tmp102", celsius = 23.5 },
//!   { address = "0x49", kind = "pressure", hpa = 1013.0 },
//!   { address = "0x4a", kind = "humidity", percent = 45.0 },
//!   { address = "0x50", kind = "registers", registers = { "0x00" = "0x12" } },
//! ]
//! gpio = [{ pin = 7, level = 1 }]
//! ```
//! Without a `devices` key the sim board carries the three demo sensors.

use std::collections::BTreeMap;

use toml::Value;

use crate::board::{Board, parse_board_choice};
use crate::error::HwError;
use crate::validate::{I2cAddr, Level, parse_spi_device, parse_u8};

/// The `[hardware]` section as `pincer init` writes it (commented).
pub const EXAMPLE_TOML: &str = r#"# Hardware (I2C, SPI, GPIO, camera). The board is PINCER_BOARD, else `board`
# below, else the device tree (Jetson Orin Nano, Raspberry Pi Zero 2 W); with
# no device tree it is the simulated board, and the agent then gets no
# hardware tools unless the board is named. Every agent call is gated (a
# scan is low risk, a read medium, a write high; readonly blocks all of it)
# and audited; `pincer hw ...` is recorded as human:cli.
#
# [hardware]
# board = "auto"               # auto | sim | jetson | rpi
# i2c_bus = 1                  # /dev/i2c-1 (default: the board's)
# spi_device = "0.0"           # /dev/spidev0.0
# camera_min_interval_ms = 2000
#
# The simulated board; without `devices` it carries a temperature sensor at
# 0x48 (23.5 C), pressure at 0x49 (1013 hPa) and humidity at 0x4A (45 %).
# [hardware.sim]
# devices = [
#   { address = "0x48", kind = "tmp102", celsius = 23.5 },
#   { address = "0x50", kind = "registers", registers = { "0x00" = "0x12" } },
# ]
# gpio = [{ pin = 7, level = 1 }]
"#;

#[derive(Debug, Clone)]
pub struct HardwareConfig {
    /// "sim" | "jetson" | "rpi" | "auto" (default).
    pub board: String,
    /// N of /dev/i2c-N; overrides the board default.
    pub i2c_bus: Option<u8>,
    /// B.C of /dev/spidevB.C; overrides the board default.
    pub spi_device: Option<(u8, u8)>,
    /// Minimum time between two camera captures (default 2000).
    pub camera_min_interval_ms: u64,
    pub sim: SimConfig,
}

impl Default for HardwareConfig {
    fn default() -> Self {
        HardwareConfig {
            board: "auto".to_string(),
            i2c_bus: None,
            spi_device: None,
            camera_min_interval_ms: 2000,
            sim: SimConfig::default(),
        }
    }
}

/// The simulated board's devices and initial GPIO input levels.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    pub devices: Vec<SimDeviceConfig>,
    pub gpio: Vec<SimGpioConfig>,
}

impl Default for SimConfig {
    /// The demo board: tmp102 at 0x48 = 23.5 °C, pressure at 0x49 = 1013 hPa,
    /// humidity at 0x4A = 45 %.
    fn default() -> Self {
        SimConfig {
            devices: demo_devices(),
            gpio: vec![],
        }
    }
}

fn demo_devices() -> Vec<SimDeviceConfig> {
    let dev = |a: u8, model| SimDeviceConfig {
        // The demo addresses are constants inside 0x03-0x77.
        address: I2cAddr::new(a).unwrap_or_else(|_| unreachable!("demo address")),
        model,
    };
    vec![
        dev(0x48, SimModel::Tmp102 { celsius: 23.5 }),
        dev(0x49, SimModel::Pressure { hpa: 1013.0 }),
        dev(0x4A, SimModel::Humidity { percent: 45.0 }),
    ]
}

#[derive(Debug, Clone, PartialEq)]
pub struct SimDeviceConfig {
    pub address: I2cAddr,
    pub model: SimModel,
}

/// Device models of the sim board; see `sim` for their register maps.
#[derive(Debug, Clone, PartialEq)]
pub enum SimModel {
    Tmp102 { celsius: f64 },
    Pressure { hpa: f64 },
    Humidity { percent: f64 },
    Registers { registers: BTreeMap<u8, u8> },
}

impl SimModel {
    pub fn kind(&self) -> &'static str {
        match self {
            SimModel::Tmp102 { .. } => "tmp102",
            SimModel::Pressure { .. } => "pressure",
            SimModel::Humidity { .. } => "humidity",
            SimModel::Registers { .. } => "registers",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimGpioConfig {
    pub pin: u32,
    pub level: Level,
}

impl HardwareConfig {
    /// Parses the `[hardware]` table; None → defaults.
    pub fn from_toml(v: Option<&Value>) -> Result<HardwareConfig, HwError> {
        let mut cfg = HardwareConfig::default();
        let Some(v) = v else { return Ok(cfg) };
        let t = table(v, "hardware")?;
        for (k, v) in t {
            let field = format!("hardware.{k}");
            match k.as_str() {
                "board" => {
                    let s = string(v, &field)?;
                    parse_board_choice(&field, s)?;
                    cfg.board = s.to_string();
                }
                "i2c_bus" => cfg.i2c_bus = Some(small_int(v, &field, 255)? as u8),
                "spi_device" => cfg.spi_device = Some(spi_device(v, &field)?),
                "camera_min_interval_ms" => {
                    let n = integer(v, &field)?;
                    cfg.camera_min_interval_ms = u64::try_from(n)
                        .map_err(|_| HwError::config(&field, "must be 0 or more"))?;
                }
                "sim" => cfg.sim = SimConfig::from_toml(v, &field)?,
                _ => {
                    return Err(unknown_key(
                        &field,
                        "board, i2c_bus, spi_device, camera_min_interval_ms, sim",
                    ));
                }
            }
        }
        Ok(cfg)
    }
}

impl SimConfig {
    /// Parses `[hardware.sim]`; `field` is its dotted path.
    pub fn from_toml(v: &Value, field: &str) -> Result<SimConfig, HwError> {
        let t = table(v, field)?;
        let mut cfg = SimConfig::default();
        for (k, v) in t {
            let f = format!("{field}.{k}");
            match k.as_str() {
                "devices" => {
                    cfg.devices = array(v, &f)?
                        .iter()
                        .enumerate()
                        .map(|(i, d)| device(d, &format!("{f}[{i}]")))
                        .collect::<Result<_, _>>()?;
                }
                "gpio" => {
                    cfg.gpio = array(v, &f)?
                        .iter()
                        .enumerate()
                        .map(|(i, g)| gpio(g, &format!("{f}[{i}]")))
                        .collect::<Result<_, _>>()?;
                }
                _ => return Err(unknown_key(&f, "devices, gpio")),
            }
        }
        cfg.validate(field)?;
        Ok(cfg)
    }

    /// Checks what a hand-built SimConfig could get wrong: duplicate
    /// addresses, GPIO pins that are not GPIO on the sim board, values the
    /// register models cannot hold.
    pub fn validate(&self, field: &str) -> Result<(), HwError> {
        let mut seen = BTreeMap::new();
        for (i, d) in self.devices.iter().enumerate() {
            let f = format!("{field}.devices[{i}]");
            if let Some(j) = seen.insert(d.address, i) {
                return Err(HwError::config(
                    format!("{f}.address"),
                    format!("{} is already used by devices[{j}]", d.address),
                ));
            }
            let (key, v, lo, hi) = match d.model {
                SimModel::Tmp102 { celsius } => ("celsius", celsius, -128.0, 127.9375),
                SimModel::Pressure { hpa } => ("hpa", hpa, 0.0, 6553.5),
                SimModel::Humidity { percent } => ("percent", percent, 0.0, 100.0),
                SimModel::Registers { .. } => continue,
            };
            if !v.is_finite() {
                return Err(HwError::config(
                    format!("{f}.{key}"),
                    format!("must be a finite number, found {v}"),
                ));
            }
            if !(lo..=hi).contains(&v) {
                return Err(HwError::config(
                    format!("{f}.{key}"),
                    format!("{v} is outside {lo}..={hi}"),
                ));
            }
        }
        let board = Board::sim();
        let mut pins = BTreeMap::new();
        for (i, g) in self.gpio.iter().enumerate() {
            let f = format!("{field}.gpio[{i}].pin");
            board
                .gpio_pin(g.pin)
                .map_err(|e| HwError::config(&f, e.to_string()))?;
            if let Some(j) = pins.insert(g.pin, i) {
                return Err(HwError::config(
                    &f,
                    format!("pin {} is already set by gpio[{j}]", g.pin),
                ));
            }
        }
        Ok(())
    }
}

fn device(v: &Value, field: &str) -> Result<SimDeviceConfig, HwError> {
    let t = table(v, field)?;
    let get = |k: &str| t.get(k);
    let address_field = format!("{field}.address");
    let address = match get("address") {
        None => {
            return Err(HwError::config(
                &address_field,
                "missing; write e.g. address = \"0x48\"",
            ));
        }
        Some(Value::String(s)) => I2cAddr::parse(s),
        Some(Value::Integer(n)) => u8::try_from(*n)
            .map_err(|_| HwError::invalid("address", format!("{n} is not a 7-bit address")))
            .and_then(I2cAddr::new),
        Some(other) => {
            return Err(HwError::config(
                &address_field,
                format!(
                    "expected a string like \"0x48\", found {}",
                    other.type_str()
                ),
            ));
        }
    }
    .map_err(|e| HwError::config(&address_field, invalid_message(e)))?;
    let kind_field = format!("{field}.kind");
    let kind = match get("kind") {
        None => {
            return Err(HwError::config(
                &kind_field,
                "missing; one of tmp102, pressure, humidity, registers",
            ));
        }
        Some(k) => string(k, &kind_field)?,
    };
    let (model, allowed): (SimModel, &[&str]) = match kind {
        "tmp102" => (
            SimModel::Tmp102 {
                celsius: number(get("celsius"), &format!("{field}.celsius"), 23.5)?,
            },
            &["celsius"],
        ),
        "pressure" => (
            SimModel::Pressure {
                hpa: number(get("hpa"), &format!("{field}.hpa"), 1013.0)?,
            },
            &["hpa"],
        ),
        "humidity" => (
            SimModel::Humidity {
                percent: number(get("percent"), &format!("{field}.percent"), 45.0)?,
            },
            &["percent"],
        ),
        "registers" => {
            let f = format!("{field}.registers");
            let mut registers = BTreeMap::new();
            if let Some(r) = get("registers") {
                for (k, v) in table(r, &f)? {
                    let rf = format!("{f}.{k}");
                    let reg = parse_u8("register", k)
                        .map_err(|e| HwError::config(&rf, invalid_message(e)))?;
                    let val = match v {
                        Value::String(s) => parse_u8("register", s)
                            .map_err(|e| HwError::config(&rf, invalid_message(e)))?,
                        other => small_int(other, &rf, 255)? as u8,
                    };
                    registers.insert(reg, val);
                }
            }
            (SimModel::Registers { registers }, &["registers"])
        }
        other => {
            return Err(HwError::config(
                &kind_field,
                format!("unknown kind {other:?}; one of tmp102, pressure, humidity, registers"),
            ));
        }
    };
    for k in t.keys() {
        if !["address", "kind"].contains(&k.as_str()) && !allowed.contains(&k.as_str()) {
            return Err(unknown_key(
                &format!("{field}.{k}"),
                &format!("address, kind, {}", allowed.join(", ")),
            ));
        }
    }
    Ok(SimDeviceConfig { address, model })
}

fn gpio(v: &Value, field: &str) -> Result<SimGpioConfig, HwError> {
    let t = table(v, field)?;
    let mut pin = None;
    let mut level = Level::Low;
    for (k, v) in t {
        let f = format!("{field}.{k}");
        match k.as_str() {
            "pin" => pin = Some(small_int(v, &f, 1000)? as u32),
            "level" => {
                level = match v {
                    Value::Integer(n) => Level::parse(&n.to_string()),
                    Value::String(s) => Level::parse(s),
                    Value::Boolean(b) => Ok(Level::from_bool(*b)),
                    other => {
                        return Err(HwError::config(
                            &f,
                            format!("expected 0/1, found {}", other.type_str()),
                        ));
                    }
                }
                .map_err(|e| HwError::config(&f, invalid_message(e)))?;
            }
            _ => return Err(unknown_key(&f, "pin, level")),
        }
    }
    let pin = pin.ok_or_else(|| HwError::config(format!("{field}.pin"), "missing"))?;
    Ok(SimGpioConfig { pin, level })
}

fn invalid_message(e: HwError) -> String {
    match e {
        HwError::Invalid { message, .. } => message,
        other => other.to_string(),
    }
}

fn unknown_key(field: &str, known: &str) -> HwError {
    HwError::config(field, format!("unknown key; known keys: {known}"))
}

fn table<'a>(v: &'a Value, field: &str) -> Result<&'a toml::Table, HwError> {
    v.as_table()
        .ok_or_else(|| HwError::config(field, format!("expected a table, found {}", v.type_str())))
}

fn array<'a>(v: &'a Value, field: &str) -> Result<&'a Vec<Value>, HwError> {
    v.as_array()
        .ok_or_else(|| HwError::config(field, format!("expected an array, found {}", v.type_str())))
}

fn string<'a>(v: &'a Value, field: &str) -> Result<&'a str, HwError> {
    v.as_str()
        .ok_or_else(|| HwError::config(field, format!("expected a string, found {}", v.type_str())))
}

fn integer(v: &Value, field: &str) -> Result<i64, HwError> {
    v.as_integer().ok_or_else(|| {
        HwError::config(
            field,
            format!("expected an integer, found {}", v.type_str()),
        )
    })
}

fn small_int(v: &Value, field: &str, max: i64) -> Result<i64, HwError> {
    let n = integer(v, field)?;
    if (0..=max).contains(&n) {
        Ok(n)
    } else {
        Err(HwError::config(field, format!("{n} is outside 0..={max}")))
    }
}

fn number(v: Option<&Value>, field: &str, default: f64) -> Result<f64, HwError> {
    match v {
        None => Ok(default),
        Some(Value::Float(f)) if f.is_finite() => Ok(*f),
        Some(Value::Float(f)) => Err(HwError::config(
            field,
            format!("must be a finite number, found {f}"),
        )),
        Some(Value::Integer(n)) => Ok(*n as f64),
        Some(other) => Err(HwError::config(
            field,
            format!("expected a number, found {}", other.type_str()),
        )),
    }
}

fn spi_device(v: &Value, field: &str) -> Result<(u8, u8), HwError> {
    let bad = || HwError::config(field, "expected \"B.C\" (as in /dev/spidevB.C) or [B, C]");
    match v {
        Value::String(s) => parse_spi_device(s).ok_or_else(bad),
        Value::Array(a) => match a.as_slice() {
            [b, c] => Ok((
                small_int(b, field, 255)? as u8,
                small_int(c, field, 255)? as u8,
            )),
            _ => Err(bad()),
        },
        _ => Err(bad()),
    }
}
