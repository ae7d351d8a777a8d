//! Texas Instruments TMP102, register-accurate enough for drivers written
//! against the datasheet (SBOS397).
//!
//! - Pointer register (P1:P0; the other bits are ignored): 0x00
//!   temperature (read-only), 0x01 configuration, 0x02 T_LOW, 0x03 T_HIGH.
//! - Temperature: 12-bit two's complement, left-justified, 0.0625 °C/LSB
//!   (23.5 °C → 0x1780). With EM=1 in the config register it is 13-bit with
//!   bit 0 set (datasheet "extended mode"). Values outside the format
//!   saturate (12-bit: −128…127.9375 °C), like the datasheet's 128 °C → 0x7FF.
//! - Config power-on value 0x60A0 (R1:R0 = 11 → 12-bit, CR = 4 Hz, AL = 1).
//!   R1, R0 and AL are read-only; OS reads 1 in shutdown mode (a one-shot
//!   conversion completes instantly here) and 0 otherwise; AL follows
//!   comparator mode on the fixed temperature: alert while temp ≥ T_HIGH,
//!   AL = alert XOR !POL.
//! - Writes: `[ptr]` sets the pointer; `[ptr, msb, lsb]` writes config/T_LOW/
//!   T_HIGH; a write to 0x00 only moves the pointer (the chip ignores the
//!   data); [ptr, msb] (one data byte) only moves the pointer; bytes after
//!   the second data byte are ignored.
//! - Reads return MSB then LSB of the pointed register. The datasheet
//!   specifies two-byte reads only; longer reads are modelled as the chip
//!   repeating the same register (MSB, LSB, MSB, …), a one-byte read gets
//!   the MSB.

pub const REG_TEMP: u8 = 0x00;
pub const REG_CONFIG: u8 = 0x01;
pub const REG_TLOW: u8 = 0x02;
pub const REG_THIGH: u8 = 0x03;
pub const CONFIG_POWER_ON: u16 = 0x60A0;
const CONFIG_READ_ONLY: u16 = 0x6020; // R1, R0, AL
const CONFIG_OS: u16 = 0x8000;
const CONFIG_SD: u16 = 0x0100;
const CONFIG_POL: u16 = 0x0400;
const CONFIG_EM: u16 = 0x0010;

/// Encodes °C as the temperature register (12-bit normal or 13-bit extended).
pub fn encode(celsius: f64, extended: bool) -> u16 {
    let counts = (celsius / 0.0625).round();
    if extended {
        let c = counts.clamp(-4096.0, 4095.0) as i16;
        (((c << 3) as u16) & 0xFFF8) | 1
    } else {
        let c = counts.clamp(-2048.0, 2047.0) as i16;
        (c << 4) as u16
    }
}

/// Decodes a temperature/limit register to °C.
pub fn decode(raw: u16, extended: bool) -> f64 {
    let shift = if extended { 3 } else { 4 };
    f64::from((raw as i16) >> shift) * 0.0625
}

#[derive(Debug, Clone)]
pub struct Tmp102 {
    pub celsius: f64,
    pointer: u8,
    config: u16,
    t_low: u16,
    t_high: u16,
}

impl Tmp102 {
    pub fn new(celsius: f64) -> Tmp102 {
        Tmp102 {
            celsius,
            pointer: REG_TEMP,
            config: CONFIG_POWER_ON,
            t_low: 0x4B00,
            t_high: 0x5000,
        }
    }

    pub fn pointer(&self) -> u8 {
        self.pointer
    }

    pub fn extended(&self) -> bool {
        self.config & CONFIG_EM != 0
    }

    pub fn register(&self, reg: u8) -> u16 {
        match reg & 0x03 {
            REG_TEMP => encode(self.celsius, self.extended()),
            REG_CONFIG => {
                let mut c = self.config & !(CONFIG_OS | 0x0020);
                if self.config & CONFIG_SD != 0 {
                    c |= CONFIG_OS;
                }
                let alert = self.celsius >= decode(self.t_high, self.extended());
                let pol = self.config & CONFIG_POL != 0;
                if alert == pol {
                    c |= 0x0020;
                }
                c
            }
            REG_TLOW => self.t_low,
            _ => self.t_high,
        }
    }

    pub fn write(&mut self, data: &[u8]) {
        let Some((&ptr, rest)) = data.split_first() else {
            return;
        };
        self.pointer = ptr & 0x03;
        let [msb, lsb, ..] = rest else { return };
        let v = u16::from_be_bytes([*msb, *lsb]);
        match self.pointer {
            REG_CONFIG => {
                self.config = (v & !CONFIG_READ_ONLY) | (CONFIG_POWER_ON & CONFIG_READ_ONLY);
            }
            REG_TLOW => self.t_low = v,
            REG_THIGH => self.t_high = v,
            _ => {} // temperature is read-only
        }
    }

    pub fn read(&mut self, register: Option<u8>, len: usize) -> Vec<u8> {
        if let Some(r) = register {
            self.pointer = r & 0x03;
        }
        let bytes = self.register(self.pointer).to_be_bytes();
        (0..len).map(|i| bytes[i % 2]).collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn datasheet_values() {
        assert_eq!(encode(23.5, false), 0x1780);
        assert_eq!(encode(-25.0, false), 0xE700);
        assert_eq!(encode(0.0625, false), 0x0010);
        assert_eq!(encode(127.9375, false), 0x7FF0);
        assert_eq!(encode(128.0, false), 0x7FF0);
        assert_eq!(encode(-55.0, false), 0xC900);
        assert_eq!(encode(150.0, true), 0x4B01);
        assert_eq!(decode(0x4B00, false), 75.0);
        assert_eq!(decode(0xE700, false), -25.0);
        assert_eq!(decode(0x4B01, true), 150.0);
    }

    #[test]
    fn config_readonly_bits_and_alert() {
        let mut t = Tmp102::new(23.5);
        assert_eq!(t.register(REG_CONFIG), 0x60A0);
        t.write(&[0x01, 0x00, 0x00]);
        assert_eq!(t.register(REG_CONFIG), 0x6020);
        t.write(&[0x03, 0x10, 0x00]); // T_HIGH = 16 °C → alert, AL = 0 with POL = 0
        assert_eq!(t.register(REG_CONFIG) & 0x0020, 0);
    }
}
