//! Workspace-escape attempts (TL1): each must be refused, in both
//! resolution modes, without reading or writing outside the root.

use crate::support::{Fx, MODES, SECRET};
use pincer_tools::ResolutionMode;
use rustix::fs::{AtFlags, CWD, RenameFlags};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[tokio::test]
async fn dotdot_paths_are_refused_for_every_tool() {
    for mode in MODES {
        let fx = Fx::new(mode);
        for p in [
            "../outside/secret.txt",
            "a/../../outside/secret.txt",
            "./../outside",
        ] {
            fx.refused("file_read", json!({"path": p}), "`..`").await;
            fx.refused("file_list", json!({"path": p}), "`..`").await;
            fx.refused("file_write", json!({"path": p, "content": "x"}), "`..`")
                .await;
            fx.refused(
                "file_edit",
                json!({"path": p, "old": SECRET, "new": "x"}),
                "`..`",
            )
            .await;
        }
        fx.assert_outside_untouched();
    }
}

#[tokio::test]
async fn absolute_paths_outside_are_refused_and_inside_are_accepted() {
    for mode in MODES {
        let fx = Fx::new(mode);
        assert_eq!(fx.ws.root(), fx.root);
        let secret = fx.outside.join("secret.txt");
        let secret = secret.to_str().unwrap();
        fx.refused(
            "file_read",
            json!({"path": secret}),
            "outside the workspace",
        )
        .await;
        fx.refused(
            "file_write",
            json!({"path": secret, "content": "x"}),
            "outside",
        )
        .await;
        fx.refused("file_read", json!({"path": "/etc/passwd"}), "outside")
            .await;
        // The root spelled with `..` is still refused: `..` is never allowed.
        let sneaky = format!("{}/../outside/secret.txt", fx.root.display());
        fx.refused("file_read", json!({"path": sneaky}), "`..`")
            .await;

        fx.write("in/side.txt", "hello");
        let inside = fx.root.join("in/side.txt");
        let out = fx
            .ok("file_read", json!({"path": inside.to_str().unwrap()}))
            .await;
        assert_eq!(out, "hello");
        let abs_root = fx.root.to_str().unwrap();
        let listing = fx.ok("file_list", json!({"path": abs_root})).await;
        assert!(listing.contains("dir      in/"), "{listing}");
        fx.assert_outside_untouched();
    }
}

#[tokio::test]
async fn nul_bytes_are_refused() {
    let fx = Fx::new(ResolutionMode::Openat2);
    fx.write("a", "x");
    fx.refused(
        "file_read",
        json!({"path": "a\u{0}/../../outside/secret.txt"}),
        "NUL",
    )
    .await;
    fx.refused(
        "file_write",
        json!({"path": "a\u{0}b", "content": "x"}),
        "NUL",
    )
    .await;
}

#[tokio::test]
async fn symlink_to_an_outside_file_is_refused_for_read_write_list_edit() {
    for mode in MODES {
        let fx = Fx::new(mode);
        fx.symlink("../outside/secret.txt", "rel_link");
        fx.symlink(fx.outside.join("secret.txt"), "abs_link");
        std::fs::create_dir(fx.root.join("sub")).unwrap();
        fx.symlink("../../outside/secret.txt", "sub/deep_link");
        for (link, why) in [
            ("rel_link", "escapes the workspace"),
            ("abs_link", "absolute"),
            ("sub/deep_link", "escapes the workspace"),
        ] {
            fx.refused("file_read", json!({"path": link}), why).await;
            fx.refused("file_list", json!({"path": link}), why).await;
            fx.refused("file_write", json!({"path": link, "content": "PWNED"}), why)
                .await;
            fx.refused(
                "file_edit",
                json!({"path": link, "old": SECRET, "new": "PWNED"}),
                why,
            )
            .await;
            // The symlink itself is left in place, not replaced.
            assert!(
                std::fs::symlink_metadata(fx.root.join(link))
                    .unwrap()
                    .file_type()
                    .is_symlink()
            );
        }
        fx.assert_outside_untouched();
    }
}

