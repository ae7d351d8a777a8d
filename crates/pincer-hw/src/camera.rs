//! Camera capture helper (HW6): a fixed argv per board, spawned without a
//! shell, stdin closed, killed after a timeout; or, on the sim, a
//! deterministic generated image. Rate limiting lives in `Hardware`.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::board::BoardKind;
use crate::error::HwError;

/// How long a capture process may run before it is killed.
pub const CAPTURE_TIMEOUT: Duration = Duration::from_secs(15);
/// The sim image's size.
pub const SIM_WIDTH: usize = 160;
pub const SIM_HEIGHT: usize = 120;
/// Kept stderr, at most.
const STDERR_CAP: u64 = 16 * 1024;

/// The fixed capture argv for a board writing to `path`; None for the sim.
/// Jetson: GStreamer with the Argus camera source and the hardware JPEG
/// encoder; Pi: libcamera-still (still shipped as a name on Raspberry Pi OS
/// next to rpicam-still).
pub fn camera_argv(kind: BoardKind, path: &Path) -> Option<Vec<String>> {
    let p = path.display().to_string();
    let v: Vec<String> = match kind {
        BoardKind::Sim => return None,
        BoardKind::JetsonOrinNano => [
            "gst-launch-1.0",
            "-q",
            "-e",
            "nvarguscamerasrc",
            "num-buffers=1",
            "!",
            "nvjpegenc",
            "!",
            "filesink",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("location={p}")])
        .collect(),
        BoardKind::RpiZero2W => ["libcamera-still", "-n", "--immediate", "-o"]
            .iter()
            .map(|s| s.to_string())
            .chain([p])
            .chain(
                ["--width", "640", "--height", "480"]
                    .iter()
                    .map(|s| s.to_string()),
            )
            .collect(),
    };
    Some(v)
}

/// The sim camera's image: a binary PPM (P6), 160x120, a red/green
/// gradient with a blue checkerboard and a white cross through the centre.
/// Always the same bytes.
pub fn sim_image() -> Vec<u8> {
    let mut out = format!("P6\n{SIM_WIDTH} {SIM_HEIGHT}\n255\n").into_bytes();
    out.reserve(SIM_WIDTH * SIM_HEIGHT * 3);
    for y in 0..SIM_HEIGHT {
        for x in 0..SIM_WIDTH {
            let cross = x == SIM_WIDTH / 2 || y == SIM_HEIGHT / 2;
            if cross {
                out.extend_from_slice(&[255, 255, 255]);
                continue;
            }
            let r = (x * 255 / (SIM_WIDTH - 1)) as u8;
            let g = (y * 255 / (SIM_HEIGHT - 1)) as u8;
            let b = if (x / 16 + y / 16) % 2 == 0 { 200 } else { 40 };
            out.extend_from_slice(&[r, g, b]);
        }
    }
    out
}

/// Lower-case hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Runs `argv` (no shell) with stdin null, stdout discarded and stderr
/// captured; kills it after `timeout`. Then `path` must exist and be
/// non-empty.
pub(crate) fn run_capture(argv: &[String], path: &Path, timeout: Duration) -> Result<(), HwError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(HwError::Unsupported("camera: empty argv".to_string()));
    };
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| HwError::io("spawn", program.clone(), e))?;
    // Drain stderr on a thread so a chatty process cannot block on a full pipe.
    let stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stderr {
            let _ = s.take(STDERR_CAP).read_to_end(&mut buf);
        }
        buf
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(HwError::io("wait", program.clone(), e));
            }
        }
    };
    let stderr = reader.join().unwrap_or_default();
    let stderr = String::from_utf8_lossy(&stderr).trim().to_string();
    let fail = |msg: String| {
        HwError::io(
            "camera capture",
            program.clone(),
            std::io::Error::other(if stderr.is_empty() {
                msg
            } else {
                format!("{msg}; stderr: {stderr}")
            }),
        )
    };
    match status {
        None => return Err(fail(format!("killed after {} s", timeout.as_secs_f64()))),
        Some(s) if !s.success() => return Err(fail(format!("exited with {s}"))),
        Some(_) => {}
    }
    match std::fs::metadata(path) {
        Ok(m) if m.len() > 0 => Ok(()),
        Ok(_) => Err(fail(format!("{} is empty", path.display()))),
        Err(e) => Err(fail(format!("{} was not written: {e}", path.display()))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn argv_is_fixed() {
        let p = Path::new("/tmp/x/capture.jpg");
        assert_eq!(
            camera_argv(BoardKind::JetsonOrinNano, p).unwrap(),
            [
                "gst-launch-1.0",
                "-q",
                "-e",
                "nvarguscamerasrc",
                "num-buffers=1",
                "!",
                "nvjpegenc",
                "!",
                "filesink",
                "location=/tmp/x/capture.jpg"
            ]
        );
        assert_eq!(
            camera_argv(BoardKind::RpiZero2W, p).unwrap(),
            [
                "libcamera-still",
                "-n",
                "--immediate",
                "-o",
                "/tmp/x/capture.jpg",
                "--width",
                "640",
                "--height",
                "480"
            ]
        );
        assert!(camera_argv(BoardKind::Sim, p).is_none());
    }

    #[test]
    fn sim_image_is_a_ppm() {
        let img = sim_image();
        assert!(img.starts_with(b"P6\n160 120\n255\n"));
        assert_eq!(img.len(), 15 + 160 * 120 * 3);
        assert_eq!(sha256_hex(&img), sha256_hex(&sim_image()));
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[cfg(unix)]
    #[test]
    fn failures_carry_stderr_and_timeouts_kill() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("img");
        let argv: Vec<String> = ["sh", "-c", "echo no camera >&2; exit 3"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let e = run_capture(&argv, &out, CAPTURE_TIMEOUT).unwrap_err();
        assert!(e.to_string().contains("no camera"), "{e}");
        let argv: Vec<String> = ["sleep", "10"].iter().map(|s| s.to_string()).collect();
        let t = Instant::now();
        let e = run_capture(&argv, &out, Duration::from_millis(200)).unwrap_err();
        assert!(e.to_string().contains("killed"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(5));
        let argv: Vec<String> = ["true"].iter().map(|s| s.to_string()).collect();
        let e = run_capture(&argv, &out, CAPTURE_TIMEOUT).unwrap_err();
        assert!(e.to_string().contains("not written"), "{e}");
        let e = run_capture(&["/nonexistent/cam".to_string()], &out, CAPTURE_TIMEOUT).unwrap_err();
        assert!(matches!(e, HwError::Io { op: "spawn", .. }), "{e}");
    }
}
