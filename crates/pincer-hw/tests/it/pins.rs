//! Pin tables: complete, unique, and every GPIO pin resolves.

use std::collections::BTreeSet;

use pincer_hw::{Board, BoardKind, HwError, PinFunction};

fn boards() -> [Board; 3] {
    [
        Board::sim(),
        Board::rpi_zero_2w(),
        Board::jetson_orin_nano(),
    ]
}

#[test]
fn every_header_pin_once() {
    for b in boards() {
        let pins: Vec<u32> = b.pins.iter().map(|p| p.pin).collect();
        let unique: BTreeSet<u32> = pins.iter().copied().collect();
        assert_eq!(unique.len(), pins.len(), "{}: duplicate pin", b.name);
        assert_eq!(unique, (1..=40).collect(), "{}", b.name);
    }
}

#[test]
fn every_gpio_pin_resolves_and_lines_are_unique() {
    for b in boards() {
        let mut lines = BTreeSet::new();
        for def in b.pins {
            match (&def.function, b.gpio_pin(def.pin)) {
                (PinFunction::Gpio { chip, line, name }, Ok(g)) => {
                    assert_eq!((g.chip(), g.line(), g.name()), (*chip, *line, *name));
                    assert!(
                        lines.insert((*chip, *line)),
                        "{}: line {line} twice",
                        b.name
                    );
                }
                (
                    PinFunction::Special(f),
                    Err(HwError::Pinmux {
                        function, board, ..
                    }),
                ) => {
                    assert_eq!((function.as_str(), board.as_str()), (*f, b.name));
                }
                (PinFunction::Power(_), Err(HwError::Invalid { field: "pin", .. })) => {}
                (f, r) => panic!("{}: pin {} {f:?} gave {r:?}", b.name, def.pin),
            }
        }
    }
}

#[test]
fn the_pi_header() {
    let b = Board::rpi_zero_2w();
    let bcm: Vec<(u32, u32)> = b
        .gpio_pins()
        .iter()
        .map(|p| (*p, b.gpio_pin(*p).unwrap().line()))
        .collect();
    assert_eq!(
        bcm,
        [
            (7, 4),
            (11, 17),
            (12, 18),
            (13, 27),
            (15, 22),
            (16, 23),
            (18, 24),
            (22, 25),
            (29, 5),
            (31, 6),
            (32, 12),
            (33, 13),
            (35, 19),
            (36, 16),
            (37, 26),
            (38, 20),
            (40, 21)
        ]
    );
    assert_eq!(b.gpio_pin(7).unwrap().chip(), "pinctrl-bcm2835");
    for p in [3, 5, 8, 10, 19, 21, 23, 24, 26, 27, 28] {
        assert!(
            matches!(b.gpio_pin(p), Err(HwError::Pinmux { .. })),
            "pin {p}"
        );
    }
    let e = b.gpio_pin(8).unwrap_err().to_string();
    assert!(
        e.contains("UART0_TXD") && e.contains("raspi-config") && e.contains("7, 11, 13"),
        "{e}"
    );
}

#[test]
fn the_jetson_header() {
    let b = Board::jetson_orin_nano();
    assert_eq!(b.kind, BoardKind::JetsonOrinNano);
    assert_eq!(b.i2c_default, Some("/dev/i2c-7"));
    let g = |p| {
        let g = b.gpio_pin(p).unwrap();
        (g.name().to_string(), g.line())
    };
    assert_eq!(g(7), ("PAC.06".to_string(), 144));
    assert_eq!(g(15), ("PN.01".to_string(), 85));
    assert_eq!(g(32), ("PG.06".to_string(), 41));
    assert_eq!(g(40), ("PI.00".to_string(), 51));
    assert_eq!(b.gpio_pins().len(), 22);
    for p in [3, 5, 8, 10, 27, 28] {
        assert!(
            matches!(b.gpio_pin(p), Err(HwError::Pinmux { .. })),
            "pin {p}"
        );
    }
    assert!(b.gpio_pin(3).unwrap_err().to_string().contains("jetson-io"));
}
