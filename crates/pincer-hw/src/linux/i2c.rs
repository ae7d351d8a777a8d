//! `/dev/i2c-N` through i2c-dev.
//!
//! The adapter's I2C_FUNCS decide the path, once, at open:
//! - plain I2C (I2C_FUNC_I2C): every transfer is one I2C_RDWR transaction
//!   (register reads are [write reg][read len] with a repeated start);
//! - SMBus-only adapters (e.g. i2c-stub, funcs 0x0c7f0000, and many SoC
//!   SMBus controllers): register reads use read-byte-data (1 byte), the
//!   I2C-block read (≤ 32 bytes) or read-word-data (2 bytes, if no block
//!   read); plain reads only receive-byte (1 byte); writes use send-byte,
//!   write-byte-data, write-word-data or the I2C-block write (≤ 32 data
//!   bytes after the register byte). Longer transfers are `Unsupported`,
//!   naming SMBus's 32-byte limit.
//!
//! Every read and write first selects the address with I2C_SLAVE (never
//! I2C_SLAVE_FORCE), the I2C_RDWR path included: I2C_RDWR alone does not
//! check whether a kernel driver (at24 EEPROM, RTC, PMIC...) owns the
//! address, I2C_SLAVE refuses with EBUSY, and pincer then reports "a
//! kernel driver owns 0x50; pincer does not touch it" without sending
//! anything.
//!
//! Scans probe like `i2cdetect`'s default: SMBus receive-byte for
//! 0x30–0x37 and 0x50–0x5F (a quick write can corrupt some EEPROMs and
//! write-protect chips there), quick write elsewhere, selecting each
//! address with I2C_SLAVE (never FORCE). EBUSY means a kernel driver owns
//! the address: it is reported as present, and not probed.
//!
//! A failed transfer is `NoDevice` for ENXIO, EREMOTEIO and ENODEV
//! (i2c-stub's answer), `Io` otherwise, ETIMEDOUT (a stuck bus) included;
//! see `transfer_error` for why EREMOTEIO counts as "no device".
//! An I2C_RDWR that transfers fewer messages than it was given is `Io`.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsFd;
use std::path::Path;

use rustix::io::Errno;

use super::ioctl::{self, Msg, SMBUS_BLOCK_MAX, SmbusData};
use crate::bus::{BusInfo, I2cBus, I2cRead, TransferPath};
use crate::error::HwError;
use crate::validate::{I2cAddr, ReadLen, WriteData};

/// I2C_FUNC_* bits (include/uapi/linux/i2c.h).
pub mod funcs {
    pub const I2C: u64 = 0x0000_0001;
    pub const SMBUS_QUICK: u64 = 0x0001_0000;
    pub const SMBUS_READ_BYTE: u64 = 0x0002_0000;
    pub const SMBUS_WRITE_BYTE: u64 = 0x0004_0000;
    pub const SMBUS_READ_BYTE_DATA: u64 = 0x0008_0000;
    pub const SMBUS_WRITE_BYTE_DATA: u64 = 0x0010_0000;
    pub const SMBUS_READ_WORD_DATA: u64 = 0x0020_0000;
    pub const SMBUS_WRITE_WORD_DATA: u64 = 0x0040_0000;
    pub const SMBUS_READ_I2C_BLOCK: u64 = 0x0400_0000;
    pub const SMBUS_WRITE_I2C_BLOCK: u64 = 0x0800_0000;

    /// Names of the SMBus capabilities set in `f`, for `info`.
    pub fn smbus_names(f: u64) -> Vec<&'static str> {
        [
            (SMBUS_QUICK, "quick"),
            (SMBUS_READ_BYTE, "read-byte"),
            (SMBUS_WRITE_BYTE, "write-byte"),
            (SMBUS_READ_BYTE_DATA, "read-byte-data"),
            (SMBUS_WRITE_BYTE_DATA, "write-byte-data"),
            (SMBUS_READ_WORD_DATA, "read-word-data"),
            (SMBUS_WRITE_WORD_DATA, "write-word-data"),
            (SMBUS_READ_I2C_BLOCK, "read-i2c-block"),
            (SMBUS_WRITE_I2C_BLOCK, "write-i2c-block"),
        ]
        .into_iter()
        .filter(|(bit, _)| f & bit != 0)
        .map(|(_, n)| n)
        .collect()
    }
}

