//! The only unsafe code of pincer-hw: the i2c-dev and spidev ioctls, each
//! wrapped in a safe function that owns the memory the kernel reads and
//! writes. Layouts follow the kernel's UAPI headers
//! (include/uapi/linux/i2c-dev.h, i2c.h, spi/spidev.h); sizes are checked
//! at compile time.
//!
//! Why our own: `i2cdev` 0.6 keeps its ffi private, has no I2C_FUNCS query
//! (so it cannot choose between I2C_RDWR and SMBus) and pulls nix 0.26;
//! `spidev` 0.7 pulls nix 0.29 while the workspace already locks nix 0.31
//! and rustix 1.1. `rustix::ioctl` (already in Cargo.lock, no libc
//! dependency on Linux) gives typed opcodes and errno handling, so the whole
//! layer is ~150 lines and adds no crate.

use std::io;
use std::os::fd::BorrowedFd;

use std::ffi::c_void;

use rustix::ioctl::{Getter, IntegerSetter, Ioctl, IoctlOutput, Opcode, Updater, ioctl, opcode};

// --- i2c-dev -----------------------------------------------------------

const I2C_SLAVE: Opcode = 0x0703;
const I2C_FUNCS: Opcode = 0x0705;
const I2C_RDWR: Opcode = 0x0707;
const I2C_SMBUS: Opcode = 0x0720;
const I2C_M_RD: u16 = 0x0001;

pub const SMBUS_READ: u8 = 1;
pub const SMBUS_WRITE: u8 = 0;
pub const SMBUS_QUICK: u32 = 0;
pub const SMBUS_BYTE: u32 = 1;
pub const SMBUS_BYTE_DATA: u32 = 2;
pub const SMBUS_WORD_DATA: u32 = 3;
pub const SMBUS_I2C_BLOCK_DATA: u32 = 8;
/// I2C_SMBUS_BLOCK_MAX: data bytes in one SMBus block transfer.
pub const SMBUS_BLOCK_MAX: usize = 32;

/// `struct i2c_msg`.
#[repr(C)]
struct I2cMsg {
    addr: u16,
    flags: u16,
    len: u16,
    buf: *mut u8,
}

/// `struct i2c_rdwr_ioctl_data`.
#[repr(C)]
struct RdwrData {
    msgs: *mut I2cMsg,
    nmsgs: u32,
}

/// `union i2c_smbus_data`: byte / word (native endian) / block[0]=length.
#[repr(C, align(2))]
#[derive(Debug, Clone, Copy)]
pub struct SmbusData {
    pub block: [u8; SMBUS_BLOCK_MAX + 2],
}

impl SmbusData {
    pub fn new() -> SmbusData {
        SmbusData {
            block: [0; SMBUS_BLOCK_MAX + 2],
        }
    }

    pub fn word(&self) -> u16 {
        u16::from_ne_bytes([self.block[0], self.block[1]])
    }

    pub fn set_word(&mut self, w: u16) {
        self.block[..2].copy_from_slice(&w.to_ne_bytes());
    }
}

/// `struct i2c_smbus_ioctl_data`.
#[repr(C)]
struct SmbusIoctlData {
    read_write: u8,
    command: u8,
    size: u32,
    data: *mut SmbusData,
}

const _: () = assert!(size_of::<SmbusData>() == 34);
const _: () = assert!(size_of::<I2cMsg>() == 8 + size_of::<usize>());
const _: () = assert!(size_of::<RdwrData>() == 2 * size_of::<usize>());
const _: () = assert!(size_of::<SmbusIoctlData>() == 8 + size_of::<usize>());

