//! The simulated board: TMP102 register accuracy, the demo sensors, SPI
//! loopback, GPIO, and the transaction record.

use pincer_hw::{
    Hardware, HardwareConfig, HwError, I2cAddr, Level, ReadLen, SimTransaction, SpiData,
    TransferPath, WriteData, hex_string,
};

use crate::{demo, parse_cfg, sim_hw};

fn addr(a: u8) -> I2cAddr {
    I2cAddr::new(a).unwrap()
}

/// Reads `len` bytes (register or pointer) and returns them as "17 80".
fn rd(hw: &Hardware, a: u8, register: Option<u8>, len: usize) -> String {
    let r = hw
        .i2c_read(None, addr(a), register, ReadLen::new(len).unwrap())
        .unwrap();
    assert_eq!(r.path, TransferPath::Sim);
    hex_string(&r.data)
}

fn wr(hw: &Hardware, a: u8, data: &[u8]) {
    let p = hw
        .i2c_write(None, addr(a), &WriteData::new(data.to_vec()).unwrap())
        .unwrap();
    assert_eq!(p, TransferPath::Sim);
}

fn tmp102_at(celsius: f64) -> Hardware {
    sim_hw(
        &parse_cfg(&format!(
            "[hardware.sim]\ndevices = [{{ address = \"0x48\", kind = \"tmp102\", celsius = {celsius:?} }}]"
        ))
        .unwrap(),
    )
}

#[test]
fn tmp102_temperature_encoding() {
    for (c, bytes, text) in [
        (23.5, "17 80", "23.5 °C"),
        (-25.0, "e7 00", "-25 °C"),
        (0.0625, "00 10", "0.0625 °C"),
        (0.0, "00 00", "0 °C"),
        (-0.0625, "ff f0", "-0.0625 °C"),
        (127.9375, "7f f0", "127.9375 °C"),
    ] {
        let hw = tmp102_at(c);
        assert_eq!(rd(&hw, 0x48, Some(0x00), 2), bytes, "{c} °C");
        let data = hw
            .i2c_read(None, addr(0x48), Some(0), ReadLen::new(2).unwrap())
            .unwrap()
            .data;
        assert_eq!(hw.decode(addr(0x48), Some(0), &data).as_deref(), Some(text));
    }
}

#[test]
fn tmp102_registers_and_pointer() {
    let hw = tmp102_at(23.5);
    // Power-on values.
    assert_eq!(rd(&hw, 0x48, Some(0x01), 2), "60 a0");
    assert_eq!(rd(&hw, 0x48, Some(0x02), 2), "4b 00");
    assert_eq!(rd(&hw, 0x48, Some(0x03), 2), "50 00");
    // The pointer stays at the last register: a plain read reads T_HIGH.
    assert_eq!(rd(&hw, 0x48, None, 2), "50 00");
    // Writing only the pointer selects the register for plain reads.
    wr(&hw, 0x48, &[0x00]);
    assert_eq!(rd(&hw, 0x48, None, 2), "17 80");
    assert_eq!(
        hw.decode(addr(0x48), None, &[0x17, 0x80]).as_deref(),
        Some("23.5 °C")
    );
    // Longer reads repeat the register; a 1-byte read is the MSB.
    assert_eq!(rd(&hw, 0x48, Some(0x00), 4), "17 80 17 80");
    assert_eq!(rd(&hw, 0x48, Some(0x00), 1), "17");
    // Writing the temperature register is ignored, like the chip.
    wr(&hw, 0x48, &[0x00, 0x12, 0x34]);
    assert_eq!(rd(&hw, 0x48, None, 2), "17 80");
    // Config write/read back: read-only bits (R1 R0, AL) keep their values.
    wr(&hw, 0x48, &[0x01, 0x60, 0xB0]); // EM = 1: extended 13-bit mode
    assert_eq!(rd(&hw, 0x48, Some(0x01), 2), "60 b0");
    assert_eq!(rd(&hw, 0x48, Some(0x00), 2), "0b c1"); // 23.5 °C in 13-bit format
    assert_eq!(
        hw.decode(addr(0x48), Some(0), &[0x0B, 0xC1]).as_deref(),
        Some("23.5 °C")
    );
    wr(&hw, 0x48, &[0x01, 0x00, 0x00]);
    assert_eq!(rd(&hw, 0x48, Some(0x01), 2), "60 20");
    // Limits are writable and decode.
    wr(&hw, 0x48, &[0x02, 0x19, 0x00]);
    assert_eq!(rd(&hw, 0x48, Some(0x02), 2), "19 00");
    assert_eq!(
        hw.decode(addr(0x48), Some(2), &[0x19, 0x00]).as_deref(),
        Some("T_LOW 25 °C")
    );
    // Config is not a reading.
    assert_eq!(hw.decode(addr(0x48), Some(1), &[0x60, 0xA0]), None);
    assert_eq!(hw.decode(addr(0x48), Some(0), &[0x17]), None);
}

