//! HW3: board detection from the device tree, config and PINCER_BOARD.

use std::path::Path;

use pincer_hw::{BoardKind, DetectSource, Detection, HwError, detect};

const JETSON: &[u8] = b"nvidia,p3768-0000+p3767-0005\0nvidia,p3767-0005\0nvidia,tegra234\0";
const PI: &[u8] = b"raspberrypi,model-zero-2-w\0brcm,bcm2837\0";
const ROCK64: &[u8] = b"pine64,rock64\0rockchip,rk3328\0";

/// Detects with a compatible file holding `dt` (None: no file).
fn run(env: Option<&str>, config: &str, dt: Option<&[u8]>) -> Result<Detection, HwError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("compatible");
    if let Some(dt) = dt {
        std::fs::write(&path, dt).unwrap();
    }
    detect(env, config, &path)
}

#[test]
fn device_tree_boards() {
    let d = run(None, "auto", Some(JETSON)).unwrap();
    assert_eq!(d.board.kind, BoardKind::JetsonOrinNano);
    assert!(d.warning.is_none());
    match &d.source {
        DetectSource::DeviceTree { compatible } => {
            assert_eq!(
                compatible,
                &[
                    "nvidia,p3768-0000+p3767-0005",
                    "nvidia,p3767-0005",
                    "nvidia,tegra234"
                ]
            );
        }
        other => panic!("{other:?}"),
    }
    let d = run(None, "auto", Some(PI)).unwrap();
    assert_eq!(d.board.kind, BoardKind::RpiZero2W);
    assert_eq!(d.board.i2c_default, Some("/dev/i2c-1"));
}

#[test]
fn another_orin_carrier_is_not_taken_for_the_orin_nano() {
    // AGX Orin (p3737 carrier + p3701 module): tegra234, but its header is
    // wired to other SoC lines than the Orin Nano dev kit's.
    let agx: &[u8] = b"nvidia,p3737-0000+p3701-0000\0nvidia,p3701-0000\0nvidia,tegra234\0";
    let d = run(None, "auto", Some(agx)).unwrap();
    assert_eq!(d.board.kind, BoardKind::Sim);
    match &d.source {
        DetectSource::UnknownDeviceTree { compatible } => {
            assert_eq!(compatible[0], "nvidia,p3737-0000+p3701-0000");
        }
        other => panic!("{other:?}"),
    }
    let w = d.warning.unwrap();
    assert!(
        w.contains("PINCER_BOARD=jetson") && w.contains("p3768") && w.contains("simulated"),
        "{w}"
    );
    // The person can still say it is an Orin Nano dev kit.
    let d = run(Some("jetson"), "auto", Some(agx)).unwrap();
    assert_eq!(d.board.kind, BoardKind::JetsonOrinNano);
    // The dev kit carrier alone is enough.
    let d = run(None, "auto", Some(b"nvidia,p3768-0000+p3767-0003\0")).unwrap();
    assert_eq!(d.board.kind, BoardKind::JetsonOrinNano);
}

#[test]
fn unknown_or_missing_device_tree_is_the_sim() {
    let d = run(None, "auto", Some(ROCK64)).unwrap();
    assert_eq!(d.board.kind, BoardKind::Sim);
    assert!(
        matches!(d.source, DetectSource::UnknownDeviceTree { ref compatible } if compatible[0] == "pine64,rock64")
    );
    let w = d.warning.unwrap();
    assert!(
        w.contains("PINCER_BOARD") && w.contains("pine64,rock64"),
        "{w}"
    );
    let d = run(None, "auto", None).unwrap();
    assert_eq!(d.board.kind, BoardKind::Sim);
    assert!(matches!(d.source, DetectSource::NoDeviceTree));
    assert!(d.warning.is_none());
    let d = detect(None, "auto", Path::new("/nonexistent/compatible")).unwrap();
    assert!(matches!(d.source, DetectSource::NoDeviceTree));
    assert_eq!(
        serde_json::to_value(&d.source).unwrap(),
        serde_json::json!({"source": "no-device-tree"})
    );
}

#[test]
fn overrides() {
    // Env beats config and the device tree.
    let d = run(Some("sim"), "rpi", Some(JETSON)).unwrap();
    assert_eq!(d.board.kind, BoardKind::Sim);
    assert!(matches!(d.source, DetectSource::Env { ref value } if value == "sim"));
    let d = run(Some("rpi"), "auto", Some(JETSON)).unwrap();
    assert_eq!(d.board.kind, BoardKind::RpiZero2W);
    // Config beats the device tree; "auto" env is no override.
    let d = run(Some("auto"), "jetson", Some(PI)).unwrap();
    assert_eq!(d.board.kind, BoardKind::JetsonOrinNano);
    assert!(matches!(d.source, DetectSource::Config { .. }));
    let d = run(Some(""), "auto", Some(PI)).unwrap();
    assert_eq!(d.board.kind, BoardKind::RpiZero2W);
}

#[test]
fn bad_values_name_their_source() {
    let e = run(Some("jetsonn"), "auto", Some(JETSON)).unwrap_err();
    assert_eq!(e.field(), Some("PINCER_BOARD"));
    assert!(e.to_string().contains("sim, jetson, rpi, auto"), "{e}");
    let e = run(None, "orangepi", None).unwrap_err();
    assert_eq!(e.field(), Some("hardware.board"));
}