/// One message of an I2C_RDWR transaction.
#[derive(Debug)]
pub enum Msg<'a> {
    Write(&'a [u8]),
    Read(&'a mut [u8]),
}

/// I2C_FUNCS: the adapter's functionality bits.
pub fn i2c_funcs(fd: BorrowedFd<'_>) -> io::Result<u64> {
    // SAFETY: I2C_FUNCS writes one `unsigned long` through the pointer,
    // which is exactly Getter's output type; nothing else is touched.
    let funcs = unsafe { ioctl(fd, Getter::<I2C_FUNCS, std::ffi::c_ulong>::new()) }?;
    // c_ulong is u32 on 32-bit ARM (32-bit Raspberry Pi OS), u64 elsewhere.
    #[allow(clippy::useless_conversion)]
    let funcs = u64::from(funcs);
    Ok(funcs)
}

/// I2C_SLAVE: the address later SMBus calls on this fd talk to.
pub fn i2c_set_slave(fd: BorrowedFd<'_>, addr: u8) -> io::Result<()> {
    // SAFETY: I2C_SLAVE takes the address as an integer argument, not a
    // pointer; the kernel reads no user memory.
    unsafe { ioctl(fd, IntegerSetter::<I2C_SLAVE>::new_usize(usize::from(addr))) }?;
    Ok(())
}

/// I2C_RDWR: the messages as one combined transaction (repeated starts).
pub fn i2c_rdwr(fd: BorrowedFd<'_>, addr: u8, msgs: &mut [Msg<'_>]) -> io::Result<()> {
    let too_long = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "i2c message longer than 65535 bytes",
        )
    };
    let mut raw = Vec::with_capacity(msgs.len());
    for m in msgs.iter_mut() {
        raw.push(match m {
            Msg::Write(b) => I2cMsg {
                addr: u16::from(addr),
                flags: 0,
                len: u16::try_from(b.len()).map_err(|_| too_long())?,
                // The kernel only copies *from* a message without I2C_M_RD.
                buf: b.as_ptr().cast_mut(),
            },
            Msg::Read(b) => I2cMsg {
                addr: u16::from(addr),
                flags: I2C_M_RD,
                len: u16::try_from(b.len()).map_err(|_| too_long())?,
                buf: b.as_mut_ptr(),
            },
        });
    }
    let mut data = RdwrData {
        msgs: raw.as_mut_ptr(),
        nmsgs: u32::try_from(raw.len()).map_err(|_| too_long())?,
    };
    // SAFETY: `data` points at `raw.len()` valid i2c_msg structs; each
    // `buf` points at a live slice of exactly `len` bytes borrowed from
    // `msgs` for the duration of this call; the kernel writes only into
    // I2C_M_RD buffers, which come from `&mut` slices. `raw` and `msgs`
    // outlive the call.
    let done = unsafe { ioctl(fd, RdwrCall(&mut data)) }?;
    check_rdwr_count(done, raw.len())
}

/// I2C_RDWR returns how many messages the adapter transferred. A count
/// short of what was sent means the later messages never happened: their
/// read buffers still hold the zeros we allocated, which must not be
/// returned as data. Any count other than `sent` is an error (with no
/// errno, so callers report it as I/O, not as an absent device).
pub fn check_rdwr_count(done: IoctlOutput, sent: usize) -> io::Result<()> {
    if usize::try_from(done).is_ok_and(|d| d == sent) {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "the adapter transferred {done} of {sent} messages; the data is incomplete"
        )))
    }
}

/// `ioctl(fd, I2C_RDWR, &data)` returning the ioctl's value (the number of
/// messages transferred); rustix's `Updater` would discard it.
struct RdwrCall<'a>(&'a mut RdwrData);

// SAFETY: I2C_RDWR takes a pointer to a `struct i2c_rdwr_ioctl_data`, which
// `as_ptr` returns; the kernel writes through the message buffers (see
// `i2c_rdwr`), so the call is mutating. The output is the ioctl's return
// value, read from `out` only; the pointer is not dereferenced.
unsafe impl Ioctl for RdwrCall<'_> {
    type Output = IoctlOutput;
    const IS_MUTATING: bool = true;

    fn opcode(&self) -> Opcode {
        I2C_RDWR
    }

    fn as_ptr(&mut self) -> *mut c_void {
        std::ptr::from_mut(self.0).cast()
    }

    unsafe fn output_from_ptr(
        out: IoctlOutput,
        _extract_output: *mut c_void,
    ) -> rustix::io::Result<IoctlOutput> {
        Ok(out)
    }
}

/// I2C_SMBUS: one SMBus command; `data` carries the byte/word/block in or out.
pub fn i2c_smbus(
    fd: BorrowedFd<'_>,
    read_write: u8,
    command: u8,
    size: u32,
    data: &mut SmbusData,
) -> io::Result<()> {
    let mut args = SmbusIoctlData {
        read_write,
        command,
        size,
        data: std::ptr::from_mut(data),
    };
    // SAFETY: `args.data` points at a live, exclusively borrowed 34-byte
    // i2c_smbus_data (the largest the kernel reads or writes for any size);
    // `args` has the kernel's layout.
    unsafe { ioctl(fd, Updater::<I2C_SMBUS, SmbusIoctlData>::new(&mut args)) }?;
    Ok(())
}

// --- spidev ------------------------------------------------------------

/// `struct spi_ioc_transfer`.
#[repr(C)]
#[derive(Default)]
struct SpiIocTransfer {
    tx_buf: u64,
    rx_buf: u64,
    len: u32,
    speed_hz: u32,
    delay_usecs: u16,
    bits_per_word: u8,
    cs_change: u8,
    tx_nbits: u8,
    rx_nbits: u8,
    word_delay_usecs: u8,
    pad: u8,
}