#[tokio::test]
async fn symlink_to_an_outside_directory_cannot_be_walked_through() {
    for mode in MODES {
        let fx = Fx::new(mode);
        fx.symlink("../outside", "out");
        fx.symlink(&fx.outside, "abs_out");
        for dir in ["out", "abs_out"] {
            let file = format!("{dir}/secret.txt");
            let new = format!("{dir}/new.txt");
            let deep = format!("{dir}/sub/new.txt");
            fx.refused("file_read", json!({"path": file}), "").await;
            fx.refused("file_list", json!({"path": dir}), "").await;
            fx.refused("file_list", json!({"path": dir, "recursive": true}), "")
                .await;
            fx.refused("file_write", json!({"path": new, "content": "PWNED"}), "")
                .await;
            fx.refused(
                "file_write",
                json!({"path": deep, "content": "PWNED", "create_dirs": true}),
                "",
            )
            .await;
            fx.refused(
                "file_edit",
                json!({"path": file, "old": SECRET, "new": "x"}),
                "",
            )
            .await;
        }
        // Listing the root shows the symlinks but never what is behind them.
        let listing = fx.ok("file_list", json!({"recursive": true})).await;
        assert!(listing.contains("symlink  out -> ../outside"), "{listing}");
        assert!(!listing.contains("secret.txt"), "{listing}");
        fx.assert_outside_untouched();
    }
}