#[test]
fn default_board_scan_and_readings() {
    let hw = demo();
    let (info, found) = hw.i2c_scan(None).unwrap();
    assert_eq!(info.name, "sim-i2c");
    assert_eq!(info.backend, "sim");
    assert_eq!(found, vec![addr(0x48), addr(0x49), addr(0x4A)]);
    assert_eq!(
        serde_json::to_string(&found).unwrap(),
        r#"["0x48","0x49","0x4a"]"#
    );
    for (a, text) in [(0x48, "23.5 °C"), (0x49, "1013 hPa"), (0x4A, "45 %")] {
        let r = hw
            .i2c_read(None, addr(a), Some(0), ReadLen::new(2).unwrap())
            .unwrap();
        assert_eq!(
            hw.decode(addr(a), Some(0), &r.data).as_deref(),
            Some(text),
            "0x{a:02x}"
        );
    }
    assert_eq!(rd(&hw, 0x49, Some(0x0F), 1), "50");
    assert_eq!(rd(&hw, 0x4A, Some(0x00), 3), "11 94 ff");
    assert_eq!(hw.default_i2c_bus(), None);
}

#[test]
fn plain_reads_decode_like_register_reads() {
    // `pincer hw read 0x49 --len 2`: no register, so the read starts at the
    // pointer (0) and leaves it at 2; the decoding is still the pressure.
    let hw = demo();
    for (a, text) in [(0x48, "23.5 °C"), (0x49, "1013 hPa"), (0x4A, "45 %")] {
        let r = hw
            .i2c_read(None, addr(a), None, ReadLen::new(2).unwrap())
            .unwrap();
        assert_eq!(
            hw.decode(addr(a), None, &r.data).as_deref(),
            Some(text),
            "0x{a:02x}"
        );
    }
}

#[test]
fn transactions_record_everything_in_order() {
    let hw = demo();
    let sim = hw.sim().unwrap();
    hw.i2c_scan(None).unwrap();
    let e = hw
        .i2c_read(None, addr(0x50), Some(0), ReadLen::new(1).unwrap())
        .unwrap_err();
    assert!(matches!(e, HwError::NoDevice { .. }), "{e}");
    assert_eq!(e.to_string(), "sim-i2c: no device answered at 0x50");
    let e = hw
        .i2c_write(None, addr(0x51), &WriteData::new(vec![1]).unwrap())
        .unwrap_err();
    assert!(matches!(e, HwError::NoDevice { .. }));
    wr(&hw, 0x48, &[0x01]);
    hw.spi_transfer(None, &SpiData::new(vec![1, 2, 3]).unwrap())
        .unwrap();
    hw.gpio_write(7, Level::High).unwrap();
    hw.gpio_read(7).unwrap();
    assert_eq!(
        sim.transactions(),
        vec![
            SimTransaction::I2cScan,
            SimTransaction::I2cRead {
                addr: 0x50,
                register: Some(0),
                len: 1
            },
            SimTransaction::I2cWrite {
                addr: 0x51,
                data: vec![1]
            },
            SimTransaction::I2cWrite {
                addr: 0x48,
                data: vec![1]
            },
            SimTransaction::SpiTransfer { len: 3 },
            SimTransaction::GpioWrite {
                pin: 7,
                level: Level::High
            },
            SimTransaction::GpioRead { pin: 7 },
        ]
    );
    assert_eq!(
        serde_json::to_value(&sim.transactions()[1]).unwrap(),
        serde_json::json!({"op": "i2c_read", "addr": 0x50, "register": 0, "len": 1})
    );
}