/// How a read goes out, chosen from the adapter's funcs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadPlan {
    Rdwr,
    ReceiveByte,
    ByteData,
    WordData,
    I2cBlock,
}

/// How a write goes out, chosen from the adapter's funcs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WritePlan {
    Rdwr,
    SendByte,
    ByteData,
    WordData,
    I2cBlock,
}

/// How scan probes one address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    Quick,
    ReceiveByte,
    Rdwr,
}

fn has(f: u64, bit: u64) -> bool {
    f & bit != 0
}

/// Chooses the read path for `len` bytes (register or plain read).
pub fn plan_read(f: u64, register: Option<u8>, len: usize) -> Result<ReadPlan, HwError> {
    use funcs::*;
    if has(f, I2C) {
        return Ok(ReadPlan::Rdwr);
    }
    let limit = |what: &str| {
        HwError::Unsupported(format!(
            "{what}: this adapter is SMBus-only (funcs 0x{f:08x}, no plain I2C)"
        ))
    };
    match register {
        None if len == 1 && has(f, SMBUS_READ_BYTE) => Ok(ReadPlan::ReceiveByte),
        None => Err(limit(&format!(
            "a {len}-byte read without a register needs plain I2C; give a register, or read 1 byte"
        ))),
        Some(_) if len == 1 && has(f, SMBUS_READ_BYTE_DATA) => Ok(ReadPlan::ByteData),
        Some(_) if len <= SMBUS_BLOCK_MAX && has(f, SMBUS_READ_I2C_BLOCK) => Ok(ReadPlan::I2cBlock),
        Some(_) if len == 2 && has(f, SMBUS_READ_WORD_DATA) => Ok(ReadPlan::WordData),
        Some(_) if len > SMBUS_BLOCK_MAX => Err(limit(&format!(
            "a {len}-byte register read exceeds the {SMBUS_BLOCK_MAX}-byte SMBus block limit; read at most {SMBUS_BLOCK_MAX} bytes at a time"
        ))),
        Some(_) => Err(limit(&format!(
            "a {len}-byte register read needs the SMBus I2C-block read, which the adapter lacks"
        ))),
    }
}

/// Chooses the write path for `len` bytes (`data[0]` is the register).
pub fn plan_write(f: u64, len: usize) -> Result<WritePlan, HwError> {
    use funcs::*;
    if has(f, I2C) {
        return Ok(WritePlan::Rdwr);
    }
    let max = SMBUS_BLOCK_MAX + 1;
    match len {
        1 if has(f, SMBUS_WRITE_BYTE) => Ok(WritePlan::SendByte),
        2 if has(f, SMBUS_WRITE_BYTE_DATA) => Ok(WritePlan::ByteData),
        2..=33 if has(f, SMBUS_WRITE_I2C_BLOCK) => Ok(WritePlan::I2cBlock),
        3 if has(f, SMBUS_WRITE_WORD_DATA) => Ok(WritePlan::WordData),
        n if n > max => Err(HwError::Unsupported(format!(
            "a {n}-byte write exceeds what an SMBus-only adapter (funcs 0x{f:08x}) can send: the register byte plus at most {SMBUS_BLOCK_MAX} data bytes ({max} in all)"
        ))),
        n => Err(HwError::Unsupported(format!(
            "a {n}-byte write needs an SMBus command this adapter (funcs 0x{f:08x}) lacks"
        ))),
    }
}

/// Chooses how to probe `addr` during a scan, like i2cdetect's default mode.
pub fn plan_probe(f: u64, addr: u8) -> Option<Probe> {
    use funcs::*;
    let read_range = (0x30..=0x37).contains(&addr) || (0x50..=0x5F).contains(&addr);
    if read_range && has(f, SMBUS_READ_BYTE) {
        Some(Probe::ReceiveByte)
    } else if has(f, SMBUS_QUICK) {
        Some(Probe::Quick)
    } else if has(f, SMBUS_READ_BYTE) {
        Some(Probe::ReceiveByte)
    } else if has(f, I2C) {
        Some(Probe::Rdwr)
    } else {
        None
    }
}