#[tokio::test]
async fn symlinks_that_stay_inside_are_followed() {
    for mode in MODES {
        let fx = Fx::new(mode);
        fx.write("top.txt", "top");
        fx.write("sub/real.txt", "real");
        fx.symlink("sub/real.txt", "link_in");
        fx.symlink("../top.txt", "sub/up");
        fx.symlink("sub", "subdir_link");
        fx.symlink("..", "sub/parent");
        assert_eq!(fx.ok("file_read", json!({"path": "link_in"})).await, "real");
        assert_eq!(fx.ok("file_read", json!({"path": "sub/up"})).await, "top");
        assert_eq!(
            fx.ok("file_read", json!({"path": "subdir_link/real.txt"}))
                .await,
            "real"
        );
        assert_eq!(
            fx.ok("file_read", json!({"path": "sub/parent/top.txt"}))
                .await,
            "top"
        );
        let l = fx.ok("file_list", json!({"path": "subdir_link"})).await;
        assert!(l.contains("file     subdir_link/real.txt (4 bytes)"), "{l}");

        // Writing through an inside symlink updates its target and keeps the link.
        fx.ok("file_write", json!({"path": "link_in", "content": "new"}))
            .await;
        assert_eq!(fx.read("sub/real.txt"), "new");
        assert!(
            std::fs::symlink_metadata(fx.root.join("link_in"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        fx.ok(
            "file_edit",
            json!({"path": "sub/up", "old": "top", "new": "TOP"}),
        )
        .await;
        assert_eq!(fx.read("top.txt"), "TOP");

        // Absolute symlinks are refused even when they point inside
        // (RESOLVE_BENEATH semantics), and so are magic links.
        fx.symlink(fx.root.join("top.txt"), "abs_inside");
        fx.refused("file_read", json!({"path": "abs_inside"}), "absolute")
            .await;
        fx.symlink("/proc/self/root/etc/passwd", "magic");
        fx.refused("file_read", json!({"path": "magic"}), "absolute")
            .await;
        // A symlink loop is reported, not followed forever.
        fx.symlink("loop_b", "loop_a");
        fx.symlink("loop_a", "loop_b");
        fx.refused("file_read", json!({"path": "loop_a"}), "symlinks")
            .await;
    }
}

#[tokio::test]
async fn a_file_replaced_by_a_symlink_between_calls_is_refused() {
    for mode in MODES {
        let fx = Fx::new(mode);
        fx.write("f.txt", "benign");
        assert_eq!(fx.ok("file_read", json!({"path": "f.txt"})).await, "benign");
        std::fs::remove_file(fx.root.join("f.txt")).unwrap();
        fx.symlink("../outside/secret.txt", "f.txt");
        fx.refused("file_read", json!({"path": "f.txt"}), "escapes")
            .await;
        fx.refused(
            "file_write",
            json!({"path": "f.txt", "content": "PWNED"}),
            "escapes",
        )
        .await;
        fx.refused(
            "file_edit",
            json!({"path": "f.txt", "old": SECRET, "new": "x"}),
            "escapes",
        )
        .await;

        // Same for a directory on the way.
        fx.write("d/x.txt", "benign");
        assert_eq!(
            fx.ok("file_read", json!({"path": "d/x.txt"})).await,
            "benign"
        );
        std::fs::remove_dir_all(fx.root.join("d")).unwrap();
        fx.symlink("../outside", "d");
        std::fs::write(fx.outside.join("x.txt"), SECRET).unwrap();
        fx.refused("file_read", json!({"path": "d/x.txt"}), "escapes")
            .await;
        std::fs::remove_file(fx.outside.join("x.txt")).unwrap();
        fx.assert_outside_untouched();
    }
}

/// Keeps exchanging `a` and `b` (atomic RENAME_EXCHANGE) until stopped.
fn swapper(
    dir: std::path::PathBuf,
    a: &'static str,
    b: &'static str,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut n = 0;
        while !stop.load(Ordering::Relaxed) {
            rustix::fs::renameat_with(CWD, dir.join(a), CWD, dir.join(b), RenameFlags::EXCHANGE)
                .unwrap();
            n += 1;
        }
        n
    })
}

/// Reads `path` over and over while another thread swaps the benign thing
/// with a symlink to the outside. No read may ever return outside content;
/// the loop runs until both outcomes were seen, so it cannot pass without
/// racing.
async fn race_reads(fx: &Fx, path: &str, a: &'static str, b: &'static str) {
    let stop = Arc::new(AtomicBool::new(false));
    let t = swapper(fx.root.clone(), a, b, stop.clone());
    let (mut benign, mut refused) = (0u32, 0u32);
    for _ in 0..50_000 {
        match fx.call("file_read", json!({"path": path})).await {
            Ok(out) => {
                assert!(!out.contains(SECRET), "leaked through {path}: {out}");
                assert_eq!(out, "benign");
                benign += 1;
            }
            Err(e) => {
                assert!(!e.to_string().contains(SECRET), "leaked: {e}");
                refused += 1;
            }
        }
        if benign >= 50 && refused >= 50 {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = t.join().unwrap();
    assert!(
        benign >= 50 && refused >= 50,
        "the race never happened: {benign} benign reads, {refused} refusals, {swaps} swaps"
    );
}

#[tokio::test]
async fn symlink_swapped_in_repeatedly_while_reading_never_leaks() {
    for mode in MODES {
        let fx = Fx::new(mode);
        // A file swapped with a symlink to the outside secret.
        fx.write("f", "benign");
        fx.symlink("../outside/secret.txt", "f_alt");
        race_reads(&fx, "f", "f", "f_alt").await;
        // A directory on the way swapped with a symlink to the outside dir.
        fx.write("d/secret.txt", "benign");
        fx.symlink("../outside", "d_alt");
        race_reads(&fx, "d/secret.txt", "d", "d_alt").await;
        fx.assert_outside_untouched();
    }
}

#[tokio::test]
async fn symlink_swapped_in_repeatedly_while_writing_never_writes_outside() {
    for mode in MODES {
        let fx = Fx::new(mode);
        fx.write("d/w.txt", "benign");
        fx.symlink("../outside", "d_alt");
        std::fs::write(fx.outside.join("w.txt"), SECRET).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let t = swapper(fx.root.clone(), "d", "d_alt", stop.clone());
        let (mut written, mut refused) = (0u32, 0u32);
        for i in 0..50_000 {
            let r = if i % 2 == 0 {
                fx.call("file_write", json!({"path": "d/w.txt", "content": "PWNED"}))
                    .await
            } else {
                fx.call(
                    "file_edit",
                    json!({"path": "d/w.txt", "old": SECRET, "new": "PWNED"}),
                )
                .await
            };
            match r {
                Ok(_) => written += 1,
                Err(_) => refused += 1,
            }
            if written >= 30 && refused >= 30 {
                break;
            }
        }
        stop.store(true, Ordering::Relaxed);
        t.join().unwrap();
        assert!(
            written >= 30 && refused >= 30,
            "no race: {written} written, {refused} refused"
        );
        assert_eq!(
            std::fs::read_to_string(fx.outside.join("w.txt")).unwrap(),
            SECRET
        );
        std::fs::remove_file(fx.outside.join("w.txt")).unwrap();
        fx.assert_outside_untouched();
        // No temp file was left anywhere.
        for dir in [fx.root.join("d"), fx.outside.clone(), fx.root.clone()] {
            for e in std::fs::read_dir(&dir).unwrap() {
                let name = e.unwrap().file_name();
                assert!(
                    !name.to_string_lossy().starts_with(".pincer-tmp"),
                    "{dir:?}: {name:?}"
                );
            }
        }
        // The swapped entries are still what the test made, one a real dir.
        let d = rustix::fs::statat(CWD, fx.root.join("d"), AtFlags::SYMLINK_NOFOLLOW).unwrap();
        let alt =
            rustix::fs::statat(CWD, fx.root.join("d_alt"), AtFlags::SYMLINK_NOFOLLOW).unwrap();
        let kinds = [d, alt].map(|s| rustix::fs::FileType::from_raw_mode(s.st_mode));
        assert!(kinds.contains(&rustix::fs::FileType::Directory));
        assert!(kinds.contains(&rustix::fs::FileType::Symlink));
    }
}