const _: () = assert!(size_of::<SpiIocTransfer>() == 32);

const SPI_IOC_MAGIC: u8 = b'k';
/// SPI_IOC_MESSAGE(1) = _IOW('k', 0, char[sizeof(struct spi_ioc_transfer)]).
const SPI_IOC_MESSAGE_1: Opcode = opcode::write::<SpiIocTransfer>(SPI_IOC_MAGIC, 0);
const SPI_IOC_RD_BITS_PER_WORD: Opcode = opcode::read::<u8>(SPI_IOC_MAGIC, 3);
const SPI_IOC_RD_MAX_SPEED_HZ: Opcode = opcode::read::<u32>(SPI_IOC_MAGIC, 4);
const SPI_IOC_RD_MODE32: Opcode = opcode::read::<u32>(SPI_IOC_MAGIC, 5);

/// One full-duplex transfer at the device's configured speed and word size.
pub fn spi_transfer(fd: BorrowedFd<'_>, tx: &[u8], rx: &mut [u8]) -> io::Result<()> {
    if tx.len() != rx.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "tx and rx lengths differ",
        ));
    }
    let len = u32::try_from(tx.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "transfer too long"))?;
    let mut t = SpiIocTransfer {
        tx_buf: tx.as_ptr() as u64,
        rx_buf: rx.as_mut_ptr() as u64,
        len,
        ..SpiIocTransfer::default()
    };
    // SAFETY: tx_buf/rx_buf point at live slices of exactly `len` bytes; the
    // kernel reads tx and writes rx only; rx is exclusively borrowed and
    // both outlive the call. `t` has the kernel's 32-byte layout.
    unsafe {
        ioctl(
            fd,
            Updater::<SPI_IOC_MESSAGE_1, SpiIocTransfer>::new(&mut t),
        )
    }?;
    Ok(())
}

/// (mode, max speed in Hz, bits per word) as configured on the device.
pub fn spi_settings(fd: BorrowedFd<'_>) -> io::Result<(u32, u32, u8)> {
    // SAFETY: each read ioctl writes exactly one value of the Getter's type.
    let mode = unsafe { ioctl(fd, Getter::<SPI_IOC_RD_MODE32, u32>::new()) }?;
    // SAFETY: as above (u32).
    let speed = unsafe { ioctl(fd, Getter::<SPI_IOC_RD_MAX_SPEED_HZ, u32>::new()) }?;
    // SAFETY: as above (u8).
    let bits = unsafe { ioctl(fd, Getter::<SPI_IOC_RD_BITS_PER_WORD, u8>::new()) }?;
    Ok((mode, speed, bits))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::os::fd::AsFd;

    #[cfg(any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "arm",
        target_arch = "x86",
        target_arch = "riscv64"
    ))]
    #[test]
    fn opcodes_match_the_kernel_headers() {
        // Values as computed by the C macros on the common Linux ABIs.
        assert_eq!(SPI_IOC_MESSAGE_1 as u64, 0x4020_6b00);
        assert_eq!(SPI_IOC_RD_MODE32 as u64, 0x8004_6b05);
        assert_eq!(SPI_IOC_RD_MAX_SPEED_HZ as u64, 0x8004_6b04);
        assert_eq!(SPI_IOC_RD_BITS_PER_WORD as u64, 0x8001_6b03);
    }

    #[test]
    fn a_short_rdwr_count_is_an_error() {
        assert!(check_rdwr_count(2, 2).is_ok());
        assert!(check_rdwr_count(1, 1).is_ok());
        // The write of the register went out, the read did not: no data.
        let e = check_rdwr_count(1, 2).unwrap_err();
        assert!(e.to_string().contains("1 of 2 messages"), "{e}");
        assert_eq!(e.raw_os_error(), None);
        assert!(check_rdwr_count(0, 1).is_err());
        assert!(check_rdwr_count(3, 2).is_err());
    }

    #[test]
    fn ioctls_on_a_plain_file_fail_cleanly() {
        let f = tempfile::tempfile().unwrap();
        let e = i2c_funcs(f.as_fd()).unwrap_err();
        assert_eq!(
            e.raw_os_error(),
            Some(rustix::io::Errno::NOTTY.raw_os_error())
        );
        let mut d = SmbusData::new();
        assert!(i2c_smbus(f.as_fd(), SMBUS_READ, 0, SMBUS_BYTE_DATA, &mut d).is_err());
        let mut buf = [0u8; 2];
        assert!(
            i2c_rdwr(
                f.as_fd(),
                0x48,
                &mut [Msg::Write(&[0]), Msg::Read(&mut buf)]
            )
            .is_err()
        );
        assert!(spi_transfer(f.as_fd(), &[1, 2], &mut buf).is_err());
    }
}
