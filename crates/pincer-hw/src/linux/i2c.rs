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
//! Scans probe like `i2cdetect`'s default: SMBus receive-byte for
//! 0x30–0x37 and 0x50–0x5F (a quick write can corrupt some EEPROMs and
//! write-protect chips there), quick write elsewhere, selecting each
//! address with I2C_SLAVE (never FORCE). EBUSY means a kernel driver owns
//! the address: it is reported as present. ENXIO/EREMOTEIO/ETIMEDOUT (and
//! ENODEV, i2c-stub's answer) on a transfer become `NoDevice`.

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

    /// Maps a transfer error: NACK-like errnos → NoDevice. ENODEV is
    /// included because i2c-stub answers an absent address with it.
    fn transfer_error(&self, op: &'static str, addr: I2cAddr, e: io::Error) -> HwError {
        if is_errno(
            &e,
            &[Errno::NXIO, Errno::REMOTEIO, Errno::TIMEDOUT, Errno::NODEV],
        ) {
            HwError::NoDevice {
                bus: self.name.clone(),
                addr,
            }
        } else {
            HwError::io(op, &self.device, e)
        }
    }

    fn set_slave(&self, addr: I2cAddr) -> Result<(), HwError> {
        ioctl::i2c_set_slave(self.file.as_fd(), addr.get()).map_err(|e| {
            if is_errno(&e, &[Errno::BUSY]) {
                HwError::io(
                    "I2C_SLAVE",
                    &self.device,
                    io::Error::new(
                        e.kind(),
                        format!("{addr} is claimed by a kernel driver (EBUSY); use that driver's interface or unbind it"),
                    ),
                )
            } else {
                HwError::io("I2C_SLAVE", &self.device, e)
            }
        })
    }

    fn smbus(&self, rw: u8, command: u8, size: u32, data: &mut SmbusData) -> io::Result<()> {
        ioctl::i2c_smbus(self.file.as_fd(), rw, command, size, data)
    }

    fn probe(&self, addr: u8, how: Probe) -> Result<bool, HwError> {
        let fd = self.file.as_fd();
        if how != Probe::Rdwr {
            match ioctl::i2c_set_slave(fd, addr) {
                Ok(()) => {}
                Err(e) if is_errno(&e, &[Errno::BUSY]) => return Ok(true),
                Err(e) => return Err(HwError::io("I2C_SLAVE", &self.device, e)),
            }
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
        let fd = self.file.as_fd();
        let reg = register.unwrap_or(0);
        let mut d = SmbusData::new();
        let data = match plan {
            ReadPlan::Rdwr => {
                let mut buf = vec![0u8; n];
                let r = match register {
                    Some(r) => ioctl::i2c_rdwr(
                        fd,
                        addr.get(),
                        &mut [Msg::Write(&[r]), Msg::Read(&mut buf)],
                    ),
                    None => ioctl::i2c_rdwr(fd, addr.get(), &mut [Msg::Read(&mut buf)]),
                };
                r.map_err(|e| self.transfer_error("I2C_RDWR", addr, e))?;
                return Ok(I2cRead {
                    data: buf,
                    path: TransferPath::I2cRdwr,
                });
            }
            ReadPlan::ReceiveByte => {
                self.set_slave(addr)?;
                self.smbus(ioctl::SMBUS_READ, 0, ioctl::SMBUS_BYTE, &mut d)
                    .map(|()| vec![d.block[0]])
            }
            ReadPlan::ByteData => {
                self.set_slave(addr)?;
                self.smbus(ioctl::SMBUS_READ, reg, ioctl::SMBUS_BYTE_DATA, &mut d)
                    .map(|()| vec![d.block[0]])
            }
            ReadPlan::WordData => {
                self.set_slave(addr)?;
                // SMBus sends the low byte first: wire order = little endian.
                self.smbus(ioctl::SMBUS_READ, reg, ioctl::SMBUS_WORD_DATA, &mut d)
                    .map(|()| d.word().to_le_bytes().to_vec())
            }
            ReadPlan::I2cBlock => {
                self.set_slave(addr)?;
                d.block[0] = n as u8; // n <= 32 by plan_read
                self.smbus(ioctl::SMBUS_READ, reg, ioctl::SMBUS_I2C_BLOCK_DATA, &mut d)
                    .map(|()| {
                        let got = usize::from(d.block[0]).min(n);
                        d.block[1..=got].to_vec()
                    })
            }
        };
        let data = data.map_err(|e| self.transfer_error("I2C_SMBUS", addr, e))?;
        Ok(I2cRead {
            data,
            path: TransferPath::Smbus,
        })
    }

    fn write(&mut self, addr: I2cAddr, data: &WriteData) -> Result<TransferPath, HwError> {
        let b = data.bytes();
        let plan = plan_write(self.funcs, b.len())?;
        if plan == WritePlan::Rdwr {
            ioctl::i2c_rdwr(self.file.as_fd(), addr.get(), &mut [Msg::Write(b)])
                .map_err(|e| self.transfer_error("I2C_RDWR", addr, e))?;
            return Ok(TransferPath::I2cRdwr);
        }
        self.set_slave(addr)?;
        let mut d = SmbusData::new();
        let (reg, rest) = b
            .split_first()
            .map(|(r, rest)| (*r, rest))
            .unwrap_or((0, &[]));
        let size = match plan {
            WritePlan::SendByte => ioctl::SMBUS_BYTE,
            WritePlan::ByteData => {
                d.block[0] = rest[0];
                ioctl::SMBUS_BYTE_DATA
            }
            WritePlan::WordData => {
                d.set_word(u16::from_le_bytes([rest[0], rest[1]]));
                ioctl::SMBUS_WORD_DATA
            }
            _ => {
                d.block[0] = rest.len() as u8; // <= 32 by plan_write
                d.block[1..=rest.len()].copy_from_slice(rest);
                ioctl::SMBUS_I2C_BLOCK_DATA
            }
        };
        self.smbus(ioctl::SMBUS_WRITE, reg, size, &mut d)
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
