//! The hardware tools (HW4, HW6, PO2/PO3): `i2c_scan`, `i2c_read`,
//! `i2c_write`, `spi_transfer`, `gpio_read`, `gpio_write` and
//! `camera_capture`.
//!
//! They close the hole HW4 names: in the reference runtime a write
//! needs `confirm: true` but a *read* is ungated, so an injected agent can
//! read every sensor in the room. Here every call — scan, read or write —
//! passes the gate like any tool:
//!
//! - risk (PO2): a scan is low, any read (I2C, GPIO, the camera) medium,
//!   anything that sends bytes or drives a line (I2C write, SPI transfer,
//!   GPIO write) high. Every assessment is marked hardware, so `readonly`
//!   blocks all of them, scans included (PO3).
//! - the arguments are validated in [`Tool::assess`], against HW2's limits
//!   and the board's pin table, so a bad address or an SFIO pin is refused
//!   by the gate as invalid — nobody is asked to approve a call that cannot
//!   work, and nothing reaches a bus.
//! - the assessment's `subject` (operation, bus, address or pin, byte
//!   counts) lands in the call's `gate.decision` and `tool.call` entries.
//!
//! The buses sit in a [`Gated`] handle that only the gate's permit opens;
//! the board's facts (pin table, default buses) are outside it because
//! judging a call needs them and they touch nothing. Bus I/O is blocking
//! and runs on tokio's blocking pool.

use crate::args::respond;
use pincer_core::gate::{Gated, Permit};
use pincer_core::policy::Risk;
use pincer_core::provider::BoxFuture;
use pincer_core::tool::{Assessment, Tool, ToolError};
use pincer_hw::{
    Board, Hardware, HwError, I2cAddr, Level, ReadLen, SpiData, WriteData, hex_string,
    parse_hex_bytes, parse_spi_device, parse_u8,
};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Which hardware tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HwKind {
    I2cScan,
    I2cRead,
    I2cWrite,
    SpiTransfer,
    GpioRead,
    GpioWrite,
    CameraCapture,
}

