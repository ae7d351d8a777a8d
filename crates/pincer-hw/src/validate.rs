//! Validated input types (HW2). A bus method only takes these, so a value
//! that reached a bus has been checked: 7-bit addresses in 0x03–0x77,
//! bounded reads and writes, hex that parsed. Errors name the field and
//! nothing is sent anywhere.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::error::HwError;

/// Largest register/plain read, in bytes.
pub const MAX_READ: usize = 256;
/// Largest I2C write, in bytes (register byte included).
pub const MAX_WRITE: usize = 256;
/// Largest SPI transfer, in bytes; spidev's default buffer size is 4096.
pub const MAX_SPI: usize = 4096;

/// A 7-bit I2C address a device may use (0x03–0x77).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct I2cAddr(u8);

impl I2cAddr {
    pub const FIRST: u8 = 0x03;
    pub const LAST: u8 = 0x77;
    /// First address `scan` probes, like i2cdetect (0x03–0x07 are
    /// reserved for HS-mode masters).
    pub const SCAN_FIRST: u8 = 0x08;

    pub fn new(v: u8) -> Result<Self, HwError> {
        if (Self::FIRST..=Self::LAST).contains(&v) {
            return Ok(I2cAddr(v));
        }
        let why = if v < Self::FIRST {
            "0x00-0x02 are reserved by the I2C spec (general call, CBUS, other bus formats)"
        } else if v <= 0x7F {
            "0x78-0x7B introduce 10-bit addresses and 0x7C-0x7F are reserved"
        } else {
            "I2C addresses are 7 bits (at most 0x7F) and 0x78-0x7F are reserved"
        };
        Err(HwError::invalid(
            "address",
            format!("0x{v:02x} is outside 0x03-0x77: {why}"),
        ))
    }

    /// Parses "0x48", "0X48" or decimal "72".
    pub fn parse(s: &str) -> Result<Self, HwError> {
        let n = parse_number("address", s, u32::MAX)?;
        match u8::try_from(n) {
            Ok(v) => Self::new(v),
            Err(_) => Err(HwError::invalid(
                "address",
                format!(
                    "{:?} is outside 0x03-0x77: I2C addresses are 7 bits",
                    s.trim()
                ),
            )),
        }
    }

    pub fn get(self) -> u8 {
        self.0
    }
}

impl fmt::Display for I2cAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:02x}", self.0)
    }
}

impl Serialize for I2cAddr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Parses "0x1f" (hex) or "31" (decimal) into a byte; used for register and
/// bus numbers.
pub fn parse_u8(field: &'static str, s: &str) -> Result<u8, HwError> {
    let n = parse_number(field, s, 0xFF)?;
    Ok(u8::try_from(n).unwrap_or(u8::MAX))
}

/// A byte written in decimal with ASCII digits only (1-3 of them): "0",
/// "255". `u8::from_str` would also take "+7"; this does not.
fn decimal_u8(s: &str) -> Option<u8> {
    if s.is_empty() || s.len() > 3 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Parses "B.C" (as in /dev/spidevB.C) into (bus, chip select): two
/// decimal numbers 0-255 in ASCII digits, no sign, no spaces.
pub fn parse_spi_device(s: &str) -> Option<(u8, u8)> {
    let (b, c) = s.split_once('.')?;
    Some((decimal_u8(b)?, decimal_u8(c)?))
}

/// Hex with a 0x/0X prefix, else decimal; at most `max`. Digits are
/// checked with `char::is_digit` before conversion, so signs ("+72",
/// "0x+48") are refused.
fn parse_number(field: &'static str, s: &str, max: u32) -> Result<u32, HwError> {
    let t = s.trim();
    if t.is_empty() {
        return Err(HwError::invalid(field, "empty; write e.g. 0x48 or 72"));
    }
    let (digits, radix) = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(rest) => (rest, 16),
        None => (t, 10),
    };
    let ok_digits =
        !digits.is_empty() && digits.len() <= 8 && digits.chars().all(|c| c.is_digit(radix));
    let n = if ok_digits {
        u32::from_str_radix(digits, radix).ok()
    } else {
        None
    };
    match n {
        Some(n) if n <= max => Ok(n),
        Some(_) => Err(HwError::invalid(
            field,
            format!("{t:?} is larger than 0x{max:02x}"),
        )),
        None => Err(HwError::invalid(
            field,
            format!("{t:?} is not a number; write hex as 0x48 or decimal as 72"),
        )),
    }
}

/// Bytes to read: 1..=MAX_READ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLen(u16);

