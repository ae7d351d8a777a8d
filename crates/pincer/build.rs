//! Records the commit the binary was built from, for `pincer --version`
//! (without git, a source tarball, it says so instead of guessing), and
//! links a release binary for size (see [`size_link_args`]).

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .is_some_and(|o| !o.stdout.is_empty());
    let commit = if dirty {
        format!("{commit}+changes")
    } else {
        commit
    };
    println!("cargo:rustc-env=PINCER_COMMIT={commit}");
    println!("cargo:rerun-if-changed=../../.git/HEAD");
    println!("cargo:rerun-if-changed=../../.git/index");
    size_link_args();
}

/// Linker arguments that make the `pincer` binary smaller when nothing can
/// unwind through it: a build with the release profile at `opt-level =
/// "z"` (so `panic = "abort"`; cargo tells a build script the profile, not
/// the panic strategy, and the bench profile, at opt-level 3, is left as
/// it is) for x86_64 Linux with glibc, linked by rust-lld (the x86_64
/// default since Rust 1.90) or GNU ld. `PINCER_KEEP_UNWIND_TABLES=1` turns
/// it off.
///
/// - the unwind tables (`.eh_frame`, its index, `.gcc_except_table`),
///   about 580 KiB, dropped by an augmenting linker script: with `panic =
///   "abort"` nothing unwinds, and all they still served was a backtrace of
///   addresses in a stripped binary. A panic still prints its message and
///   aborts. (`cargo test --release` links the binary its tests run this
///   way too, though it builds it to unwind: there a panic in the binary
///   aborts instead of unwinding.)
/// - `-z pack-relative-relocs`: relative relocations as DT_RELR, about 190
///   KiB less, only when this machine's glibc is 2.36 or later (Debian and
///   Raspberry Pi OS bookworm): the binary then needs the same at run time,
///   as everything linked against that glibc does, and a loader without
///   DT_RELR refuses to start it, naming `GLIBC_ABI_DT_RELR`.
/// - `-z noseparate-code`: no page of padding between the headers, code and
///   data (rust-lld's default already; code and read-only data then share
///   pages, a small loss of hardening for 8 KiB).
///
/// Debug builds and tests unwind and keep everything. The board targets
/// (aarch64, armv7) keep theirs too until these are checked there:
/// `scripts/release.sh` links them with DT_RELR alone.
fn size_link_args() {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    for k in ["PROFILE", "OPT_LEVEL", "PINCER_KEEP_UNWIND_TABLES"] {
        println!("cargo:rerun-if-env-changed={k}");
    }
    if var("PROFILE") != "release"
        || var("OPT_LEVEL") != "z"
        || var("PINCER_KEEP_UNWIND_TABLES") == "1"
        || var("CARGO_CFG_TARGET_ARCH") != "x86_64"
        || var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
    {
        return;
    }
    let out = std::path::PathBuf::from(var("OUT_DIR"));
    let script = out.join("no-unwind-tables.ld");
    // An augmenting script (INSERT): the linker keeps its default layout and
    // only discards these sections.
    let text = "SECTIONS\n{\n  /DISCARD/ : { *(.eh_frame) *(.eh_frame_hdr) *(.gcc_except_table .gcc_except_table.*) }\n}\nINSERT AFTER .text;\n";
    if let Err(e) = std::fs::write(&script, text) {
        // Only a bigger binary: say so and link as usual.
        println!(
            "cargo:warning=cannot write {}: {e}; linking with unwind tables",
            script.display()
        );
        return;
    }
    let mut args = vec![
        "-Wl,-z,noseparate-code".to_string(),
        "-Wl,--no-eh-frame-hdr".to_string(),
        format!("-Wl,-T,{}", script.display()),
    ];
    if var("HOST") == var("TARGET") && glibc_has_dt_relr() {
        args.push("-Wl,-z,pack-relative-relocs".to_string());
    }
    for arg in args {
        println!("cargo:rustc-link-arg-bins={arg}");
    }
}

/// Whether this machine's glibc (the one the binary links against in a
/// native build) is 2.36 or later, as `getconf GNU_LIBC_VERSION` says
/// (`glibc 2.36`). Unknown is no.
fn glibc_has_dt_relr() -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else {
        return false;
    };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (2, 36)
}
