//! Camera capture helper (HW6): a fixed argv per board, spawned without a
//! shell, stdin closed, with a cleared environment (only [`CAPTURE_ENV`] is
//! forwarded) and in its own process group, which is killed after a
//! timeout; or, on the sim, a deterministic generated image. Rate limiting
//! lives in `Hardware`.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
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
/// How long to wait for the rest of stderr once the capture process is
/// gone (exited, or killed with its group).
pub const STDERR_GRACE: Duration = Duration::from_secs(1);

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

/// The variables a capture process may inherit from pincer's environment;
/// everything else is cleared, provider API keys above all.
/// `gst-launch-1.0` on the Jetson and `libcamera-still` on the Pi need
/// nothing beyond these.
pub const CAPTURE_ENV: [&str; 5] = ["PATH", "HOME", "LANG", "LC_ALL", "XDG_RUNTIME_DIR"];

/// The part of `parent` (an environment, as `std::env::vars_os` yields it)
/// in [`CAPTURE_ENV`], in `parent`'s order.
pub fn capture_env(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    parent
        .into_iter()
        .filter(|(k, _)| CAPTURE_ENV.iter().any(|a| OsStr::new(a) == k))
        .collect()
}

/// [`capture_env`] of pincer's own environment, read at spawn time.
///
/// pincer-hw reads no environment variable to decide what it does (the
/// binary passes PINCER_BOARD and the config in); this is the one place it
/// looks at the environment, and only to forward the allowlist to the
/// child it spawns, so that the camera tools find their programs (PATH),
/// their locale and their runtime directory.
pub(crate) fn parent_capture_env() -> Vec<(OsString, OsString)> {
    capture_env(std::env::vars_os())
}

/// SIGKILLs the capture's process group (the child is its leader, see
/// `run_capture`). Only called while the leader is not yet reaped, so the
/// group id cannot have been reused by an unrelated process.
fn kill_group(child: &mut Child) {
    #[cfg(target_os = "linux")]
    if let Some(pg) = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pg, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
}

