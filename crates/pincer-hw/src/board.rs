//! Boards, their 40-pin header tables, and board detection (HW2, HW3).
//!
//! Where the pin facts come from:
//! - Raspberry Pi Zero 2 W: the standard Raspberry Pi 40-pin header (BCM
//!   numbering) as documented by the Raspberry Pi GPIO pinout docs; the
//!   lines live on the gpiochip labelled "pinctrl-bcm2835" (BCM2837 uses the
//!   bcm2835 pin controller driver), line offset = BCM number. Pins 3/5
//!   (I2C1), 8/10 (UART0), 19/21/23/24/26 (SPI0) and 27/28 (HAT ID EEPROM)
//!   are special-function.
//! - Jetson Orin Nano developer kit (p3768 carrier + p3767 module,
//!   tegra234, JetPack 6): line offsets and port names from NVIDIA's
//!   Jetson.GPIO pin data (`JETSON_ORIN_NX_PIN_DEFS`, shared by Orin NX and
//!   Orin Nano; chip "tegra234-gpio"), cross-checked against Adafruit
//!   Blinka's `jetson_orin_nx` board file (same port per BCM pin). Pins 3/5
//!   are I2C1 (/dev/i2c-7), 27/28 I2C0 (/dev/i2c-1), 8/10 UART1. The SPI0
//!   header pins (19/21/23/24/26) are GPIO in the stock pinmux, as in
//!   Jetson.GPIO; jetson-io switches them to SPI.
//! - The sim board mirrors the Pi header (same special pins) on a chip
//!   labelled "sim".

use std::path::Path;

use serde::Serialize;

use crate::error::HwError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BoardKind {
    Sim,
    JetsonOrinNano,
    RpiZero2W,
}

/// What a header pin does in the board's default pinmux.
#[derive(Debug, Clone, Serialize)]
pub enum PinFunction {
    /// A GPIO line: `chip` is the gpiochip *label*, `line` its offset.
    Gpio {
        chip: &'static str,
        line: u32,
        name: &'static str,
    },
    /// A special function such as "I2C1_SDA".
    Special(&'static str),
    /// "3V3", "5V", "GND".
    Power(&'static str),
}

#[derive(Debug, Clone, Serialize)]
pub struct PinDef {
    pub pin: u32,
    pub function: PinFunction,
}

/// A header pin resolved to a GPIO line through a board's pin table.
///
/// Only [`Board::gpio_pin`] makes one (the fields are private), so a GPIO
/// backend can only be handed a line that some board's table lists as a
/// GPIO, never a chip and line made up by a caller:
///
/// ```compile_fail
/// let pin = pincer_hw::GpioPin {
///     pin: 7,
///     name: "GPIO4".to_string(),
///     chip: "/dev/gpiochip0".to_string(),
///     line: 4,
/// };
/// ```
///
/// ```
/// let pin = pincer_hw::Board::rpi_zero_2w().gpio_pin(7).unwrap();
/// assert_eq!((pin.pin(), pin.name(), pin.chip(), pin.line()), (7, "GPIO4", "pinctrl-bcm2835", 4));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpioPin {
    pin: u32,
    name: String,
    chip: String,
    line: u32,
}

impl GpioPin {
    /// For `Board::gpio_pin` and this crate's tests only.
    pub(crate) fn new(pin: u32, name: &str, chip: &str, line: u32) -> GpioPin {
        GpioPin {
            pin,
            name: name.to_string(),
            chip: chip.to_string(),
            line,
        }
    }

    /// The header pin number (1-40).
    pub fn pin(&self) -> u32 {
        self.pin
    }

    /// The line's name on the board ("GPIO4", "PAC.06").
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The gpiochip label ("pinctrl-bcm2835", "tegra234-gpio").
    pub fn chip(&self) -> &str {
        &self.chip
    }