#[test]
fn spi_loopback() {
    let hw = demo();
    let tx: Vec<u8> = (0..=255).cycle().take(4096).collect();
    let rx = hw
        .spi_transfer(None, &SpiData::new(tx.clone()).unwrap())
        .unwrap();
    assert_eq!(rx, tx);
    assert_eq!(
        hw.spi_transfer(Some((0, 0)), &SpiData::new(vec![0xA5]).unwrap())
            .unwrap(),
        [0xA5]
    );
}

#[test]
fn gpio_round_trip_and_initial_levels() {
    let cfg = parse_cfg("[hardware.sim]\ngpio = [{ pin = 11, level = 1 }]").unwrap();
    let hw = sim_hw(&cfg);
    let (pin, level) = hw.gpio_read(11).unwrap();
    assert_eq!(
        (pin.name(), pin.chip(), pin.line(), level),
        ("GPIO17", "sim", 17, Level::High)
    );
    // Private fields, same JSON as before.
    assert_eq!(
        serde_json::to_value(&pin).unwrap(),
        serde_json::json!({"pin": 11, "name": "GPIO17", "chip": "sim", "line": 17})
    );
    assert_eq!(hw.gpio_read(13).unwrap().1, Level::Low);
    let p = hw.gpio_write(13, Level::High).unwrap();
    assert_eq!(p.line(), 27);
    assert_eq!(hw.gpio_read(13).unwrap().1, Level::High);
    hw.gpio_write(13, Level::Low).unwrap();
    assert_eq!(hw.gpio_read(13).unwrap().1, Level::Low);
    // The demo devices are still there: no `devices` key → demo sensors.
    assert_eq!(hw.i2c_scan(None).unwrap().1.len(), 3);
}

#[test]
fn register_map_device() {
    let cfg = parse_cfg(
        "[hardware.sim]\ndevices = [{ address = \"0x50\", kind = \"registers\", registers = { \"0x00\" = \"0x12\", \"0x01\" = \"0x34\", \"2\" = 86 } }]",
    )
    .unwrap();
    let hw = sim_hw(&cfg);
    assert_eq!(hw.i2c_scan(None).unwrap().1, vec![addr(0x50)]);
    assert_eq!(rd(&hw, 0x50, Some(0), 4), "12 34 56 ff");
    wr(&hw, 0x50, &[0x03, 0xAB, 0xCD]);
    assert_eq!(rd(&hw, 0x50, Some(2), 4), "56 ab cd ff");
    // Auto-increment continues from where the last read stopped.
    assert_eq!(rd(&hw, 0x50, Some(0), 1), "12");
    assert_eq!(rd(&hw, 0x50, None, 1), "34");
    assert_eq!(hw.decode(addr(0x50), Some(0), &[0x12, 0x34]), None);
}

#[test]
fn clones_share_state_and_info_reports_the_sim() {
    let hw = demo();
    let a = hw.sim().unwrap().clone();
    assert!(a.set_celsius(addr(0x48), -10.0));
    assert!(!a.set_celsius(addr(0x49), 1.0));
    assert_eq!(rd(&hw, 0x48, Some(0), 2), "f6 00");
    hw.sim().unwrap().clear_transactions();
    let info = hw.info();
    assert_eq!(info["board"]["kind"], "sim");
    assert_eq!(info["backend"], "sim");
    assert_eq!(info["i2c"]["name"], "sim-i2c");
    assert_eq!(info["i2c"]["detail"]["devices"][0]["kind"], "tmp102");
    assert_eq!(info["detection"]["source"], "config");
    assert!(
        info["pins"]["special"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["pin"] == 3)
    );
    // info() did not touch a bus.
    assert!(hw.sim().unwrap().transactions().is_empty());
}

#[test]
fn hardware_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Hardware>();
    let _ = HardwareConfig::default();
}