fn is_errno(e: &io::Error, errs: &[Errno]) -> bool {
    Errno::from_io_error(e).is_some_and(|n| errs.contains(&n))
}

/// Maps an I2C_SLAVE failure. EBUSY means a kernel driver (an at24
/// EEPROM, an RTC, a PMIC...) has claimed the address: pincer leaves it
/// alone rather than forcing its way in.
fn slave_error(device: &str, addr: I2cAddr, e: io::Error) -> HwError {
    if is_errno(&e, &[Errno::BUSY]) {
        HwError::io(
            "I2C_SLAVE",
            device,
            io::Error::new(
                e.kind(),
                format!(
                    "a kernel driver owns {addr}; pincer does not touch it (use that driver's interface, see /sys/bus/i2c/devices)"
                ),
            ),
        )
    } else {
        HwError::io("I2C_SLAVE", device, e)
    }
}

/// Maps a failed transfer on `bus` (`device` is its /dev path).
///
/// `NoDevice`: ENXIO (the kernel's code for "the address phase got no
/// ACK", Documentation/i2c/fault-codes.rst), ENODEV (i2c-stub's answer
/// for an absent address) and EREMOTEIO. EREMOTEIO is what the bcm2835
/// (Raspberry Pi), Tegra and DesignWare drivers return for *any* NACK,
/// address or data phase; userspace cannot tell which, and an empty
/// address is by far the common cause, so it stays `NoDevice`.
///
/// Everything else is `Io`, including ETIMEDOUT: the adapter gave up
/// waiting (a device holding SDA or SCL low, a stuck bus), which says
/// nothing about whether a device is there.
fn transfer_error(
    bus: &str,
    device: &str,
    op: &'static str,
    addr: I2cAddr,
    e: io::Error,
) -> HwError {
    if is_errno(&e, &[Errno::NXIO, Errno::REMOTEIO, Errno::NODEV]) {
        return HwError::NoDevice {
            bus: bus.to_string(),
            addr,
        };
    }
    if is_errno(&e, &[Errno::TIMEDOUT]) {
        return HwError::io(
            op,
            device,
            io::Error::new(
                e.kind(),
                format!(
                    "{e} talking to {addr}: the bus timed out (a device may be holding SDA or SCL low); nothing is known about {addr}"
                ),
            ),
        );
    }
    HwError::io(op, device, e)
}

/// The SMBus command byte, transaction size and data that send `b`
/// (`b[0]` is the register/pointer byte) by `plan`; None for `Rdwr`.
/// SMBus sends a word's low byte first, so `[reg, lo, hi]` becomes the
/// word `hi << 8 | lo`.
fn smbus_write_args(plan: WritePlan, b: &[u8]) -> Option<(u8, u32, SmbusData)> {
    let mut d = SmbusData::new();
    let (&reg, rest) = b.split_first()?;
    let size = match plan {
        WritePlan::Rdwr => return None,
        WritePlan::SendByte => ioctl::SMBUS_BYTE,
        WritePlan::ByteData => {
            d.block[0] = *rest.first()?;
            ioctl::SMBUS_BYTE_DATA
        }
        WritePlan::WordData => {
            let [lo, hi] = rest else { return None };
            d.set_word(u16::from_le_bytes([*lo, *hi]));
            ioctl::SMBUS_WORD_DATA
        }
        WritePlan::I2cBlock => {
            let n = rest.len().min(SMBUS_BLOCK_MAX); // <= 32 by plan_write
            d.block[0] = n as u8;
            d.block[1..=n].copy_from_slice(&rest[..n]);
            ioctl::SMBUS_I2C_BLOCK_DATA
        }
    };
    Some((reg, size, d))
}

