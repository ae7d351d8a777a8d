//! The simulated board: in-memory I2C devices, an SPI loopback, GPIO
//! levels and a camera, all deterministic, recording every transaction
//! (failed ones too) so tests can assert on what reached the "bus".
//!
//! Device models (all answer on the one bus "sim-i2c", bus 0):
//! - `tmp102`: see [`tmp102`], register-accurate.
//! - `pressure`: a read-only register file with an auto-incrementing
//!   pointer: 0x00–0x01 pressure, big-endian u16 in 0.1 hPa (1013.0 hPa →
//!   0x27 0x92); 0x0F ID = 0x50 ('P'). Other registers read 0xFF.
//! - `humidity`: the same shape: 0x00–0x01 relative humidity, big-endian
//!   u16 in 0.01 % (45 % → 0x11 0x94); 0x0F ID = 0x48 ('H').
//! - `registers`: a writable register file from config; a write
//!   [reg, d0, d1…] stores d0 at reg, d1 at reg+1…; reads auto-increment
//!   (wrapping at 0xFF); registers not in the map read 0xFF.
//!
//! A read with no register reads from the device's current pointer (the
//! last register written or read, advanced by auto-increment on register
//! files; TMP102 pointers do not advance).

pub mod tmp102;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;

use crate::board::{Board, GpioPin};
use crate::bus::{BusInfo, Gpio, I2cBus, I2cRead, SpiBus, TransferPath};
use crate::config::{SimConfig, SimModel};
use crate::error::HwError;
use crate::validate::{I2cAddr, Level, ReadLen, SpiData, WriteData};

use tmp102::Tmp102;

/// The sim's one I2C bus.
pub const SIM_I2C_BUS: &str = "sim-i2c";

/// One bus operation on the sim, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum SimTransaction {
    I2cScan,
    I2cRead {
        addr: u8,
        register: Option<u8>,
        len: usize,
    },
    I2cWrite {
        addr: u8,
        data: Vec<u8>,
    },
    SpiTransfer {
        len: usize,
    },
    GpioRead {
        pin: u32,
    },
    GpioWrite {
        pin: u32,
        level: Level,
    },
    CameraCapture,
}

#[derive(Debug, Clone)]
enum Device {
    Tmp102(Tmp102),
    /// A register file; `writable` false for the sensor models.
    Regs {
        kind: &'static str,
        regs: BTreeMap<u8, u8>,
        pointer: u8,
        writable: bool,
    },
}

impl Device {
    fn from_model(m: &SimModel) -> Device {
        let sensor = |kind, value: u16, id: u8| Device::Regs {
            kind,
            regs: BTreeMap::from([
                (0x00, value.to_be_bytes()[0]),
                (0x01, value.to_be_bytes()[1]),
                (0x0F, id),
            ]),
            pointer: 0,
            writable: false,
        };
        match m {
            SimModel::Tmp102 { celsius } => Device::Tmp102(Tmp102::new(*celsius)),
            SimModel::Pressure { hpa } => sensor("pressure", (hpa * 10.0).round() as u16, 0x50),
            SimModel::Humidity { percent } => {
                sensor("humidity", (percent * 100.0).round() as u16, 0x48)
            }
            SimModel::Registers { registers } => Device::Regs {
                kind: "registers",
                regs: registers.clone(),
                pointer: 0,
                writable: true,
            },
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Device::Tmp102(_) => "tmp102",
            Device::Regs { kind, .. } => kind,
        }
    }

    fn read(&mut self, register: Option<u8>, len: usize) -> Vec<u8> {
        match self {
            Device::Tmp102(t) => t.read(register, len),
            Device::Regs { regs, pointer, .. } => {
                if let Some(r) = register {
                    *pointer = r;
                }
                (0..len)
                    .map(|_| {
                        let v = regs.get(pointer).copied().unwrap_or(0xFF);
                        *pointer = pointer.wrapping_add(1);
                        v
                    })
                    .collect()
            }
        }
    }

    fn write(&mut self, data: &[u8]) {
        match self {
            Device::Tmp102(t) => t.write(data),
            Device::Regs {
                regs,
                pointer,
                writable,
                ..
            } => {
                let Some((&reg, rest)) = data.split_first() else {
                    return;
                };
                *pointer = reg;
                for b in rest {
                    if *writable {
                        regs.insert(*pointer, *b);
                    }
                    *pointer = pointer.wrapping_add(1);
                }
            }
        }
    }