impl ReadLen {
    pub fn new(n: usize) -> Result<Self, HwError> {
        if (1..=MAX_READ).contains(&n) {
            // n <= 256 fits a u16.
            Ok(ReadLen(u16::try_from(n).unwrap_or(u16::MAX)))
        } else {
            Err(HwError::invalid(
                "length",
                format!("{n} bytes; a read is 1-{MAX_READ} bytes"),
            ))
        }
    }

    pub fn get(self) -> usize {
        usize::from(self.0)
    }
}

/// Bytes for an I2C write: 1..=MAX_WRITE; by convention `data[0]` is the
/// register/pointer byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteData(Vec<u8>);

impl WriteData {
    pub fn new(v: Vec<u8>) -> Result<Self, HwError> {
        check_len("data", v.len(), MAX_WRITE, "an I2C write")?;
        Ok(WriteData(v))
    }

    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Bytes for a full-duplex SPI transfer: 1..=MAX_SPI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpiData(Vec<u8>);

impl SpiData {
    pub fn new(v: Vec<u8>) -> Result<Self, HwError> {
        check_len("data", v.len(), MAX_SPI, "an SPI transfer")?;
        Ok(SpiData(v))
    }

    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

fn check_len(field: &'static str, n: usize, max: usize, what: &str) -> Result<(), HwError> {
    if (1..=max).contains(&n) {
        Ok(())
    } else {
        Err(HwError::invalid(
            field,
            format!("{n} bytes; {what} carries 1-{max} bytes"),
        ))
    }
}

/// Parses bytes written as hex: tokens separated by spaces/commas, each
/// "0xHH" or "HH" (1–2 hex digits), OR one contiguous even-length string
/// like "0x1780"/"1780". Malformed → Invalid { field, message naming the bad
/// token }. Empty → Invalid.
pub fn parse_hex_bytes(field: &'static str, s: &str) -> Result<Vec<u8>, HwError> {
    let tokens: Vec<&str> = s
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .collect();
    if tokens.is_empty() {
        return Err(HwError::invalid(
            field,
            "no bytes; write hex such as \"17 80\" or \"0x1780\"",
        ));
    }
    let strip = |t: &str| -> String {
        let d = t
            .strip_prefix("0x")
            .or_else(|| t.strip_prefix("0X"))
            .unwrap_or(t);
        d.to_string()
    };
    let bad = |t: &str, why: &str| HwError::invalid(field, format!("bad hex byte {t:?}: {why}"));
    if let [only] = tokens.as_slice() {
        let d = strip(only);
        if d.len() > 2 {
            if !d.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(bad(only, "not hex digits"));
            }
            if d.len() % 2 != 0 {
                return Err(bad(
                    only,
                    "a contiguous hex string needs an even number of digits",
                ));
            }
            return d
                .as_bytes()
                .chunks(2)
                .map(|pair| {
                    std::str::from_utf8(pair)
                        .ok()
                        .and_then(|p| u8::from_str_radix(p, 16).ok())
                        .ok_or_else(|| bad(only, "not hex digits"))
                })
                .collect();
        }
    }
    tokens
        .iter()
        .map(|t| {
            let d = strip(t);
            if d.is_empty() || d.len() > 2 || !d.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(bad(t, "each byte is 1-2 hex digits, optionally after 0x"));
            }
            u8::from_str_radix(&d, 16).map_err(|_| bad(t, "not hex digits"))
        })
        .collect()
}

/// "17 80": lower-case hex bytes separated by spaces (like the addresses, "0x4a").
pub fn hex_string(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 3);
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// A logic level on a GPIO line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Low,
    High,
}