/// The SMBus command byte, transaction size and data that read `n` bytes
/// by `plan`; None for `Rdwr`.
fn smbus_read_args(plan: ReadPlan, register: Option<u8>, n: usize) -> Option<(u8, u32, SmbusData)> {
    let mut d = SmbusData::new();
    let reg = register.unwrap_or(0);
    let size = match plan {
        ReadPlan::Rdwr => return None,
        ReadPlan::ReceiveByte => ioctl::SMBUS_BYTE,
        ReadPlan::ByteData => ioctl::SMBUS_BYTE_DATA,
        ReadPlan::WordData => ioctl::SMBUS_WORD_DATA,
        ReadPlan::I2cBlock => {
            d.block[0] = n.min(SMBUS_BLOCK_MAX) as u8; // n <= 32 by plan_read
            ioctl::SMBUS_I2C_BLOCK_DATA
        }
    };
    Some((reg, size, d))
}

/// The bytes an SMBus read by `plan` of `n` bytes left in `d`, in wire
/// order (a word's low byte came first).
fn smbus_read_bytes(plan: ReadPlan, n: usize, d: &SmbusData) -> Vec<u8> {
    match plan {
        ReadPlan::Rdwr => Vec::new(),
        ReadPlan::ReceiveByte | ReadPlan::ByteData => vec![d.block[0]],
        ReadPlan::WordData => d.word().to_le_bytes().to_vec(),
        ReadPlan::I2cBlock => {
            let got = usize::from(d.block[0]).min(n).min(SMBUS_BLOCK_MAX);
            d.block[1..=got].to_vec()
        }
    }
}

/// An open `/dev/i2c-N` and its functionality bits.
#[derive(Debug)]
pub struct LinuxI2c {
    name: String,
    device: String,
    file: File,
    funcs: u64,
}

impl LinuxI2c {
    /// Opens `/dev/i2c-{bus}` read-write and queries I2C_FUNCS.
    pub fn open(bus: u8) -> Result<LinuxI2c, HwError> {
        Self::open_path(Path::new(&format!("/dev/i2c-{bus}")))
    }

    /// Opens an i2c-dev node by path (e.g. one found through
    /// /sys/class/i2c-adapter) and queries I2C_FUNCS.
    pub fn open_path(path: &Path) -> Result<LinuxI2c, HwError> {
        let device = path.display().to_string();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| HwError::io("open", &device, e))?;
        let funcs =
            ioctl::i2c_funcs(file.as_fd()).map_err(|e| HwError::io("I2C_FUNCS", &device, e))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| device.clone());
        Ok(LinuxI2c {
            name,
            device,
            file,
            funcs,
        })
    }

    /// The adapter's I2C_FUNCS bits.
    pub fn funcs(&self) -> u64 {
        self.funcs
    }

    fn path_of_plan(plain: bool) -> TransferPath {
        if plain {
            TransferPath::I2cRdwr
        } else {
            TransferPath::Smbus
        }
    }

    fn transfer_error(&self, op: &'static str, addr: I2cAddr, e: io::Error) -> HwError {
        transfer_error(&self.name, &self.device, op, addr, e)
    }

    /// I2C_SLAVE (never I2C_SLAVE_FORCE) before every transfer, I2C_RDWR
    /// included: I2C_RDWR itself does not check whether a kernel driver
    /// owns the address, I2C_SLAVE does (EBUSY), and that is the check that
    /// keeps pincer off driver-owned chips on plain-I2C adapters too.
    fn set_slave(&self, addr: I2cAddr) -> Result<(), HwError> {
        ioctl::i2c_set_slave(self.file.as_fd(), addr.get())
            .map_err(|e| slave_error(&self.device, addr, e))
    }

    fn smbus(&self, rw: u8, command: u8, size: u32, data: &mut SmbusData) -> io::Result<()> {
        ioctl::i2c_smbus(self.file.as_fd(), rw, command, size, data)
    }

    fn probe(&self, addr: u8, how: Probe) -> Result<bool, HwError> {
        let fd = self.file.as_fd();
        match ioctl::i2c_set_slave(fd, addr) {
            Ok(()) => {}
            // A driver owns it, so something is there; do not touch it.
            Err(e) if is_errno(&e, &[Errno::BUSY]) => return Ok(true),
            Err(e) => return Err(HwError::io("I2C_SLAVE", &self.device, e)),
        }
        let mut d = SmbusData::new();
        let r = match how {
            Probe::Quick => self.smbus(ioctl::SMBUS_WRITE, 0, ioctl::SMBUS_QUICK, &mut d),
            Probe::ReceiveByte => self.smbus(ioctl::SMBUS_READ, 0, ioctl::SMBUS_BYTE, &mut d),
            Probe::Rdwr => {
                let mut b = [0u8; 1];
                ioctl::i2c_rdwr(fd, addr, &mut [Msg::Read(&mut b)])
            }
        };
        // As i2cdetect: any failure means nobody answered.
        Ok(r.is_ok())
    }
}