impl HwKind {
    pub const ALL: [HwKind; 7] = [
        HwKind::I2cScan,
        HwKind::I2cRead,
        HwKind::I2cWrite,
        HwKind::SpiTransfer,
        HwKind::GpioRead,
        HwKind::GpioWrite,
        HwKind::CameraCapture,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HwKind::I2cScan => "i2c_scan",
            HwKind::I2cRead => "i2c_read",
            HwKind::I2cWrite => "i2c_write",
            HwKind::SpiTransfer => "spi_transfer",
            HwKind::GpioRead => "gpio_read",
            HwKind::GpioWrite => "gpio_write",
            HwKind::CameraCapture => "camera_capture",
        }
    }

    /// PO2: scan low, reads medium, writes high.
    pub fn risk(self) -> Risk {
        match self {
            HwKind::I2cScan => Risk::Low,
            HwKind::I2cRead | HwKind::GpioRead | HwKind::CameraCapture => Risk::Medium,
            HwKind::I2cWrite | HwKind::SpiTransfer | HwKind::GpioWrite => Risk::High,
        }
    }

    fn params(self) -> &'static [&'static str] {
        match self {
            HwKind::I2cScan => &["bus"],
            HwKind::I2cRead => &["address", "register", "length", "bus"],
            HwKind::I2cWrite => &["address", "data", "bus"],
            HwKind::SpiTransfer => &["data", "device"],
            HwKind::GpioRead => &["pin"],
            HwKind::GpioWrite => &["pin", "level"],
            HwKind::CameraCapture => &[],
        }
    }

    fn description(self) -> &'static str {
        match self {
            HwKind::I2cScan => {
                "List the I2C addresses (0x08-0x77) where a device answers. Every hardware call is \
                 checked by policy and recorded."
            }
            HwKind::I2cRead => {
                "Read 1-256 bytes from an I2C device (7-bit address 0x03-0x77), optionally from a \
                 register (write the register byte, then read). Returns the bytes as hex. A read \
                 needs approval under supervised autonomy."
            }
            HwKind::I2cWrite => {
                "Write 1-256 bytes to an I2C device; by convention the first byte is the register. \
                 `data` is hex (\"0x01 0x60\") or an array of byte values. High risk."
            }
            HwKind::SpiTransfer => {
                "Full-duplex SPI transfer of 1-4096 bytes (hex); returns the bytes read back. \
                 High risk: it sends bytes to a device."
            }
            HwKind::GpioRead => {
                "Read the level of a GPIO pin, by its number on the board's 40-pin header."
            }
            HwKind::GpioWrite => "Drive a GPIO pin (header number) high or low. High risk.",
            HwKind::CameraCapture => {
                "Take one still picture with the board's camera; returns where the image was \
                 saved, its size and sha256. Rate limited."
            }
        }
    }

    fn schema(self) -> Value {
        let address = json!({"type": ["string", "integer"], "description": "7-bit I2C address, e.g. \"0x48\""});
        let bus = json!({"type": "integer", "minimum": 0, "maximum": 255, "description": "I2C bus number N of /dev/i2c-N (default: the board's)"});
        let (props, required): (Vec<(&str, Value)>, &[&str]) = match self {
            HwKind::I2cScan => (vec![("bus", bus)], &[]),
            HwKind::I2cRead => (
                vec![
                    ("address", address),
                    (
                        "register",
                        json!({"type": ["string", "integer"], "description": "Register to read from, e.g. \"0x00\""}),
                    ),
                    (
                        "length",
                        json!({"type": "integer", "minimum": 1, "maximum": pincer_hw::MAX_READ, "description": "Bytes to read (default 1)"}),
                    ),
                    ("bus", bus),
                ],
                &["address"],
            ),
            HwKind::I2cWrite => (
                vec![
                    ("address", address),
                    (
                        "data",
                        json!({"type": ["string", "array"], "items": {"type": "integer"}, "description": "Bytes: hex string or array of 0-255"}),
                    ),
                    ("bus", bus),
                ],
                &["address", "data"],
            ),
            HwKind::SpiTransfer => (
                vec![
                    (
                        "data",
                        json!({"type": ["string", "array"], "items": {"type": "integer"}, "description": "Bytes to send: hex string or array of 0-255"}),
                    ),
                    (
                        "device",
                        json!({"type": "string", "description": "spidev bus.chip-select, e.g. \"0.0\" (default: the board's)"}),
                    ),
                ],
                &["data"],
            ),
            HwKind::GpioRead => (
                vec![(
                    "pin",
                    json!({"type": "integer", "description": "Header pin number (1-40)"}),
                )],
                &["pin"],
            ),
            HwKind::GpioWrite => (
                vec![
                    (
                        "pin",
                        json!({"type": "integer", "description": "Header pin number (1-40)"}),
                    ),
                    (
                        "level",
                        json!({"type": ["integer", "string", "boolean"], "description": "1/high or 0/low"}),
                    ),
                ],
                &["pin", "level"],
            ),
            HwKind::CameraCapture => (vec![], &[]),
        };
        crate::args::object_schema(&props, required)
    }
}

/// What may be known about the board without touching it: judging a call
/// needs the pin table and the default buses.
#[derive(Debug, Clone)]
pub struct Facts {
    board: Board,
    sim: bool,
    default_i2c: Option<u8>,
    default_spi: Option<(u8, u8)>,
}

impl Facts {
    pub fn of(hw: &Hardware) -> Facts {
        Facts {
            board: hw.board().clone(),
            sim: hw.sim().is_some(),
            default_i2c: hw.default_i2c_bus(),
            default_spi: hw.default_spi_device(),
        }
    }
}

/// The buses and where the camera saves its pictures.
#[derive(Debug)]
struct Handle {
    hw: Arc<Hardware>,
    camera_dir: PathBuf,
}

/// One validated hardware call.
#[derive(Debug, Clone)]
enum Op {
    Scan {
        bus: Option<u8>,
    },
    Read {
        bus: Option<u8>,
        addr: I2cAddr,
        register: Option<u8>,
        len: ReadLen,
    },
    Write {
        bus: Option<u8>,
        addr: I2cAddr,
        data: WriteData,
    },
    Spi {
        device: Option<(u8, u8)>,
        data: SpiData,
    },
    GpioRead {
        pin: u32,
    },
    GpioWrite {
        pin: u32,
        level: Level,
    },
    Camera,
}

/// A hardware tool; [`hardware_tools`] makes all seven.
#[derive(Debug)]
pub struct HwTool {
    kind: HwKind,
    facts: Arc<Facts>,
    handle: Gated<Arc<Handle>>,
}