impl Level {
    /// Accepts 0/1/low/high/on/off (any case).
    pub fn parse(s: &str) -> Result<Level, HwError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "0" | "low" | "off" => Ok(Level::Low),
            "1" | "high" | "on" => Ok(Level::High),
            other => Err(HwError::invalid(
                "level",
                format!("{other:?}; use 0/1, low/high or off/on"),
            )),
        }
    }

    pub fn as_u8(self) -> u8 {
        match self {
            Level::Low => 0,
            Level::High => 1,
        }
    }

    pub fn from_bool(high: bool) -> Level {
        if high { Level::High } else { Level::Low }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Low => "low",
            Level::High => "high",
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn address_bounds_and_parse() {
        assert_eq!(I2cAddr::new(0x03).unwrap().get(), 3);
        assert_eq!(I2cAddr::new(0x77).unwrap().get(), 0x77);
        for bad in [0x00, 0x02, 0x78, 0x80, 0xFF] {
            let e = I2cAddr::new(bad).unwrap_err();
            assert_eq!(e.field(), Some("address"));
            assert!(e.to_string().contains("0x03-0x77"), "{e}");
        }
        assert_eq!(I2cAddr::parse("0x48").unwrap().get(), 0x48);
        assert_eq!(I2cAddr::parse("0X4a").unwrap().get(), 0x4A);
        assert_eq!(I2cAddr::parse(" 72 ").unwrap().get(), 72);
        for bad in [
            "", "0x", "zz", "0x1ff", "0x80", "-1", "4 8", "0x4g", "+72", "0x+48", "+0x48",
        ] {
            assert_eq!(
                I2cAddr::parse(bad).unwrap_err().field(),
                Some("address"),
                "{bad}"
            );
        }
        assert_eq!(I2cAddr::new(0x48).unwrap().to_string(), "0x48");
        assert_eq!(
            serde_json::to_string(&I2cAddr::new(0x4A).unwrap()).unwrap(),
            "\"0x4a\""
        );
    }

    #[test]
    fn parse_u8_hex_and_decimal() {
        assert_eq!(parse_u8("register", "0x1f").unwrap(), 0x1F);
        assert_eq!(parse_u8("register", "255").unwrap(), 255);
        assert_eq!(
            parse_u8("register", "256").unwrap_err().field(),
            Some("register")
        );
        assert_eq!(parse_u8("bus", "x").unwrap_err().field(), Some("bus"));
        for signed in ["+1", "-1", "0x+1f", "+0x1f", "\u{ff11}"] {
            assert!(parse_u8("register", signed).is_err(), "{signed}");
        }
    }

    #[test]
    fn spi_devices_are_digits_only() {
        assert_eq!(parse_spi_device("0.0"), Some((0, 0)));
        assert_eq!(parse_spi_device("250.1"), Some((250, 1)));
        assert_eq!(parse_spi_device("255.255"), Some((255, 255)));
        for bad in [
            "+0.+0",
            "+0.0",
            "0.+1",
            "-0.0",
            "0",
            "0.",
            ".0",
            "0.0.0",
            " 0.0",
            "0 .0",
            "256.0",
            "0x1.0",
            "0.\u{0661}",
            "0000.0",
        ] {
            assert_eq!(parse_spi_device(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn hex_bytes() {
        assert_eq!(parse_hex_bytes("data", "17 80").unwrap(), vec![0x17, 0x80]);
        assert_eq!(
            parse_hex_bytes("data", "0x17,0x80").unwrap(),
            vec![0x17, 0x80]
        );
        assert_eq!(parse_hex_bytes("data", "0x1780").unwrap(), vec![0x17, 0x80]);
        assert_eq!(parse_hex_bytes("data", "1780").unwrap(), vec![0x17, 0x80]);
        assert_eq!(parse_hex_bytes("data", "f").unwrap(), vec![0x0F]);
        assert_eq!(parse_hex_bytes("data", "1 2 3").unwrap(), vec![1, 2, 3]);
        for (bad, token) in [
            ("0xZZ", "0xZZ"),
            ("1 2 3g", "3g"),
            ("178", "178"),
            ("0x", "0x"),
        ] {
            let e = parse_hex_bytes("data", bad).unwrap_err();
            assert_eq!(e.field(), Some("data"));
            assert!(e.to_string().contains(token), "{e}");
        }
        assert!(parse_hex_bytes("data", "  , ").is_err());
        assert_eq!(hex_string(&[0x17, 0x80]), "17 80");
        assert_eq!(hex_string(&[]), "");
    }

    #[test]
    fn lengths() {
        assert!(ReadLen::new(0).is_err());
        assert!(ReadLen::new(257).is_err());
        assert_eq!(ReadLen::new(256).unwrap().get(), 256);
        assert!(WriteData::new(vec![]).is_err());
        assert!(WriteData::new(vec![0; 257]).is_err());
        assert!(SpiData::new(vec![0; 4097]).is_err());
        assert_eq!(SpiData::new(vec![0; 4096]).unwrap().bytes().len(), 4096);
    }

    #[test]
    fn levels() {
        for (s, l) in [
            ("0", Level::Low),
            ("HIGH", Level::High),
            ("on", Level::High),
            ("off", Level::Low),
        ] {
            assert_eq!(Level::parse(s).unwrap(), l);
        }
        assert_eq!(Level::parse("2").unwrap_err().field(), Some("level"));
        assert_eq!(Level::High.as_u8(), 1);
        assert_eq!(serde_json::to_string(&Level::Low).unwrap(), "\"low\"");
    }
}