impl I2cBus for LinuxI2c {
    fn info(&mut self) -> Result<BusInfo, HwError> {
        let f = self.funcs;
        let plain = has(f, funcs::I2C);
        let path = Self::path_of_plan(plain).to_string();
        let mut detail = serde_json::json!({
            "funcs": format!("0x{f:08x}"),
            "plain_i2c": plain,
            "smbus": funcs::smbus_names(f),
            "read_path": path,
            "write_path": path,
        });
        if !plain {
            detail["smbus_block_max"] = serde_json::json!(SMBUS_BLOCK_MAX);
        }
        Ok(BusInfo {
            name: self.name.clone(),
            device: Some(self.device.clone()),
            backend: "linux",
            detail,
        })
    }

    fn scan(&mut self) -> Result<Vec<I2cAddr>, HwError> {
        let mut found = Vec::new();
        for a in I2cAddr::SCAN_FIRST..=I2cAddr::LAST {
            let how = plan_probe(self.funcs, a).ok_or_else(|| {
                HwError::Unsupported(format!(
                    "{}: cannot probe addresses: no quick write, receive byte or plain I2C (funcs 0x{:08x})",
                    self.device, self.funcs
                ))
            })?;
            if self.probe(a, how)? {
                found.push(I2cAddr::new(a)?);
            }
        }
        Ok(found)
    }

    fn read(
        &mut self,
        addr: I2cAddr,
        register: Option<u8>,
        len: ReadLen,
    ) -> Result<I2cRead, HwError> {
        let n = len.get();
        let plan = plan_read(self.funcs, register, n)?;
        self.set_slave(addr)?;
        let Some((command, size, mut d)) = smbus_read_args(plan, register, n) else {
            let mut buf = vec![0u8; n];
            let fd = self.file.as_fd();
            match register {
                Some(r) => {
                    ioctl::i2c_rdwr(fd, addr.get(), &mut [Msg::Write(&[r]), Msg::Read(&mut buf)])
                }
                None => ioctl::i2c_rdwr(fd, addr.get(), &mut [Msg::Read(&mut buf)]),
            }
            .map_err(|e| self.transfer_error("I2C_RDWR", addr, e))?;
            return Ok(I2cRead {
                data: buf,
                path: TransferPath::I2cRdwr,
            });
        };
        self.smbus(ioctl::SMBUS_READ, command, size, &mut d)
            .map_err(|e| self.transfer_error("I2C_SMBUS", addr, e))?;
        Ok(I2cRead {
            data: smbus_read_bytes(plan, n, &d),
            path: TransferPath::Smbus,
        })
    }

