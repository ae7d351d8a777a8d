//! A Linux board's `Hardware` on a machine without its buses: devices open
//! lazily, so only the operation that needs a missing node fails, with an
//! error naming it. (The transfers themselves are exercised in a VM with
//! i2c-stub and gpio-sim, not here.) Bus numbers are chosen so that no real
//! device is touched even on a real board.

use pincer_hw::{
    Board, DetectSource, Detection, Hardware, HwError, I2cAddr, ReadLen, SpiData, WriteData,
};

use crate::parse_cfg;

fn board_hw(board: Board, cfg_body: &str) -> Hardware {
    let detection = Detection {
        board,
        source: DetectSource::Env {
            value: "test".into(),
        },
        warning: None,
    };
    Hardware::open(&parse_cfg(cfg_body).unwrap(), detection).unwrap()
}

fn io_naming(r: Result<impl std::fmt::Debug, HwError>, device: &str) {
    match r {
        Err(HwError::Io {
            op: "open",
            device: d,
            ..
        }) => assert_eq!(d, device),
        other => panic!("expected an open error on {device}, got {other:?}"),
    }
}

#[test]
fn defaults_come_from_the_board_or_config() {
    let j = board_hw(Board::jetson_orin_nano(), "");
    assert!(j.sim().is_none());
    assert_eq!(j.default_i2c_bus(), Some(7));
    assert_eq!(j.default_spi_device(), Some((0, 0)));
    let p = board_hw(
        Board::rpi_zero_2w(),
        "i2c_bus = 250\nspi_device = \"250.1\"",
    );
    assert_eq!(p.default_i2c_bus(), Some(250));
    assert_eq!(p.default_spi_device(), Some((250, 1)));
}

#[test]
fn missing_nodes_fail_only_their_operation() {
    let hw = board_hw(Board::rpi_zero_2w(), "i2c_bus = 250");
    let a = I2cAddr::new(0x48).unwrap();
    io_naming(hw.i2c_scan(None), "/dev/i2c-250");
    io_naming(hw.i2c_scan(Some(251)), "/dev/i2c-251");
    io_naming(
        hw.i2c_read(None, a, Some(0), ReadLen::new(2).unwrap()),
        "/dev/i2c-250",
    );
    io_naming(
        hw.i2c_write(None, a, &WriteData::new(vec![0]).unwrap()),
        "/dev/i2c-250",
    );
    io_naming(
        hw.spi_transfer(Some((250, 0)), &SpiData::new(vec![1]).unwrap()),
        "/dev/spidev250.0",
    );
    // Validation still comes first on a real board.
    assert!(matches!(hw.gpio_read(3), Err(HwError::Pinmux { .. })));
    assert_eq!(hw.gpio_read(41).unwrap_err().field(), Some("pin"));
    // info() reports the unopenable bus instead of failing.
    let info = hw.info();
    assert_eq!(info["board"]["kind"], "rpi-zero2-w");
    assert_eq!(info["backend"], "linux");
    assert!(
        info["i2c"]["error"]
            .as_str()
            .unwrap()
            .contains("/dev/i2c-250"),
        "{info}"
    );
    assert_eq!(info["i2c_default"], "/dev/i2c-250");
    assert!(hw.decode(a, Some(0), &[0x17, 0x80]).is_none());
}
