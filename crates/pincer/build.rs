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
/// unwind through it: a build with the release profile (`panic = "abort"`;
/// cargo tells a build script the profile, not the panic strategy) for
/// Linux with glibc, linked by GNU ld through gcc (the cross compilers of
/// `scripts/cross-build.sh` too).
///
/// - `-z pack-relative-relocs`: relative relocations as DT_RELR, about 190
///   KiB less. The loader must know DT_RELR (glibc 2.36, Debian bookworm,
///   Raspberry Pi OS bookworm); an older one refuses to start the binary,
///   naming the missing `GLIBC_ABI_DT_RELR` version, never runs it wrong.
/// - the unwind tables (`.eh_frame`, its index, `.gcc_except_table`),
///   about 580 KiB, dropped by a linker script: with `panic = "abort"`
///   nothing unwinds, and all they still served was a backtrace of
///   addresses in a stripped binary. A panic still prints its message and
///   aborts.
/// - `-z noseparate-code`: no page of padding between code and data.
///
/// Debug builds and tests unwind and keep everything; so does a release
/// build for any other target. (`cargo test --release` builds the binary
/// for the tests with unwinding; there a panic in it aborts at once
/// instead of unwinding, which a process that dies on a panic never saw.)
fn size_link_args() {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    println!("cargo:rerun-if-env-changed=PROFILE");
    if var("PROFILE") != "release"
        || var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
    {
        return;
    }
    let out = std::path::PathBuf::from(var("OUT_DIR"));
    let script = out.join("no-unwind-tables.ld");
    // An augmenting script (INSERT): ld keeps its default layout and only
    // discards these sections.
    let text = "SECTIONS\n{\n  /DISCARD/ : { *(.eh_frame) *(.eh_frame_hdr) *(.gcc_except_table .gcc_except_table.*) }\n}\nINSERT AFTER .text;\n";
    if let Err(e) = std::fs::write(&script, text) {
        // Only a bigger binary: say so and link as usual.
        println!(
            "cargo:warning=cannot write {}: {e}; linking with unwind tables",
            script.display()
        );
        return;
    }
    for arg in [
        "-Wl,-z,pack-relative-relocs".to_string(),
        "-Wl,-z,noseparate-code".to_string(),
        "-Wl,--no-eh-frame-hdr".to_string(),
        format!("-Wl,-T,{}", script.display()),
    ] {
        println!("cargo:rustc-link-arg-bins={arg}");
    }
}