    fn write(&mut self, addr: I2cAddr, data: &WriteData) -> Result<TransferPath, HwError> {
        let b = data.bytes();
        let plan = plan_write(self.funcs, b.len())?;
        self.set_slave(addr)?;
        let Some((command, size, mut d)) = smbus_write_args(plan, b) else {
            ioctl::i2c_rdwr(self.file.as_fd(), addr.get(), &mut [Msg::Write(b)])
                .map_err(|e| self.transfer_error("I2C_RDWR", addr, e))?;
            return Ok(TransferPath::I2cRdwr);
        };
        self.smbus(ioctl::SMBUS_WRITE, command, size, &mut d)
            .map_err(|e| self.transfer_error("I2C_SMBUS", addr, e))?;
        Ok(TransferPath::Smbus)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// i2c-stub's functionality: SMBus only.
    const STUB: u64 = 0x0c7f_0000;
    /// A typical SoC controller: plain I2C + SMBus emulation.
    const PLAIN: u64 = 0x0eff_0009;

    #[test]
    fn read_paths() {
        assert_eq!(plan_read(PLAIN, Some(0), 256).unwrap(), ReadPlan::Rdwr);
        assert_eq!(plan_read(PLAIN, None, 7).unwrap(), ReadPlan::Rdwr);
        assert_eq!(plan_read(STUB, Some(0), 1).unwrap(), ReadPlan::ByteData);
        assert_eq!(plan_read(STUB, Some(0), 2).unwrap(), ReadPlan::I2cBlock);
        assert_eq!(plan_read(STUB, Some(0), 32).unwrap(), ReadPlan::I2cBlock);
        assert_eq!(plan_read(STUB, None, 1).unwrap(), ReadPlan::ReceiveByte);
        let e = plan_read(STUB, Some(0), 40).unwrap_err();
        assert!(matches!(e, HwError::Unsupported(_)));
        assert!(e.to_string().contains("32-byte SMBus"), "{e}");
        assert!(plan_read(STUB, None, 2).is_err());
        // No block read but word data: 2-byte reads still work.
        let word_only = STUB & !funcs::SMBUS_READ_I2C_BLOCK;
        assert_eq!(
            plan_read(word_only, Some(0), 2).unwrap(),
            ReadPlan::WordData
        );
        assert!(plan_read(word_only, Some(0), 3).is_err());
    }

    #[test]
    fn write_paths() {
        assert_eq!(plan_write(PLAIN, 256).unwrap(), WritePlan::Rdwr);
        assert_eq!(plan_write(STUB, 1).unwrap(), WritePlan::SendByte);
        assert_eq!(plan_write(STUB, 2).unwrap(), WritePlan::ByteData);
        assert_eq!(plan_write(STUB, 3).unwrap(), WritePlan::I2cBlock);
        assert_eq!(plan_write(STUB, 33).unwrap(), WritePlan::I2cBlock);
        let e = plan_write(STUB, 34).unwrap_err();
        assert!(e.to_string().contains("at most 32 data bytes"), "{e}");
        let word_only = STUB & !funcs::SMBUS_WRITE_I2C_BLOCK;
        assert_eq!(plan_write(word_only, 3).unwrap(), WritePlan::WordData);
        assert!(plan_write(word_only, 4).is_err());
    }

    #[test]
    fn probes_like_i2cdetect() {
        assert_eq!(plan_probe(STUB, 0x48), Some(Probe::Quick));
        assert_eq!(plan_probe(STUB, 0x50), Some(Probe::ReceiveByte));
        assert_eq!(plan_probe(STUB, 0x37), Some(Probe::ReceiveByte));
        assert_eq!(plan_probe(funcs::I2C, 0x48), Some(Probe::Rdwr));
        assert_eq!(plan_probe(0, 0x48), None);
        assert_eq!(
            funcs::smbus_names(STUB),
            [
                "quick",
                "read-byte",
                "write-byte",
                "read-byte-data",
                "write-byte-data",
                "read-word-data",
                "write-word-data",
                "read-i2c-block",
                "write-i2c-block"
            ]
        );
    }

    fn addr(a: u8) -> I2cAddr {
        I2cAddr::new(a).unwrap()
    }

    fn errno(e: Errno) -> io::Error {
        io::Error::from_raw_os_error(e.raw_os_error())
    }

    /// A LinuxI2c on a plain file claiming `funcs`: every ioctl fails with
    /// ENOTTY, so the first ioctl a transfer issues names itself.
    fn fake_adapter(funcs: u64) -> (tempfile::NamedTempFile, LinuxI2c) {
        let f = tempfile::NamedTempFile::new().unwrap();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(f.path())
            .unwrap();
        let bus = LinuxI2c {
            name: "i2c-fake".into(),
            device: f.path().display().to_string(),
            file,
            funcs,
        };
        (f, bus)
    }

    fn first_ioctl<T: std::fmt::Debug>(r: Result<T, HwError>) -> &'static str {
        match r {
            Err(HwError::Io { op, .. }) => op,
            other => panic!("expected an ioctl error, got {other:?}"),
        }
    }

