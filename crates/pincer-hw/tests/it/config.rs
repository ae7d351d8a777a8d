//! `[hardware]` parsing: defaults, and errors that name the dotted field.

use pincer_hw::{HardwareConfig, HwError, I2cAddr, SimBoard, SimConfig, SimModel};

use crate::parse_cfg;

/// Parsing `body` fails on `field`, mentioning `needle`.
fn check(body: &str, field: &str, needle: &str) {
    let e = parse_cfg(body).expect_err(body);
    assert!(matches!(e, HwError::Config { .. }), "{e}");
    assert_eq!(e.field(), Some(field), "{e}");
    assert!(
        e.to_string().contains(needle),
        "{e} should mention {needle:?}"
    );
}

#[test]
fn defaults() {
    let d = HardwareConfig::from_toml(None).unwrap();
    assert_eq!(d.board, "auto");
    assert_eq!(d.camera_min_interval_ms, 2000);
    assert_eq!((d.i2c_bus, d.spi_device), (None, None));
    assert_eq!(d.sim, SimConfig::default());
    let kinds: Vec<(u8, &str)> = d
        .sim
        .devices
        .iter()
        .map(|d| (d.address.get(), d.model.kind()))
        .collect();
    assert_eq!(
        kinds,
        [(0x48, "tmp102"), (0x49, "pressure"), (0x4A, "humidity")]
    );
    // An empty table is the same as none.
    assert_eq!(parse_cfg("").unwrap().sim, SimConfig::default());
}

#[test]
fn full_table() {
    let c = parse_cfg(
        r#"
board = "rpi"
i2c_bus = 3
spi_device = "1.2"
camera_min_interval_ms = 0
[hardware.sim]
devices = [
  { address = "0x48", kind = "tmp102", celsius = -4 },
  { address = 80, kind = "registers" },
]
gpio = [{ pin = 7, level = "high" }, { pin = 40, level = 0 }]
"#,
    )
    .unwrap();
    assert_eq!(c.board, "rpi");
    assert_eq!(c.i2c_bus, Some(3));
    assert_eq!(c.spi_device, Some((1, 2)));
    assert_eq!(c.camera_min_interval_ms, 0);
    assert_eq!(c.sim.devices[0].model, SimModel::Tmp102 { celsius: -4.0 });
    assert_eq!(c.sim.devices[1].address, I2cAddr::new(0x50).unwrap());
    assert_eq!(c.sim.gpio.len(), 2);
    assert_eq!(
        parse_cfg("spi_device = [0, 1]").unwrap().spi_device,
        Some((0, 1))
    );
    // An explicit empty device list is an empty bus, not the demo.
    let empty = parse_cfg("[hardware.sim]\ndevices = []").unwrap();
    assert!(empty.sim.devices.is_empty());
}

