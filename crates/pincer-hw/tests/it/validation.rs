//! HW2: bad input is refused with an error naming the field, and nothing
//! reaches the (simulated) bus.

use pincer_hw::{
    Hardware, HwError, I2cAddr, Level, ReadLen, SpiData, WriteData, parse_hex_bytes, parse_u8,
};

use crate::demo;

/// `r` failed on `field`, mentioning `needle`, and the sim saw nothing.
fn check<T: std::fmt::Debug>(hw: &Hardware, r: Result<T, HwError>, field: &str, needle: &str) {
    let e = r.expect_err("should be refused");
    assert_eq!(e.field(), Some(field), "{e}");
    let msg = e.to_string();
    assert!(msg.contains(needle), "{msg:?} should mention {needle:?}");
    assert!(
        hw.sim().unwrap().transactions().is_empty(),
        "nothing may reach the bus: {:?}",
        hw.sim().unwrap().transactions()
    );
}

/// Reads through the Hardware with raw user input, parsing as the CLI would.
fn read(hw: &Hardware, addr: &str, register: &str, len: usize) -> Result<Vec<u8>, HwError> {
    let addr = I2cAddr::parse(addr)?;
    let register = parse_u8("register", register)?;
    let len = ReadLen::new(len)?;
    Ok(hw.i2c_read(None, addr, Some(register), len)?.data)
}

fn write(hw: &Hardware, addr: &str, data: &str) -> Result<(), HwError> {
    let addr = I2cAddr::parse(addr)?;
    let data = WriteData::new(parse_hex_bytes("data", data)?)?;
    hw.i2c_write(None, addr, &data).map(|_| ())
}

#[test]
fn bad_addresses() {
    let hw = demo();
    for a in [0x00u8, 0x02, 0x78, 0x80] {
        check(&hw, I2cAddr::new(a), "address", "0x03-0x77");
        check(
            &hw,
            read(&hw, &format!("0x{a:02x}"), "0", 2),
            "address",
            "0x03-0x77",
        );
    }
    check(&hw, I2cAddr::new(0x78), "address", "10-bit");
    check(&hw, I2cAddr::new(0x00), "address", "reserved");
    for s in ["0x", "zz", "0x1ff", ""] {
        check(&hw, read(&hw, s, "0", 2), "address", "");
    }
}

#[test]
fn bad_lengths() {
    let hw = demo();
    check(&hw, read(&hw, "0x48", "0", 0), "length", "1-256");
    check(&hw, read(&hw, "0x48", "0", 257), "length", "257");
    check(&hw, WriteData::new(vec![0; 257]), "data", "1-256");
    check(&hw, WriteData::new(vec![]), "data", "0 bytes");
    check(&hw, SpiData::new(vec![0; 4097]), "data", "1-4096");
    check(&hw, write(&hw, "0x48", ""), "data", "no bytes");
}

#[test]
fn bad_hex_data() {
    let hw = demo();
    check(&hw, write(&hw, "0x48", "0xZZ"), "data", "0xZZ");
    check(&hw, write(&hw, "0x48", "1 2 3g"), "data", "3g");
    check(&hw, write(&hw, "0x48", "178"), "data", "even");
    check(&hw, write(&hw, "0x48", &"00 ".repeat(257)), "data", "257");
}

#[test]
fn bad_pins() {
    let hw = demo();
    for p in [0, 41, 99] {
        check(&hw, hw.gpio_read(p), "pin", "1-40");
        check(&hw, hw.gpio_write(p, Level::High), "pin", "1-40");
    }
    let e = hw.gpio_read(3).unwrap_err();
    assert!(matches!(e, HwError::Pinmux { pin: 3, .. }), "{e}");
    check(
        &hw,
        hw.gpio_write(3, Level::High),
        "pin",
        "pinmux: pin 3 is I2C1_SDA on sim",
    );
    check(&hw, hw.gpio_read(24), "pin", "SPI0_CE0");
    check(&hw, hw.gpio_read(1), "pin", "pin 1 is 3V3 power");
    check(
        &hw,
        hw.gpio_write(6, Level::Low),
        "pin",
        "pin 6 is GND power",
    );
    check(&hw, Level::parse("maybe"), "level", "maybe");
}

#[test]
fn sim_has_one_bus_and_one_spi_device() {
    let hw = demo();
    let a = I2cAddr::new(0x48).unwrap();
    let len = ReadLen::new(2).unwrap();
    check(
        &hw,
        hw.i2c_read(Some(1), a, Some(0), len),
        "bus",
        "one I2C bus",
    );
    check(&hw, hw.i2c_scan(Some(7)), "bus", "sim-i2c");
    let tx = SpiData::new(vec![1]).unwrap();
    check(&hw, hw.spi_transfer(Some((1, 0)), &tx), "device", "0.0");
    // Bus 0 and the default are the same bus.
    assert!(hw.i2c_read(Some(0), a, Some(0), len).is_ok());
    assert!(hw.i2c_read(None, a, Some(0), len).is_ok());
}