    #[test]
    fn rdwr_transfers_select_the_address_first() {
        // Plain I2C: without I2C_SLAVE first, a driver-owned address would
        // be read and written through I2C_RDWR unchecked.
        let (_f, mut bus) = fake_adapter(PLAIN);
        let a = addr(0x50);
        let len = ReadLen::new(2).unwrap();
        assert_eq!(first_ioctl(bus.read(a, Some(0), len)), "I2C_SLAVE");
        assert_eq!(first_ioctl(bus.read(a, None, len)), "I2C_SLAVE");
        let data = WriteData::new(vec![0x00, 0x17]).unwrap();
        assert_eq!(first_ioctl(bus.write(a, &data)), "I2C_SLAVE");
        // SMBus paths did already; they still do.
        let (_f, mut bus) = fake_adapter(STUB);
        assert_eq!(first_ioctl(bus.read(a, Some(0), len)), "I2C_SLAVE");
        assert_eq!(first_ioctl(bus.write(a, &data)), "I2C_SLAVE");
        // A plan the adapter cannot carry fails before any ioctl.
        let long = ReadLen::new(40).unwrap();
        assert!(matches!(
            bus.read(a, Some(0), long),
            Err(HwError::Unsupported(_))
        ));
    }

    #[test]
    fn a_driver_owned_address_is_refused_clearly() {
        let e = slave_error("/dev/i2c-1", addr(0x50), errno(Errno::BUSY));
        assert!(
            matches!(
                e,
                HwError::Io {
                    op: "I2C_SLAVE",
                    ..
                }
            ),
            "{e:?}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains("a kernel driver owns 0x50; pincer does not touch it"),
            "{msg}"
        );
        assert!(msg.contains("/dev/i2c-1"), "{msg}");
        let e = slave_error("/dev/i2c-1", addr(0x50), errno(Errno::NOTTY));
        assert!(!e.to_string().contains("kernel driver"), "{e}");
    }

    #[test]
    fn nack_is_no_device_but_a_timeout_is_io() {
        let map = |e| transfer_error("i2c-1", "/dev/i2c-1", "I2C_RDWR", addr(0x48), errno(e));
        for nack in [Errno::NXIO, Errno::NODEV, Errno::REMOTEIO] {
            assert!(
                matches!(map(nack), HwError::NoDevice { ref bus, addr: a } if bus == "i2c-1" && a.get() == 0x48),
                "{nack:?}"
            );
        }
        let e = map(Errno::TIMEDOUT);
        assert!(matches!(e, HwError::Io { op: "I2C_RDWR", .. }), "{e:?}");
        assert!(e.to_string().contains("timed out"), "{e}");
        assert!(matches!(map(Errno::IO), HwError::Io { .. }));
        // A short I2C_RDWR count carries no errno: Io, never NoDevice.
        let short = super::ioctl::check_rdwr_count(1, 2).unwrap_err();
        let e = transfer_error("i2c-1", "/dev/i2c-1", "I2C_RDWR", addr(0x48), short);
        assert!(matches!(e, HwError::Io { .. }), "{e:?}");
    }

    #[test]
    fn smbus_words_are_little_endian_on_the_wire() {
        let mut d = SmbusData::new();
        d.set_word(0x8017);
        // The union holds the word in native order ...
        assert_eq!(d.block[..2], 0x8017u16.to_ne_bytes());
        assert_eq!(d.word(), 0x8017);
        // ... and the kernel sends/receives its low byte first, so a
        // word read of 0x8017 is the bytes 17 80 in wire order.
        assert_eq!(smbus_read_bytes(ReadPlan::WordData, 2, &d), [0x17, 0x80]);
        let (reg, size, w) = smbus_write_args(WritePlan::WordData, &[0x01, 0x17, 0x80]).unwrap();
        assert_eq!(
            (reg, size, w.word()),
            (0x01, ioctl::SMBUS_WORD_DATA, 0x8017)
        );
    }