    fn pointer(&self) -> u8 {
        match self {
            Device::Tmp102(t) => t.pointer(),
            Device::Regs { pointer, .. } => *pointer,
        }
    }
}

#[derive(Debug)]
struct State {
    devices: BTreeMap<I2cAddr, Device>,
    /// The register the last read at each address started at: the
    /// device's pointer *before* the read advanced it, for `decode`.
    read_start: BTreeMap<I2cAddr, u8>,
    gpio: BTreeMap<u32, Level>,
    transactions: Vec<SimTransaction>,
}

/// Shared, cloneable handle on the simulated board's state. Deterministic.
/// Records every bus transaction (also failed ones, e.g. a read at an empty
/// address) in order.
#[derive(Debug, Clone)]
pub struct SimBoard {
    state: Arc<Mutex<State>>,
}

impl SimBoard {
    pub fn new(cfg: &SimConfig) -> Result<SimBoard, HwError> {
        cfg.validate("hardware.sim")?;
        let devices = cfg
            .devices
            .iter()
            .map(|d| (d.address, Device::from_model(&d.model)))
            .collect();
        let gpio = cfg.gpio.iter().map(|g| (g.pin, g.level)).collect();
        Ok(SimBoard {
            state: Arc::new(Mutex::new(State {
                devices,
                read_start: BTreeMap::new(),
                gpio,
                transactions: Vec::new(),
            })),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the state half-updated
        // in a way that matters to a simulation; keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn record(&self, t: SimTransaction) {
        self.lock().transactions.push(t);
    }

    /// Every transaction so far, in order.
    pub fn transactions(&self) -> Vec<SimTransaction> {
        self.lock().transactions.clone()
    }

    /// Forgets the recorded transactions (state stays).
    pub fn clear_transactions(&self) {
        self.lock().transactions.clear();
    }

    pub fn i2c(&self) -> impl I2cBus + use<> {
        SimI2c {
            board: self.clone(),
        }
    }

    /// A loopback: rx = tx.
    pub fn spi(&self) -> impl SpiBus + use<> {
        SimSpi {
            board: self.clone(),
        }
    }

    pub fn gpio(&self) -> impl Gpio + use<> {
        SimGpio {
            board: self.clone(),
        }
    }

    /// Current level of a sim pin (Low unless configured or written).
    pub fn level(&self, pin: u32) -> Level {
        self.lock().gpio.get(&pin).copied().unwrap_or(Level::Low)
    }

    /// Sets a sim input level, as a test harness would.
    pub fn set_level(&self, pin: u32, level: Level) {
        self.lock().gpio.insert(pin, level);
    }

    /// Changes a TMP102's temperature; false when no TMP102 is at `addr`.
    pub fn set_celsius(&self, addr: I2cAddr, celsius: f64) -> bool {
        match self.lock().devices.get_mut(&addr) {
            Some(Device::Tmp102(t)) => {
                t.celsius = celsius;
                true
            }
            _ => false,
        }
    }

    /// Decodes a reading for models the board knows: Some("23.5 °C") for a
    /// 2-byte read of register 0x00 at the tmp102 (also T_LOW/T_HIGH),
    /// Some("1013 hPa") / Some("45 %") for 2-byte reads of register 0x00 at
    /// pressure/humidity; None otherwise. `register: None` decodes by the
    /// register the last read at `addr` started at (the pointer before the
    /// read auto-incremented it), or the current pointer if a write came
    /// since.
    pub fn decode(&self, addr: I2cAddr, register: Option<u8>, data: &[u8]) -> Option<String> {
        let st = self.lock();
        let dev = st.devices.get(&addr)?;
        let reg = register
            .or_else(|| st.read_start.get(&addr).copied())
            .unwrap_or_else(|| dev.pointer());
        let [msb, lsb] = data else { return None };
        let raw = u16::from_be_bytes([*msb, *lsb]);
        match dev {
            Device::Tmp102(t) => {
                let c = tmp102::decode(raw, t.extended());
                match reg & 0x03 {
                    tmp102::REG_TEMP => Some(format!("{} °C", fmt_num(c))),
                    tmp102::REG_TLOW => Some(format!("T_LOW {} °C", fmt_num(c))),
                    tmp102::REG_THIGH => Some(format!("T_HIGH {} °C", fmt_num(c))),
                    _ => None,
                }
            }
            Device::Regs { kind, .. } if reg == 0 => match *kind {
                "pressure" => Some(format!("{} hPa", fmt_num(f64::from(raw) / 10.0))),
                "humidity" => Some(format!("{} %", fmt_num(f64::from(raw) / 100.0))),
                _ => None,
            },
            Device::Regs { .. } => None,
        }
    }

    fn info_detail(&self) -> serde_json::Value {
        let st = self.lock();
        let devices: Vec<serde_json::Value> = st
            .devices
            .iter()
            .map(|(a, d)| serde_json::json!({ "address": a, "kind": d.kind() }))
            .collect();
        serde_json::json!({ "devices": devices })
    }
}

/// Shortest decimal form: 23.5, 1013, 45, -0.0625.
fn fmt_num(v: f64) -> String {
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// The sim's I2C bus.
#[derive(Debug)]
pub struct SimI2c {
    board: SimBoard,
}

impl I2cBus for SimI2c {
    fn info(&mut self) -> Result<BusInfo, HwError> {
        Ok(BusInfo {
            name: SIM_I2C_BUS.to_string(),
            device: None,
            backend: "sim",
            detail: self.board.info_detail(),
        })
    }

    fn scan(&mut self) -> Result<Vec<I2cAddr>, HwError> {
        let mut st = self.board.lock();
        st.transactions.push(SimTransaction::I2cScan);
        Ok(st
            .devices
            .keys()
            .copied()
            .filter(|a| a.get() >= I2cAddr::SCAN_FIRST)
            .collect())
    }

    fn read(
        &mut self,
        addr: I2cAddr,
        register: Option<u8>,
        len: ReadLen,
    ) -> Result<I2cRead, HwError> {
        let mut st = self.board.lock();
        st.transactions.push(SimTransaction::I2cRead {
            addr: addr.get(),
            register,
            len: len.get(),
        });
        let dev = st.devices.get_mut(&addr).ok_or_else(|| HwError::NoDevice {
            bus: SIM_I2C_BUS.to_string(),
            addr,
        })?;
        let start = register.unwrap_or_else(|| dev.pointer());
        let data = dev.read(register, len.get());
        st.read_start.insert(addr, start);
        Ok(I2cRead {
            data,
            path: TransferPath::Sim,
        })
    }

    fn write(&mut self, addr: I2cAddr, data: &WriteData) -> Result<TransferPath, HwError> {
        let mut st = self.board.lock();
        st.transactions.push(SimTransaction::I2cWrite {
            addr: addr.get(),
            data: data.bytes().to_vec(),
        });
        let dev = st.devices.get_mut(&addr).ok_or_else(|| HwError::NoDevice {
            bus: SIM_I2C_BUS.to_string(),
            addr,
        })?;
        dev.write(data.bytes());
        st.read_start.remove(&addr);
        Ok(TransferPath::Sim)
    }
}

/// The sim's SPI device: a loopback (MISO wired to MOSI).
#[derive(Debug)]
pub struct SimSpi {
    board: SimBoard,
}

impl SpiBus for SimSpi {
    fn info(&mut self) -> Result<BusInfo, HwError> {
        Ok(BusInfo {
            name: "sim-spi".to_string(),
            device: None,
            backend: "sim",
            detail: serde_json::json!({ "loopback": true }),
        })
    }

    fn transfer(&mut self, tx: &SpiData) -> Result<Vec<u8>, HwError> {
        self.board.record(SimTransaction::SpiTransfer {
            len: tx.bytes().len(),
        });
        Ok(tx.bytes().to_vec())
    }
}

/// The sim's GPIO lines: inputs read their configured level (Low by
/// default), outputs remember the last write.
#[derive(Debug)]
pub struct SimGpio {
    board: SimBoard,
}

impl SimGpio {
    fn check(pin: &GpioPin) -> Result<(), HwError> {
        // A GpioPin comes from some board's table, not necessarily the
        // sim's (a Pi pin handed to the sim): check it is the sim's.
        let ok = Board::sim().gpio_pin(pin.pin()).is_ok_and(|p| p == *pin);
        if ok {
            Ok(())
        } else {
            Err(HwError::invalid(
                "pin",
                format!(
                    "pin {} ({}:{}) is not a GPIO of the sim board",
                    pin.pin(),
                    pin.chip(),
                    pin.line()
                ),
            ))
        }
    }
}

impl Gpio for SimGpio {
    fn info(&mut self) -> Result<BusInfo, HwError> {
        Ok(BusInfo {
            name: "sim-gpio".to_string(),
            device: None,
            backend: "sim",
            detail: serde_json::json!({ "chip": "sim", "pins": Board::sim().gpio_pins() }),
        })
    }

    fn read(&mut self, pin: &GpioPin) -> Result<Level, HwError> {
        Self::check(pin)?;
        let mut st = self.board.lock();
        st.transactions
            .push(SimTransaction::GpioRead { pin: pin.pin() });
        Ok(st.gpio.get(&pin.pin()).copied().unwrap_or(Level::Low))
    }

    fn write(&mut self, pin: &GpioPin, level: Level) -> Result<(), HwError> {
        Self::check(pin)?;
        let mut st = self.board.lock();
        st.transactions.push(SimTransaction::GpioWrite {
            pin: pin.pin(),
            level,
        });
        st.gpio.insert(pin.pin(), level);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn fmt_num_is_short() {
        assert_eq!(fmt_num(23.5), "23.5");
        assert_eq!(fmt_num(1013.0), "1013");
        assert_eq!(fmt_num(-0.0625), "-0.0625");
        assert_eq!(fmt_num(0.0), "0");
    }

    #[test]
    fn demo_board_reads() {
        let b = SimBoard::new(&SimConfig::default()).unwrap();
        let mut i2c = b.i2c();
        let a = I2cAddr::new(0x49).unwrap();
        let r = i2c.read(a, Some(0), ReadLen::new(2).unwrap()).unwrap();
        assert_eq!(r.data, vec![0x27, 0x92]);
        assert_eq!(b.decode(a, Some(0), &r.data).as_deref(), Some("1013 hPa"));
    }

    #[test]
    fn sim_gpio_takes_only_sim_pins() {
        let b = SimBoard::new(&SimConfig::default()).unwrap();
        let mut g = b.gpio();
        let sim7 = Board::sim().gpio_pin(7).unwrap();
        assert_eq!(g.read(&sim7).unwrap(), Level::Low);
        // Pin 7 of the Pi is the same header pin on another chip.
        let pi7 = Board::rpi_zero_2w().gpio_pin(7).unwrap();
        let e = g.write(&pi7, Level::High).unwrap_err();
        assert_eq!(e.field(), Some("pin"), "{e}");
        assert_eq!(b.level(7), Level::Low);
    }

    #[test]
    fn a_read_without_a_register_decodes_where_it_started() {
        // `read 0x49 --len 2`: the pointer starts at 0 and auto-increments
        // to 2 during the read; the reading is still the pressure.
        let b = SimBoard::new(&SimConfig::default()).unwrap();
        let mut i2c = b.i2c();
        let a = I2cAddr::new(0x49).unwrap();
        let two = ReadLen::new(2).unwrap();
        let r = i2c.read(a, None, two).unwrap();
        assert_eq!(r.data, vec![0x27, 0x92]);
        assert_eq!(b.decode(a, None, &r.data).as_deref(), Some("1013 hPa"));
        // The next plain read starts at 2 (0xFF 0xFF): not the pressure.
        let r = i2c.read(a, None, two).unwrap();
        assert_eq!(r.data, vec![0xFF, 0xFF]);
        assert_eq!(b.decode(a, None, &r.data), None);
        // After a write that sets the pointer, decode follows the pointer.
        i2c.write(a, &WriteData::new(vec![0x00]).unwrap()).unwrap();
        assert_eq!(
            b.decode(a, None, &[0x27, 0x92]).as_deref(),
            Some("1013 hPa")
        );
        let r = i2c.read(a, None, two).unwrap();
        assert_eq!(b.decode(a, None, &r.data).as_deref(), Some("1013 hPa"));
        // Humidity the same way; the TMP102 pointer does not move at all.
        let h = I2cAddr::new(0x4A).unwrap();
        let r = i2c.read(h, None, two).unwrap();
        assert_eq!(b.decode(h, None, &r.data).as_deref(), Some("45 %"));
        let t = I2cAddr::new(0x48).unwrap();
        let r = i2c.read(t, None, two).unwrap();
        assert_eq!(b.decode(t, None, &r.data).as_deref(), Some("23.5 °C"));
    }
}