/// Runs `argv` (no shell) with stdin null, stdout discarded and stderr
/// captured, with only `env` in its environment (see [`capture_env`]), in
/// its own process group; kills the whole group after `timeout`, so a
/// helper process the program started dies with it. Then `path` must exist
/// and be non-empty. Waiting for the stderr reader is bounded by
/// [`STDERR_GRACE`] once the process is gone, in case a grandchild that
/// left the group still holds stderr open.
pub(crate) fn run_capture(
    argv: &[String],
    path: &Path,
    timeout: Duration,
    env: &[(OsString, OsString)],
) -> Result<(), HwError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(HwError::Unsupported("camera: empty argv".to_string()));
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| HwError::io("spawn", program.clone(), e))?;
    // Drain stderr on a thread so a chatty process cannot block on a full pipe.
    let stderr = child.stderr.take();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stderr {
            let _ = s.take(STDERR_CAP).read_to_end(&mut buf);
        }
        let _ = tx.send(buf);
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() >= timeout => {
                kill_group(&mut child);
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                kill_group(&mut child);
                let _ = child.wait();
                return Err(HwError::io("wait", program.clone(), e));
            }
        }
    };
    let stderr = rx.recv_timeout(STDERR_GRACE).unwrap_or_default();
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
        let env = parent_capture_env();
        let argv: Vec<String> = ["sh", "-c", "echo no camera >&2; exit 3"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let e = run_capture(&argv, &out, CAPTURE_TIMEOUT, &env).unwrap_err();
        assert!(e.to_string().contains("no camera"), "{e}");
        let argv: Vec<String> = ["sleep", "10"].iter().map(|s| s.to_string()).collect();
        let t = Instant::now();
        let e = run_capture(&argv, &out, Duration::from_millis(200), &env).unwrap_err();
        assert!(e.to_string().contains("killed"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(5));
        let argv: Vec<String> = ["true"].iter().map(|s| s.to_string()).collect();
        let e = run_capture(&argv, &out, CAPTURE_TIMEOUT, &env).unwrap_err();
        assert!(e.to_string().contains("not written"), "{e}");
        let e = run_capture(
            &["/nonexistent/cam".to_string()],
            &out,
            CAPTURE_TIMEOUT,
            &env,
        )
        .unwrap_err();
        assert!(matches!(e, HwError::Io { op: "spawn", .. }), "{e}");
    }

    /// Writes an executable fake camera into `dir`: a shell script whose
    /// body is `body` ($1 = the output path).
    #[cfg(unix)]
    fn fake_camera(dir: &Path, body: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        let script = dir.join("fake-camera");
        std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        script.display().to_string()
    }

    fn os(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn capture_env_is_an_allowlist() {
        let parent = os(&[
            ("OPENAI_API_KEY", "sk-secret"),
            ("PATH", "/usr/bin:/bin"),
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("HOME", "/home/cam"),
            ("LD_PRELOAD", "/tmp/x.so"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C"),
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ("PATHX", "no"),
        ]);
        assert_eq!(
            capture_env(parent),
            os(&[
                ("PATH", "/usr/bin:/bin"),
                ("HOME", "/home/cam"),
                ("LANG", "C.UTF-8"),
                ("LC_ALL", "C"),
                ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ])
        );
    }

    #[cfg(unix)]
    #[test]
    fn the_camera_sees_only_the_allowlisted_environment() {
        let dir = tempfile::tempdir().unwrap();
        let cam = fake_camera(dir.path(), "env > \"$1\"");
        let out = dir.path().join("env.txt");
        let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
        let parent = os(&[
            ("PATH", &path),
            ("OPENAI_API_KEY", "sk-secret"),
            ("HOME", "/home/cam"),
            ("PINCER_SOMETHING", "x"),
        ]);
        let argv = [cam, out.display().to_string()];
        run_capture(&argv, &out, CAPTURE_TIMEOUT, &capture_env(parent)).unwrap();
        let seen = std::fs::read_to_string(&out).unwrap();
        assert!(!seen.contains("OPENAI_API_KEY"), "{seen}");
        assert!(!seen.contains("PINCER_SOMETHING"), "{seen}");
        assert!(seen.contains("HOME=/home/cam"), "{seen}");
        assert!(seen.contains(&format!("PATH={path}")), "{seen}");
        // Nothing of this test process's own environment got through either
        // (the shell adds a few variables of its own).
        for line in seen.lines() {
            let key = line.split('=').next().unwrap_or_default();
            assert!(
                ["PATH", "HOME", "PWD", "OLDPWD", "SHLVL", "_"].contains(&key),
                "{key} leaked: {seen}"
            );
        }
    }

    /// Only does something when started by
    /// `provider_keys_in_pincers_environment_do_not_reach_the_camera`, in a
    /// child test process whose environment that test set: captures with
    /// the environment the real spawner forwards.
    #[cfg(unix)]
    #[test]
    fn capture_with_this_process_environment() {
        let (Some(cam), Some(out)) = (
            std::env::var_os("PINCER_HW_TEST_CAMERA"),
            std::env::var_os("PINCER_HW_TEST_CAMERA_OUT"),
        ) else {
            return;
        };
        let argv = [cam, out.clone()].map(|s| s.to_string_lossy().into_owned());
        run_capture(
            &argv,
            Path::new(&out),
            CAPTURE_TIMEOUT,
            &parent_capture_env(),
        )
        .unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn provider_keys_in_pincers_environment_do_not_reach_the_camera() {
        let dir = tempfile::tempdir().unwrap();
        let cam = fake_camera(dir.path(), "env > \"$1\"");
        let out = dir.path().join("env.txt");
        // Re-run this test binary with a provider key in its environment
        // (set on the Command, not with set_var in this multithreaded one).
        let status = Command::new(std::env::current_exe().unwrap())
            .args([
                "camera::tests::capture_with_this_process_environment",
                "--exact",
                "--test-threads=1",
                "--quiet",
            ])
            .env("OPENAI_API_KEY", "sk-must-not-leak")
            .env("PINCER_HW_TEST_CAMERA", &cam)
            .env("PINCER_HW_TEST_CAMERA_OUT", &out)
            .env("LANG", "C.UTF-8")
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        let seen = std::fs::read_to_string(&out).unwrap();
        assert!(!seen.contains("sk-must-not-leak"), "{seen}");
        assert!(!seen.contains("OPENAI_API_KEY"), "{seen}");
        assert!(!seen.contains("PINCER_HW_TEST_CAMERA"), "{seen}");
        assert!(seen.contains("LANG=C.UTF-8"), "{seen}");
        assert!(seen.contains("PATH="), "{seen}");
    }

    /// True while `pid` is a live (not zombie) process.
    #[cfg(target_os = "linux")]
    fn alive(pid: &str) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| !r.trim_start().starts_with('Z'))
        })
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_timeout_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        // A helper in the background keeps stderr open: without the group
        // kill, waiting for stderr would last as long as the helper.
        let cam = fake_camera(
            dir.path(),
            &format!("sleep 30 & echo $! > {}; wait", pidfile.display()),
        );
        let out = dir.path().join("img");
        let t = Instant::now();
        let e = run_capture(
            &[cam],
            &out,
            Duration::from_millis(300),
            &parent_capture_env(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("killed"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        let pid = pid.trim();
        let gone = Instant::now();
        while alive(pid) && gone.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(pid), "the helper {pid} outlived the capture");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_helper_that_leaves_the_group_cannot_hold_the_capture() {
        let dir = tempfile::tempdir().unwrap();
        // setsid escapes the process group and keeps our stderr pipe open
        // for 4 s; the capture must not wait for it past STDERR_GRACE.
        let cam = fake_camera(
            dir.path(),
            "command -v setsid >/dev/null || exit 0; setsid sleep 4 & echo written > \"$1\"",
        );
        let out = dir.path().join("img");
        let t = Instant::now();
        run_capture(
            &[cam, out.display().to_string()],
            &out,
            CAPTURE_TIMEOUT,
            &parent_capture_env(),
        )
        .unwrap();
        assert!(
            t.elapsed() < STDERR_GRACE + Duration::from_millis(2500),
            "{:?}",
            t.elapsed()
        );
    }
}