    /// The line offset on that chip.
    pub fn line(&self) -> u32 {
        self.line
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Board {
    pub kind: BoardKind,
    pub name: &'static str,
    pub pins: &'static [PinDef],
    /// Default I2C bus device, e.g. "/dev/i2c-1"; None for the sim.
    pub i2c_default: Option<&'static str>,
    /// Default SPI device, e.g. "/dev/spidev0.0"; None for the sim.
    pub spi_default: Option<&'static str>,
}

const fn gpio(pin: u32, chip: &'static str, line: u32, name: &'static str) -> PinDef {
    PinDef {
        pin,
        function: PinFunction::Gpio { chip, line, name },
    }
}
const fn special(pin: u32, f: &'static str) -> PinDef {
    PinDef {
        pin,
        function: PinFunction::Special(f),
    }
}
const fn power(pin: u32, p: &'static str) -> PinDef {
    PinDef {
        pin,
        function: PinFunction::Power(p),
    }
}

/// The Raspberry Pi 40-pin header on gpiochip `$chip` (line = BCM number).
macro_rules! pi_header {
    ($chip:expr) => {
        [
            power(1, "3V3"),
            power(2, "5V"),
            special(3, "I2C1_SDA"),
            power(4, "5V"),
            special(5, "I2C1_SCL"),
            power(6, "GND"),
            gpio(7, $chip, 4, "GPIO4"),
            special(8, "UART0_TXD"),
            power(9, "GND"),
            special(10, "UART0_RXD"),
            gpio(11, $chip, 17, "GPIO17"),
            gpio(12, $chip, 18, "GPIO18"),
            gpio(13, $chip, 27, "GPIO27"),
            power(14, "GND"),
            gpio(15, $chip, 22, "GPIO22"),
            gpio(16, $chip, 23, "GPIO23"),
            power(17, "3V3"),
            gpio(18, $chip, 24, "GPIO24"),
            special(19, "SPI0_MOSI"),
            power(20, "GND"),
            special(21, "SPI0_MISO"),
            gpio(22, $chip, 25, "GPIO25"),
            special(23, "SPI0_SCLK"),
            special(24, "SPI0_CE0"),
            power(25, "GND"),
            special(26, "SPI0_CE1"),
            special(27, "ID_SD"),
            special(28, "ID_SC"),
            gpio(29, $chip, 5, "GPIO5"),
            power(30, "GND"),
            gpio(31, $chip, 6, "GPIO6"),
            gpio(32, $chip, 12, "GPIO12"),
            gpio(33, $chip, 13, "GPIO13"),
            power(34, "GND"),
            gpio(35, $chip, 19, "GPIO19"),
            gpio(36, $chip, 16, "GPIO16"),
            gpio(37, $chip, 26, "GPIO26"),
            gpio(38, $chip, 20, "GPIO20"),
            power(39, "GND"),
            gpio(40, $chip, 21, "GPIO21"),
        ]
    };
}

static RPI_PINS: [PinDef; 40] = pi_header!("pinctrl-bcm2835");
static SIM_PINS: [PinDef; 40] = pi_header!("sim");

const TEGRA: &str = "tegra234-gpio";
static JETSON_PINS: [PinDef; 40] = [
    power(1, "3V3"),
    power(2, "5V"),
    special(3, "I2C1_SDA"),
    power(4, "5V"),
    special(5, "I2C1_SCL"),
    power(6, "GND"),
    gpio(7, TEGRA, 144, "PAC.06"),
    special(8, "UART1_TXD"),
    power(9, "GND"),
    special(10, "UART1_RXD"),
    gpio(11, TEGRA, 112, "PR.04"),
    gpio(12, TEGRA, 50, "PH.07"),
    gpio(13, TEGRA, 122, "PY.00"),
    power(14, "GND"),
    gpio(15, TEGRA, 85, "PN.01"),
    gpio(16, TEGRA, 126, "PY.04"),
    power(17, "3V3"),
    gpio(18, TEGRA, 125, "PY.03"),
    gpio(19, TEGRA, 135, "PZ.05"),
    power(20, "GND"),
    gpio(21, TEGRA, 134, "PZ.04"),
    gpio(22, TEGRA, 123, "PY.01"),
    gpio(23, TEGRA, 133, "PZ.03"),
    gpio(24, TEGRA, 136, "PZ.06"),
    power(25, "GND"),
    gpio(26, TEGRA, 137, "PZ.07"),
    special(27, "I2C0_SDA"),
    special(28, "I2C0_SCL"),
    gpio(29, TEGRA, 105, "PQ.05"),
    power(30, "GND"),
    gpio(31, TEGRA, 106, "PQ.06"),
    gpio(32, TEGRA, 41, "PG.06"),
    gpio(33, TEGRA, 43, "PH.00"),
    power(34, "GND"),
    gpio(35, TEGRA, 53, "PI.02"),
    gpio(36, TEGRA, 113, "PR.05"),
    gpio(37, TEGRA, 124, "PY.02"),
    gpio(38, TEGRA, 52, "PI.01"),
    power(39, "GND"),
    gpio(40, TEGRA, 51, "PI.00"),
];

impl Board {
    pub fn sim() -> Board {
        Board {
            kind: BoardKind::Sim,
            name: "sim",
            pins: &SIM_PINS,
            i2c_default: None,
            spi_default: None,
        }
    }

    pub fn jetson_orin_nano() -> Board {
        Board {
            kind: BoardKind::JetsonOrinNano,
            name: "Jetson Orin Nano",
            pins: &JETSON_PINS,
            i2c_default: Some("/dev/i2c-7"),
            spi_default: Some("/dev/spidev0.0"),
        }
    }

    pub fn rpi_zero_2w() -> Board {
        Board {
            kind: BoardKind::RpiZero2W,
            name: "Raspberry Pi Zero 2 W",
            pins: &RPI_PINS,
            i2c_default: Some("/dev/i2c-1"),
            spi_default: Some("/dev/spidev0.0"),
        }
    }

    pub fn from_kind(kind: BoardKind) -> Board {
        match kind {
            BoardKind::Sim => Board::sim(),
            BoardKind::JetsonOrinNano => Board::jetson_orin_nano(),
            BoardKind::RpiZero2W => Board::rpi_zero_2w(),
        }
    }

    /// Header pin numbers that are GPIO lines, ascending.
    pub fn gpio_pins(&self) -> Vec<u32> {
        self.pins
            .iter()
            .filter(|p| matches!(p.function, PinFunction::Gpio { .. }))
            .map(|p| p.pin)
            .collect()
    }

    /// Resolves a header pin to its GPIO line.
    ///
    /// Unknown pin → Invalid{field:"pin"} listing the valid range; Special →
    /// Pinmux with a hint; Power → Invalid{field:"pin"} ("pin 1 is 3V3 power").
    pub fn gpio_pin(&self, pin: u32) -> Result<GpioPin, HwError> {
        let Some(def) = self.pins.iter().find(|p| p.pin == pin) else {
            let (lo, hi) = (
                self.pins.iter().map(|p| p.pin).min().unwrap_or(1),
                self.pins.iter().map(|p| p.pin).max().unwrap_or(40),
            );
            return Err(HwError::invalid(
                "pin",
                format!(
                    "pin {pin} is not on the {} header; header pins are {lo}-{hi} (GPIO pins: {})",
                    self.name,
                    self.gpio_list()
                ),
            ));
        };
        match &def.function {
            PinFunction::Gpio { chip, line, name } => Ok(GpioPin::new(pin, name, chip, *line)),
            PinFunction::Special(f) => Err(HwError::Pinmux {
                pin,
                function: (*f).to_string(),
                board: self.name.to_string(),
                hint: self.pinmux_hint(),
            }),
            PinFunction::Power(p) => Err(HwError::invalid(
                "pin",
                format!(
                    "pin {pin} is {p} power, not a GPIO; GPIO pins: {}",
                    self.gpio_list()
                ),
            )),
        }
    }

    fn gpio_list(&self) -> String {
        let pins: Vec<String> = self.gpio_pins().iter().map(u32::to_string).collect();
        pins.join(", ")
    }

    fn pinmux_hint(&self) -> String {
        let examples = "pick a GPIO pin such as 7, 11, 13";
        match self.kind {
            BoardKind::JetsonOrinNano => format!(
                "reconfigure the pinmux with /opt/nvidia/jetson-io/jetson-io.py or {examples}"
            ),
            BoardKind::RpiZero2W => {
                format!("disable that interface with raspi-config (or config.txt) or {examples}")
            }
            BoardKind::Sim => format!("the sim board mirrors the Raspberry Pi header; {examples}"),
        }
    }
}

/// How the board was chosen.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "source", rename_all = "kebab-case")]
pub enum DetectSource {
    Env { value: String },
    Config { value: String },
    DeviceTree { compatible: Vec<String> },
    UnknownDeviceTree { compatible: Vec<String> },
    NoDeviceTree,
}

#[derive(Debug, Clone, Serialize)]
pub struct Detection {
    pub board: Board,
    pub source: DetectSource,
    pub warning: Option<String>,
}

pub const DEVICE_TREE_COMPATIBLE: &str = "/proc/device-tree/compatible";

const CHOICES: &str = "sim, jetson, rpi, auto";

/// Parses a board choice; Ok(None) for "auto".
pub fn parse_board_choice(field: &str, value: &str) -> Result<Option<BoardKind>, HwError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "sim" => Ok(Some(BoardKind::Sim)),
        "jetson" => Ok(Some(BoardKind::JetsonOrinNano)),
        "rpi" => Ok(Some(BoardKind::RpiZero2W)),
        "auto" => Ok(None),
        _ => Err(HwError::config(
            field,
            format!("unknown board {value:?}; choose one of {CHOICES}"),
        )),
    }
}

/// Chooses the board.
///
/// Order: env override (PINCER_BOARD value, passed in — the library never
/// reads env) → config `board` unless "auto" → device tree at `dt_path`.
/// An empty or "auto" env value is no override.
///
/// compatible is NUL-separated strings: an entry starting with
/// "nvidia,p3768" (the Orin Nano/NX developer kit carrier) → Jetson Orin
/// Nano; "raspberrypi,model-zero-2-w" → Pi Zero 2 W; file missing → sim
/// (NoDeviceTree); present but unknown (or unreadable) → sim with
/// UnknownDeviceTree and a warning telling the user to set PINCER_BOARD.
/// "nvidia,tegra234" without p3768 is another Orin carrier (e.g. AGX Orin,
/// p3737 + p3701) whose header lines differ, so it is unknown too, with a
/// warning to set PINCER_BOARD=jetson if it really is an Orin Nano dev kit:
/// detection never pretends a real board is something else.
pub fn detect(
    env_board: Option<&str>,
    config_board: &str,
    dt_path: &Path,
) -> Result<Detection, HwError> {
    if let Some(v) = env_board.filter(|v| !v.trim().is_empty())
        && let Some(kind) = parse_board_choice("PINCER_BOARD", v)?
    {
        return Ok(Detection {
            board: Board::from_kind(kind),
            source: DetectSource::Env {
                value: v.to_string(),
            },
            warning: None,
        });
    }
    if let Some(kind) = parse_board_choice("hardware.board", config_board)? {
        return Ok(Detection {
            board: Board::from_kind(kind),
            source: DetectSource::Config {
                value: config_board.to_string(),
            },
            warning: None,
        });
    }
    let raw = match std::fs::read(dt_path) {
        Ok(raw) => raw,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Detection {
                board: Board::sim(),
                source: DetectSource::NoDeviceTree,
                warning: None,
            });
        }
        Err(e) => {
            return Ok(Detection {
                board: Board::sim(),
                source: DetectSource::UnknownDeviceTree { compatible: vec![] },
                warning: Some(format!(
                    "could not read {}: {e}; using the simulated board. Set PINCER_BOARD=jetson|rpi|sim to choose.",
                    dt_path.display()
                )),
            });
        }
    };
    let compatible: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).trim().to_string())
        .collect();
    let has = |pred: &dyn Fn(&str) -> bool| compatible.iter().any(|c| pred(c));
    if has(&|c| c.starts_with("nvidia,p3768")) {
        return Ok(Detection {
            board: Board::jetson_orin_nano(),
            source: DetectSource::DeviceTree { compatible },
            warning: None,
        });
    }
    if has(&|c| c == "nvidia,tegra234") {
        // Another Orin carrier (AGX Orin p3737, a third-party board) wires
        // its header to other SoC lines: the Orin Nano table would drive
        // unrelated pins. Unknown board, so the sim.
        let warning = format!(
            "Jetson Orin (nvidia,tegra234) without the Orin Nano developer kit carrier (nvidia,p3768) (device tree compatible: {}); its header pins differ, so pincer uses the simulated board and no real bus will be touched. If this really is an Orin Nano developer kit, set PINCER_BOARD=jetson.",
            compatible.join(", ")
        );
        return Ok(Detection {
            board: Board::sim(),
            source: DetectSource::UnknownDeviceTree { compatible },
            warning: Some(warning),
        });
    }
    if has(&|c| c == "raspberrypi,model-zero-2-w") {
        return Ok(Detection {
            board: Board::rpi_zero_2w(),
            source: DetectSource::DeviceTree { compatible },
            warning: None,
        });
    }
    let warning = format!(
        "unknown board (device tree compatible: {}); using the simulated board, no real bus will be touched. Set PINCER_BOARD=jetson|rpi|sim to choose.",
        compatible.join(", ")
    );
    Ok(Detection {
        board: Board::sim(),
        source: DetectSource::UnknownDeviceTree { compatible },
        warning: Some(warning),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn tables_are_complete_and_unique() {
        for b in [
            Board::sim(),
            Board::rpi_zero_2w(),
            Board::jetson_orin_nano(),
        ] {
            let pins: Vec<u32> = b.pins.iter().map(|p| p.pin).collect();
            assert_eq!(pins, (1..=40).collect::<Vec<_>>(), "{}", b.name);
            for p in b.gpio_pins() {
                let g = b.gpio_pin(p).unwrap();
                assert_eq!(g.pin(), p);
            }
        }
    }

    #[test]
    fn pin_errors() {
        let b = Board::rpi_zero_2w();
        assert_eq!(b.gpio_pin(7).unwrap().line(), 4);
        assert!(matches!(b.gpio_pin(3), Err(HwError::Pinmux { pin: 3, .. })));
        let e = b.gpio_pin(1).unwrap_err();
        assert!(e.to_string().contains("pin 1 is 3V3 power"), "{e}");
        assert_eq!(b.gpio_pin(41).unwrap_err().field(), Some("pin"));
        let j = Board::jetson_orin_nano();
        let g = j.gpio_pin(7).unwrap();
        assert_eq!((g.chip(), g.line()), ("tegra234-gpio", 144));
        let e = j.gpio_pin(27).unwrap_err();
        assert!(e.to_string().contains("jetson-io"), "{e}");
    }
}