#[test]
fn errors_name_the_field() {
    check("colour = 1", "hardware.colour", "unknown key");
    check(
        "board = \"beaglebone\"",
        "hardware.board",
        "sim, jetson, rpi, auto",
    );
    check("board = 3", "hardware.board", "expected a string");
    check("i2c_bus = 300", "hardware.i2c_bus", "0..=255");
    check("spi_device = \"zero\"", "hardware.spi_device", "B.C");
    // TOML has nan and inf; a sim value must be a real reading.
    for (value, key) in [("nan", "celsius"), ("inf", "celsius"), ("-inf", "celsius")] {
        check(
            &format!(
                "[hardware.sim]\ndevices = [{{ address = \"0x48\", kind = \"tmp102\", {key} = {value} }}]"
            ),
            &format!("hardware.sim.devices[0].{key}"),
            "must be a finite number",
        );
    }
    check(
        "[hardware.sim]\ndevices = [{ address = \"0x49\", kind = \"pressure\", hpa = nan }]",
        "hardware.sim.devices[0].hpa",
        "must be a finite number",
    );
    // u8::from_str would take a leading '+': B.C is ASCII digits only.
    for signed in ["+0.+0", "+0.0", "0.+1", " 0.0", "0.0 "] {
        check(
            &format!("spi_device = \"{signed}\""),
            "hardware.spi_device",
            "B.C",
        );
    }
    check(
        "camera_min_interval_ms = -1",
        "hardware.camera_min_interval_ms",
        "0 or more",
    );
    check("[hardware.sim]\nfoo = 1", "hardware.sim.foo", "unknown key");
    check("sim = 1", "hardware.sim", "expected a table");
    let dev = |d: &str| {
        format!("[hardware.sim]\ndevices = [{{ address = \"0x48\", kind = \"tmp102\" }}, {d}]")
    };
    check(
        &dev("{ address = \"0x80\", kind = \"tmp102\" }"),
        "hardware.sim.devices[1].address",
        "0x03-0x77",
    );
    check(
        &dev("{ address = \"zz\", kind = \"tmp102\" }"),
        "hardware.sim.devices[1].address",
        "zz",
    );
    check(
        &dev("{ address = 300, kind = \"tmp102\" }"),
        "hardware.sim.devices[1].address",
        "300",
    );
    check(
        &dev("{ kind = \"tmp102\" }"),
        "hardware.sim.devices[1].address",
        "missing",
    );
    check(
        &dev("{ address = \"0x49\", kind = \"bmp280\" }"),
        "hardware.sim.devices[1].kind",
        "unknown kind",
    );
    check(
        &dev("{ address = \"0x49\" }"),
        "hardware.sim.devices[1].kind",
        "missing",
    );
    check(
        &dev("{ address = \"0x49\", kind = \"tmp102\", celsius = \"warm\" }"),
        "hardware.sim.devices[1].celsius",
        "expected a number",
    );
    check(
        &dev("{ address = \"0x49\", kind = \"tmp102\", celsius = 500.0 }"),
        "hardware.sim.devices[1].celsius",
        "outside",
    );
    check(
        &dev("{ address = \"0x49\", kind = \"tmp102\", hpa = 1000 }"),
        "hardware.sim.devices[1].hpa",
        "unknown key",
    );
    check(
        &dev("{ address = \"0x48\", kind = \"humidity\" }"),
        "hardware.sim.devices[1].address",
        "already used",
    );
    check(
        &dev("{ address = \"0x50\", kind = \"registers\", registers = { \"0x100\" = 1 } }"),
        "hardware.sim.devices[1].registers.0x100",
        "0x100",
    );
    check(
        &dev("{ address = \"0x50\", kind = \"registers\", registers = { \"0x01\" = \"0xZZ\" } }"),
        "hardware.sim.devices[1].registers.0x01",
        "0xZZ",
    );
}

#[test]
fn gpio_errors_name_the_field() {
    check(
        "[hardware.sim]\ngpio = [{ pin = 7 }, { pin = 3, level = 1 }]",
        "hardware.sim.gpio[1].pin",
        "pinmux",
    );
    check(
        "[hardware.sim]\ngpio = [{ pin = 1, level = 1 }]",
        "hardware.sim.gpio[0].pin",
        "3V3 power",
    );
    check(
        "[hardware.sim]\ngpio = [{ pin = 41 }]",
        "hardware.sim.gpio[0].pin",
        "1-40",
    );
    check(
        "[hardware.sim]\ngpio = [{ level = 1 }]",
        "hardware.sim.gpio[0].pin",
        "missing",
    );
    check(
        "[hardware.sim]\ngpio = [{ pin = 7, level = 2 }]",
        "hardware.sim.gpio[0].level",
        "0/1",
    );
    check(
        "[hardware.sim]\ngpio = [{ pin = 7, lvl = 1 }]",
        "hardware.sim.gpio[0].lvl",
        "unknown key",
    );
    check(
        "[hardware.sim]\ngpio = [{ pin = 7 }, { pin = 7 }]",
        "hardware.sim.gpio[1].pin",
        "already",
    );
}

#[test]
fn sim_board_validates_hand_built_configs() {
    let mut cfg = SimConfig::default();
    cfg.devices.push(cfg.devices[0].clone());
    let e = SimBoard::new(&cfg).unwrap_err();
    assert_eq!(e.field(), Some("hardware.sim.devices[3].address"), "{e}");
    let mut cfg = SimConfig::default();
    cfg.devices[1].model = SimModel::Pressure { hpa: f64::NAN };
    let e = SimBoard::new(&cfg).unwrap_err();
    assert_eq!(e.field(), Some("hardware.sim.devices[1].hpa"), "{e}");
    assert!(e.to_string().contains("must be a finite number"), "{e}");
}