/// The seven hardware tools over one board. `camera_dir` is where
/// `camera_capture` saves pictures.
pub fn hardware_tools(hw: Arc<Hardware>, camera_dir: PathBuf) -> Vec<Arc<dyn Tool>> {
    let facts = Arc::new(Facts::of(&hw));
    let handle = Arc::new(Handle { hw, camera_dir });
    HwKind::ALL
        .into_iter()
        .map(|kind| {
            Arc::new(HwTool {
                kind,
                facts: facts.clone(),
                handle: Gated::new(handle.clone()),
            }) as Arc<dyn Tool>
        })
        .collect()
}

fn invalid(field: &'static str, message: impl Into<String>) -> HwError {
    HwError::Invalid {
        field,
        message: message.into(),
    }
}

/// A byte-sized number given as a JSON integer or a string ("0x1f", "31").
fn byte_arg(field: &'static str, v: &Value) -> Result<u8, HwError> {
    match v {
        Value::String(s) => parse_u8(field, s),
        Value::Number(n) => n
            .as_u64()
            .and_then(|n| u8::try_from(n).ok())
            .ok_or_else(|| invalid(field, format!("{n} is not a byte value (0-255)"))),
        other => Err(invalid(
            field,
            format!("expected a number or a string, got {other}"),
        )),
    }
}

fn address_arg(v: &Value) -> Result<I2cAddr, HwError> {
    match v {
        Value::String(s) => I2cAddr::parse(s),
        Value::Number(n) => match n.as_u64().and_then(|n| u8::try_from(n).ok()) {
            Some(b) => I2cAddr::new(b),
            None => Err(invalid(
                "address",
                format!("{n} is not a 7-bit I2C address (0x03-0x77)"),
            )),
        },
        other => Err(invalid(
            "address",
            format!("expected \"0x48\" or a number, got {other}"),
        )),
    }
}

fn bytes_arg(v: &Value) -> Result<Vec<u8>, HwError> {
    match v {
        Value::String(s) => parse_hex_bytes("data", s),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, b)| {
                b.as_u64()
                    .and_then(|n| u8::try_from(n).ok())
                    .ok_or_else(|| invalid("data", format!("item {i} ({b}) is not a byte (0-255)")))
            })
            .collect(),
        other => Err(invalid(
            "data",
            format!("expected a hex string or an array of bytes, got {other}"),
        )),
    }
}

/// A non-negative count given as a JSON integer or a decimal string.
fn count_arg(field: &'static str, v: &Value) -> Result<usize, HwError> {
    let n = match v {
        Value::Number(n) => n.as_u64(),
        // ASCII digits only: `u64::from_str` would also take "+7".
        Value::String(s) => Some(s.trim())
            .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|t| t.parse::<u64>().ok()),
        _ => None,
    };
    n.and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| invalid(field, format!("expected a whole number, got {v}")))
}

fn pin_arg(v: &Value) -> Result<u32, HwError> {
    count_arg("pin", v).and_then(|n| {
        u32::try_from(n).map_err(|_| invalid("pin", format!("{n} is not a header pin number")))
    })
}

fn level_arg(v: &Value) -> Result<Level, HwError> {
    match v {
        Value::Bool(true) => Ok(Level::High),
        Value::Bool(false) => Ok(Level::Low),
        Value::Number(n) => Level::parse(&n.to_string()),
        Value::String(s) => Level::parse(s),
        other => Err(invalid(
            "level",
            format!("expected 0/1 or low/high, got {other}"),
        )),
    }
}

fn device_arg(v: &Value) -> Result<(u8, u8), HwError> {
    let s = v.as_str().ok_or_else(|| {
        invalid(
            "device",
            format!("expected \"bus.cs\" like \"0.0\", got {v}"),
        )
    })?;
    parse_spi_device(s)
        .ok_or_else(|| invalid("device", format!("`{s}` is not \"bus.cs\" like \"0.0\"")))
}

/// Who asks for a hardware operation. An agent may use only the board's
/// default I2C bus and SPI device (or the configured ones): an injected
/// agent must not quick-write every address of a PMIC or HDMI bus under the
/// cover of a low-risk scan. A person at the terminal may name any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    Agent,
    Person,
}

/// One validated hardware call, from a model's arguments or a person's
/// command line: what it touches, how risky it is, and how to run it.
#[derive(Debug, Clone)]
pub struct HwRequest {
    kind: HwKind,
    op: Op,
}

