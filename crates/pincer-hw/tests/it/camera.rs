//! HW6 on the sim: deterministic images and the rate limit.

use pincer_hw::{HwError, SimTransaction};

use crate::{demo, parse_cfg, sim_hw};

#[test]
fn sim_capture_is_deterministic() {
    let hw = sim_hw(&parse_cfg("camera_min_interval_ms = 0").unwrap());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("new/sub");
    let a = hw.camera_capture(&out).unwrap();
    let b = hw.camera_capture(&out).unwrap();
    assert_ne!(a.path, b.path);
    assert_eq!(a.sha256, b.sha256);
    assert_eq!((a.format, a.bytes, a.argv.is_none()), ("ppm", 57_615, true));
    assert!(a.path.starts_with(&out));
    let data = std::fs::read(&a.path).unwrap();
    assert!(data.starts_with(b"P6\n160 120\n255\n"));
    assert_eq!(
        hw.sim().unwrap().transactions(),
        [SimTransaction::CameraCapture, SimTransaction::CameraCapture]
    );
}

#[test]
fn second_capture_is_rate_limited() {
    let hw = demo();
    let dir = tempfile::tempdir().unwrap();
    hw.camera_capture(dir.path()).unwrap();
    let e = hw.camera_capture(dir.path()).unwrap_err();
    match e {
        HwError::RateLimited { retry_after_ms } => assert!((1..=2000).contains(&retry_after_ms)),
        other => panic!("{other}"),
    }
    // Nothing recorded for the refused capture, and one file on disk.
    assert_eq!(
        hw.sim().unwrap().transactions(),
        [SimTransaction::CameraCapture]
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}
