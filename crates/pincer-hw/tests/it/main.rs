//! pincer-hw integration tests: one binary, one module per area.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod camera;
mod config;
mod detect;
#[cfg(target_os = "linux")]
mod linux;
mod pins;
mod props;
mod sim;
mod validation;

use pincer_hw::{Board, DetectSource, Detection, Hardware, HardwareConfig, HwError};

/// A Hardware on the sim board from `cfg`.
pub fn sim_hw(cfg: &HardwareConfig) -> Hardware {
    let detection = Detection {
        board: Board::sim(),
        source: DetectSource::Config {
            value: "sim".into(),
        },
        warning: None,
    };
    Hardware::open(cfg, detection).unwrap()
}

/// The default demo sim board.
pub fn demo() -> Hardware {
    sim_hw(&HardwareConfig::default())
}

/// Parses a `[hardware]` table written as TOML (the text after `[hardware]`).
pub fn parse_cfg(body: &str) -> Result<HardwareConfig, HwError> {
    let doc: toml::Table = format!("[hardware]\n{body}").parse().unwrap();
    HardwareConfig::from_toml(doc.get("hardware"))
}