/// Parses `args` for `kind` (JSON as a model sends it; numbers may also be
/// given as strings, as a command line does) and checks HW2's limits and the
/// board's pin table. Nothing touches a bus.
pub fn parse_request(
    kind: HwKind,
    args: &Value,
    facts: &Facts,
    caller: Caller,
) -> Result<HwRequest, HwError> {
    let empty = Map::new();
    let map = match args {
        Value::Object(m) => m,
        Value::Null => &empty,
        other => {
            return Err(invalid(
                "arguments",
                format!("must be a JSON object, got {other}"),
            ));
        }
    };
    let allowed = kind.params();
    if let Some(k) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(invalid(
            "arguments",
            format!(
                "unknown argument `{k}` (this tool takes: {})",
                if allowed.is_empty() {
                    "none".to_string()
                } else {
                    allowed.join(", ")
                }
            ),
        ));
    }
    // JSON null is absent (strict function-calling modes send it).
    let get = |k: &str| map.get(k).filter(|v| !v.is_null());
    let req = |k: &'static str| get(k).ok_or_else(|| invalid(k, "is required"));
    let bus = get("bus").map(|v| byte_arg("bus", v)).transpose()?;
    if facts.sim && bus.is_some_and(|b| b != 0) {
        return Err(invalid("bus", "the simulated board has one I2C bus, bus 0"));
    }
    if caller == Caller::Agent
        && !facts.sim
        && let Some(b) = bus
        && Some(b) != facts.default_i2c
    {
        return Err(invalid(
            "bus",
            match facts.default_i2c {
                Some(d) => {
                    format!("the agent may use only I2C bus {d} ([hardware] i2c_bus), not bus {b}")
                }
                None => "no I2C bus is configured for the agent; set [hardware] i2c_bus".into(),
            },
        ));
    }
    let device = get("device").map(device_arg).transpose()?;
    if let Some((b, c)) = device {
        let allowed = if facts.sim {
            Some((0, 0))
        } else if caller == Caller::Agent {
            facts.default_spi
        } else {
            Some((b, c))
        };
        if allowed != Some((b, c)) {
            return Err(invalid(
                "device",
                match allowed {
                    Some((ab, ac)) if facts.sim => {
                        format!("the simulated board has one SPI device, {ab}.{ac}")
                    }
                    Some((ab, ac)) => format!(
                        "the agent may use only SPI device {ab}.{ac} ([hardware] spi_device), not {b}.{c}"
                    ),
                    None => "no SPI device is configured for the agent; set [hardware] spi_device"
                        .into(),
                },
            ));
        }
    }
    let op = match kind {
        HwKind::I2cScan => Op::Scan { bus },
        HwKind::I2cRead => {
            let len = match get("length") {
                None => 1,
                Some(v) => count_arg("length", v)?,
            };
            Op::Read {
                bus,
                addr: address_arg(req("address")?)?,
                register: get("register")
                    .map(|v| byte_arg("register", v))
                    .transpose()?,
                len: ReadLen::new(len)?,
            }
        }
        HwKind::I2cWrite => Op::Write {
            bus,
            addr: address_arg(req("address")?)?,
            data: WriteData::new(bytes_arg(req("data")?)?)?,
        },
        HwKind::SpiTransfer => Op::Spi {
            device,
            data: SpiData::new(bytes_arg(req("data")?)?)?,
        },
        HwKind::GpioRead => {
            let pin = pin_arg(req("pin")?)?;
            facts.board.gpio_pin(pin)?;
            Op::GpioRead { pin }
        }
        HwKind::GpioWrite => {
            let pin = pin_arg(req("pin")?)?;
            facts.board.gpio_pin(pin)?;
            Op::GpioWrite {
                pin,
                level: level_arg(req("level")?)?,
            }
        }
        HwKind::CameraCapture => Op::Camera,
    };
    Ok(HwRequest { kind, op })
}

/// What a finished hardware call did: `text` for a model or a person,
/// `json` for `--json` and tests.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub text: String,
    pub json: Value,
}

impl Facts {
    fn i2c_name(&self, bus: Option<u8>) -> String {
        match bus.or(self.default_i2c) {
            _ if self.sim => "sim-i2c".to_string(),
            Some(n) => format!("/dev/i2c-{n}"),
            None => "no default I2C bus".to_string(),
        }
    }

    fn spi_name(&self, device: Option<(u8, u8)>) -> String {
        match device.or(self.default_spi) {
            _ if self.sim => "sim-spi".to_string(),
            Some((b, c)) => format!("/dev/spidev{b}.{c}"),
            None => "no default SPI device".to_string(),
        }
    }
}

impl HwRequest {
    pub fn kind(&self) -> HwKind {
        self.kind
    }

    pub fn risk(&self) -> Risk {
        self.kind.risk()
    }