    #[test]
    fn write_plans_become_smbus_data() {
        // [reg, data...] → an I2C block write of the data at reg, block[0] = count.
        let (reg, size, d) = smbus_write_args(WritePlan::I2cBlock, &[0x00, 0x17, 0x80]).unwrap();
        assert_eq!((reg, size), (0x00, ioctl::SMBUS_I2C_BLOCK_DATA));
        assert_eq!(d.block[..4], [2, 0x17, 0x80, 0]);
        let (reg, size, d) = smbus_write_args(WritePlan::ByteData, &[0x05, 0xaa]).unwrap();
        assert_eq!(
            (reg, size, d.block[0]),
            (0x05, ioctl::SMBUS_BYTE_DATA, 0xaa)
        );
        // Send byte: the one byte is the command.
        let (reg, size, _) = smbus_write_args(WritePlan::SendByte, &[0x03]).unwrap();
        assert_eq!((reg, size), (0x03, ioctl::SMBUS_BYTE));
        let full: Vec<u8> = (0..33).collect();
        let (reg, _, d) = smbus_write_args(WritePlan::I2cBlock, &full).unwrap();
        assert_eq!((reg, d.block[0]), (0, 32));
        assert_eq!(d.block[1..=32], full[1..]);
        assert!(smbus_write_args(WritePlan::Rdwr, &[0, 1]).is_none());
        // The plans chosen for an SMBus-only adapter fit these shapes.
        assert_eq!(plan_write(STUB, 3).unwrap(), WritePlan::I2cBlock);
        assert_eq!(plan_write(STUB, 2).unwrap(), WritePlan::ByteData);
    }

    #[test]
    fn read_plans_become_smbus_data() {
        let (reg, size, d) = smbus_read_args(ReadPlan::I2cBlock, Some(0x10), 6).unwrap();
        assert_eq!(
            (reg, size, d.block[0]),
            (0x10, ioctl::SMBUS_I2C_BLOCK_DATA, 6)
        );
        let (reg, size, _) = smbus_read_args(ReadPlan::ByteData, Some(0x0f), 1).unwrap();
        assert_eq!((reg, size), (0x0f, ioctl::SMBUS_BYTE_DATA));
        let (_, size, _) = smbus_read_args(ReadPlan::ReceiveByte, None, 1).unwrap();
        assert_eq!(size, ioctl::SMBUS_BYTE);
        assert!(smbus_read_args(ReadPlan::Rdwr, Some(0), 2).is_none());
        // A block read returns what the kernel says it got, never more than asked.
        let mut d = SmbusData::new();
        d.block[..5].copy_from_slice(&[3, 0xa, 0xb, 0xc, 0xd]);
        assert_eq!(smbus_read_bytes(ReadPlan::I2cBlock, 4, &d), [0xa, 0xb, 0xc]);
        assert_eq!(smbus_read_bytes(ReadPlan::I2cBlock, 2, &d), [0xa, 0xb]);
        assert_eq!(smbus_read_bytes(ReadPlan::ByteData, 1, &d), [3]);
    }

    #[test]
    fn missing_bus_names_the_device() {
        let e = LinuxI2c::open(99).unwrap_err();
        assert!(matches!(e, HwError::Io { op: "open", .. }));
        assert!(e.to_string().contains("/dev/i2c-99"), "{e}");
    }

    #[test]
    fn a_file_that_is_not_an_adapter_fails_funcs() {
        let f = tempfile::NamedTempFile::new().unwrap();
        let e = LinuxI2c::open_path(f.path()).unwrap_err();
        assert!(
            matches!(
                e,
                HwError::Io {
                    op: "I2C_FUNCS",
                    ..
                }
            ),
            "{e}"
        );
    }
}