    /// What the call touches, for its audit entries: the operation, bus,
    /// address or pin, and byte counts.
    pub fn subject(&self, facts: &Facts) -> Value {
        let name = self.kind.name();
        match &self.op {
            Op::Scan { bus } => json!({"op": name, "bus": facts.i2c_name(*bus)}),
            Op::Read {
                bus,
                addr,
                register,
                len,
            } => json!({
                "op": name,
                "bus": facts.i2c_name(*bus),
                "address": addr.to_string(),
                "register": register.map(|r| format!("0x{r:02x}")),
                "bytes_read": len.get(),
            }),
            Op::Write { bus, addr, data } => json!({
                "op": name,
                "bus": facts.i2c_name(*bus),
                "address": addr.to_string(),
                "bytes_written": data.bytes().len(),
            }),
            Op::Spi { device, data } => json!({
                "op": name,
                "bus": facts.spi_name(*device),
                "bytes_written": data.bytes().len(),
                "bytes_read": data.bytes().len(),
            }),
            Op::GpioRead { pin } => json!({"op": name, "bus": "gpio", "pin": pin}),
            Op::GpioWrite { pin, level } => {
                json!({"op": name, "bus": "gpio", "pin": pin, "level": level})
            }
            Op::Camera => json!({"op": name, "bus": "camera", "board": facts.board.name}),
        }
    }

    /// One sentence a person can check: what the call does and its class.
    pub fn why(&self, facts: &Facts) -> String {
        let what = match &self.op {
            Op::Scan { bus } => format!("scans {} for devices", facts.i2c_name(*bus)),
            Op::Read {
                bus,
                addr,
                register,
                len,
            } => format!(
                "reads {} byte(s){} from the I2C device at {addr} on {}",
                len.get(),
                register
                    .map(|r| format!(" of register 0x{r:02x}"))
                    .unwrap_or_default(),
                facts.i2c_name(*bus)
            ),
            Op::Write { bus, addr, data } => format!(
                "writes {} byte(s) to the I2C device at {addr} on {}",
                data.bytes().len(),
                facts.i2c_name(*bus)
            ),
            Op::Spi { device, data } => format!(
                "sends {} byte(s) over {}",
                data.bytes().len(),
                facts.spi_name(*device)
            ),
            Op::GpioRead { pin } => format!("reads GPIO header pin {pin}"),
            Op::GpioWrite { pin, level } => {
                format!("drives GPIO header pin {pin} {}", level_name(*level))
            }
            Op::Camera => "takes a picture with the camera".to_string(),
        };
        let class = match self.kind.risk() {
            Risk::Low => "low risk: a scan reads no data",
            Risk::Medium => "medium risk: every hardware read is gated",
            Risk::High => "high risk: it acts on the world",
        };
        format!("{what} ({class}, PO2)")
    }

    /// Runs the call on the board. Blocking: call it off the async
    /// runtime. Only the gate (through [`HwTool`]) and a person's own
    /// command line (`pincer hw`, recorded in the audit trail) call this.
    pub fn run_blocking(
        &self,
        hw: &Hardware,
        facts: &Facts,
        camera_dir: &Path,
    ) -> Result<Outcome, HwError> {
        let name = self.kind.name();
        Ok(match &self.op {
            Op::Scan { bus } => {
                let (info, found) = hw.i2c_scan(*bus)?;
                let list: Vec<String> = found.iter().map(|a| a.to_string()).collect();
                Outcome {
                    text: format!(
                        "{} device(s) answered on {}: {}",
                        found.len(),
                        facts.i2c_name(*bus),
                        if list.is_empty() {
                            "none".to_string()
                        } else {
                            list.join(", ")
                        }
                    ),
                    json: json!({"op": name, "bus": info.name, "device": info.device, "found": list}),
                }
            }
            Op::Read {
                bus,
                addr,
                register,
                len,
            } => {
                let r = hw.i2c_read(*bus, *addr, *register, *len)?;
                let reg = register
                    .map(|r| format!(" register 0x{r:02x}"))
                    .unwrap_or_default();
                let decoded = hw.decode(*addr, *register, &r.data);
                let mut text = format!(
                    "read {} byte(s) from {addr}{reg} on {} (via {}): {}",
                    r.data.len(),
                    facts.i2c_name(*bus),
                    r.path,
                    hex_string(&r.data)
                );
                if let Some(d) = &decoded {
                    text.push_str(&format!(" = {d}"));
                }
                Outcome {
                    text,
                    json: json!({
                        "op": name,
                        "bus": facts.i2c_name(*bus),
                        "address": addr.to_string(),
                        "register": register.map(|r| format!("0x{r:02x}")),
                        "data": hex_string(&r.data),
                        "path": r.path,
                        "decoded": decoded,
                    }),
                }
            }
            Op::Write { bus, addr, data } => {
                let path = hw.i2c_write(*bus, *addr, data)?;
                Outcome {
                    text: format!(
                        "wrote {} byte(s) to {addr} on {} (via {path}): {}",
                        data.bytes().len(),
                        facts.i2c_name(*bus),
                        hex_string(data.bytes())
                    ),
                    json: json!({
                        "op": name,
                        "bus": facts.i2c_name(*bus),
                        "address": addr.to_string(),
                        "data": hex_string(data.bytes()),
                        "path": path,
                    }),
                }
            }
            Op::Spi { device, data } => {
                let rx = hw.spi_transfer(*device, data)?;
                Outcome {
                    text: format!(
                        "sent {} byte(s) over {}, received: {}",
                        data.bytes().len(),
                        facts.spi_name(*device),
                        hex_string(&rx)
                    ),
                    json: json!({
                        "op": name,
                        "bus": facts.spi_name(*device),
                        "sent": hex_string(data.bytes()),
                        "received": hex_string(&rx),
                    }),
                }
            }
            Op::GpioRead { pin } => {
                let (p, level) = hw.gpio_read(*pin)?;
                Outcome {
                    text: format!(
                        "pin {pin} ({}, {} line {}) is {}",
                        p.name(),
                        p.chip(),
                        p.line(),
                        level_name(level)
                    ),
                    json: json!({"op": name, "pin": pin, "gpio": p, "level": level, "value": level.as_u8()}),
                }
            }
            Op::GpioWrite { pin, level } => {
                let p = hw.gpio_write(*pin, *level)?;
                Outcome {
                    text: format!(
                        "pin {pin} ({}, {} line {}) driven {}",
                        p.name(),
                        p.chip(),
                        p.line(),
                        level_name(*level)
                    ),
                    json: json!({"op": name, "pin": pin, "gpio": p, "level": level, "value": level.as_u8()}),
                }
            }
            Op::Camera => {
                let c = hw.camera_capture(camera_dir)?;
                Outcome {
                    text: format!(
                        "captured a {} image: {} ({} bytes, sha256 {})",
                        c.format,
                        c.path.display(),
                        c.bytes,
                        c.sha256
                    ),
                    json: json!({"op": name, "capture": c}),
                }
            }
        })
    }
}

fn level_name(l: Level) -> &'static str {
    match l {
        Level::High => "high (1)",
        Level::Low => "low (0)",
    }
}

fn hw_error(tool: &str, e: &HwError) -> ToolError {
    respond(format!("{tool}: {e}"))
}

impl Tool for HwTool {
    fn name(&self) -> &str {
        self.kind.name()
    }

    fn description(&self) -> &str {
        self.kind.description()
    }

    fn parameters_schema(&self) -> Value {
        self.kind.schema()
    }

    fn assess(&self, args: &Value) -> Assessment {
        let risk = self.kind.risk();
        match parse_request(self.kind, args, &self.facts, Caller::Agent) {
            Ok(r) => Assessment::new(risk, r.why(&self.facts))
                .on_hardware()
                .with_subject(r.subject(&self.facts)),
            Err(e) => Assessment::new(risk, format!("{} with invalid arguments", self.kind.name()))
                .on_hardware()
                .with_subject(json!({"op": self.kind.name(), "invalid": e.to_string()}))
                .with_invalid(format!("{}: {e}", self.kind.name())),
        }
    }

    fn execute<'a>(&'a self, permit: Permit<'a>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let name = self.kind.name();
            // The gate refuses invalid calls; parsing again is the tool's own
            // guarantee, not a second policy.
            let r = parse_request(self.kind, permit.args(), &self.facts, Caller::Agent)
                .map_err(|e| hw_error(name, &e))?;
            let handle = permit.open(&self.handle).clone();
            let facts = self.facts.clone();
            tokio::task::spawn_blocking(move || {
                r.run_blocking(&handle.hw, &facts, &handle.camera_dir)
            })
            .await
            .map_err(|e| ToolError::Fatal(format!("{name}: hardware task failed: {e}")))?
            .map(|o| o.text)
            .map_err(|e| hw_error(name, &e))
        })
    }
}
