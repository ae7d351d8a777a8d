//! The file tools' behaviour: caps, edits, atomic writes, listings,
//! argument validation and risk.

use crate::support::Fx;
use pincer_core::policy::Risk;
use pincer_tools::{ResolutionMode, ToolLimits};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;

fn small(read_cap: usize, write_cap: usize, list_max: usize) -> ToolLimits {
    ToolLimits {
        read_cap,
        write_cap,
        list_max,
        ..ToolLimits::default()
    }
}

#[tokio::test]
async fn read_over_the_cap_is_truncated_with_a_marker_saying_how_to_go_on() {
    let fx = Fx::with_limits(small(100, 1000, 10));
    let text: String = (0..250)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    fx.write("big.txt", &text);

    let first = fx.ok("file_read", json!({"path": "big.txt"})).await;
    let (body, marker) = first.split_once("\n\n[truncated:").unwrap();
    assert_eq!(body, &text[..100]);
    assert!(marker.contains("bytes 0..100 of 250"), "{marker}");
    assert!(marker.contains("offset=100"), "{marker}");

    // Following the markers reassembles the file exactly.
    let mut got = String::new();
    let mut offset = 0;
    loop {
        let out = fx
            .ok("file_read", json!({"path": "big.txt", "offset": offset}))
            .await;
        match out.split_once("\n\n[truncated:") {
            Some((body, _)) => {
                got.push_str(body);
                offset += body.len();
            }
            None => {
                got.push_str(&out);
                break;
            }
        }
    }
    assert_eq!(got, text);

    // `limit` narrows the window; it cannot widen it past the cap.
    let out = fx
        .ok(
            "file_read",
            json!({"path": "big.txt", "offset": 5, "limit": 3}),
        )
        .await;
    assert!(
        out.starts_with("fgh\n\n[truncated: this is bytes 5..8 of 250"),
        "{out}"
    );
    let out = fx
        .ok("file_read", json!({"path": "big.txt", "limit": 10_000}))
        .await;
    assert!(
        out.starts_with(&format!("{}\n\n[truncated", &text[..100])),
        "{out}"
    );
    fx.refused(
        "file_read",
        json!({"path": "big.txt", "offset": 250}),
        "past the end",
    )
    .await;
}

#[tokio::test]
async fn read_refuses_binary_directories_fifos_and_missing_files() {
    let fx = Fx::new(ResolutionMode::Openat2);
    std::fs::write(fx.root.join("bin"), [0x7f, b'E', b'L', b'F', 0, 1, 2, 0xff]).unwrap();
    fx.refused("file_read", json!({"path": "bin"}), "not UTF-8 text")
        .await;
    std::fs::create_dir(fx.root.join("dir")).unwrap();
    fx.refused("file_read", json!({"path": "dir"}), "is a directory")
        .await;
    fx.refused("file_read", json!({"path": "."}), "is a directory")
        .await;
    fx.refused(
        "file_read",
        json!({"path": "nope.txt"}),
        "`nope.txt` does not exist",
    )
    .await;
    // A FIFO is refused without blocking on it.
    rustix::fs::mknodat(
        rustix::fs::CWD,
        fx.root.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    fx.refused("file_read", json!({"path": "fifo"}), "not a regular file")
        .await;
    fx.refused(
        "file_write",
        json!({"path": "fifo", "content": "x"}),
        "not a regular file",
    )
    .await;
    fx.write("empty.txt", "");
    assert!(
        fx.ok("file_read", json!({"path": "empty.txt"}))
            .await
            .contains("is empty")
    );
    fx.write("utf8.txt", "héllo wörld");
    assert_eq!(
        fx.ok("file_read", json!({"path": "utf8.txt"})).await,
        "héllo wörld"
    );
}

#[tokio::test]
async fn write_over_the_cap_is_refused_and_writes_nothing() {
    let fx = Fx::with_limits(small(1000, 100, 10));
    let m = fx
        .refused(
            "file_write",
            json!({"path": "a.txt", "content": "x".repeat(101)}),
            "`content`",
        )
        .await;
    assert!(m.contains("101 bytes") && m.contains("100-byte cap"), "{m}");
    assert!(!fx.root.join("a.txt").exists());
    fx.ok(
        "file_write",
        json!({"path": "a.txt", "content": "x".repeat(100)}),
    )
    .await;
    assert_eq!(fx.read("a.txt").len(), 100);
    // An edit may not grow a file past the cap either.
    fx.refused(
        "file_edit",
        json!({"path": "a.txt", "old": "x", "new": "yy", "replace_all": true}),
        "100-byte cap",
    )
    .await;
    assert_eq!(fx.read("a.txt"), "x".repeat(100));
}

#[tokio::test]
async fn write_is_atomic_keeps_the_mode_and_leaves_no_temp_file() {
    let fx = Fx::new(ResolutionMode::Openat2);
    let out = fx
        .ok("file_write", json!({"path": "a.txt", "content": "one"}))
        .await;
    assert!(
        out.contains("wrote 3 bytes") && out.contains("new file"),
        "{out}"
    );
    std::fs::set_permissions(
        fx.root.join("a.txt"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    let out = fx
        .ok(
            "file_write",
            json!({"path": "a.txt", "content": "two, longer"}),
        )
        .await;
    assert!(out.contains("replaced"), "{out}");
    fx.ok(
        "file_edit",
        json!({"path": "a.txt", "old": "two", "new": "three"}),
    )
    .await;
    assert_eq!(fx.read("a.txt"), "three, longer");
    let mode = std::fs::metadata(fx.root.join("a.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o640);
    let names: Vec<String> = std::fs::read_dir(&fx.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["a.txt"]);
}

#[tokio::test]
async fn write_creates_parents_only_when_asked() {
    let fx = Fx::new(ResolutionMode::ComponentWalk);
    fx.refused(
        "file_write",
        json!({"path": "a/b/c.txt", "content": "x"}),
        "create_dirs",
    )
    .await;
    assert!(!fx.root.join("a").exists());
    fx.ok(
        "file_write",
        json!({"path": "a/b/c.txt", "content": "x", "create_dirs": true}),
    )
    .await;
    assert_eq!(fx.read("a/b/c.txt"), "x");
    fx.refused(
        "file_write",
        json!({"path": "a/b", "content": "x"}),
        "is a directory",
    )
    .await;
    fx.refused(
        "file_write",
        json!({"path": ".", "content": "x"}),
        "is a directory",
    )
    .await;
    // A file in the way of a directory.
    fx.refused(
        "file_write",
        json!({"path": "a/b/c.txt/d.txt", "content": "x", "create_dirs": true}),
        "not a directory",
    )
    .await;
}

#[tokio::test]
async fn edit_replaces_exactly_once_or_all_and_says_why_not() {
    let fx = Fx::new(ResolutionMode::Openat2);
    fx.write("code.rs", "let a = 1;\nlet b = 1;\nlet c = 1;\n");
    fx.refused(
        "file_edit",
        json!({"path": "code.rs", "old": "let d", "new": "x"}),
        "not found",
    )
    .await;
    fx.refused(
        "file_edit",
        json!({"path": "code.rs", "old": "= 1", "new": "= 2"}),
        "found 3 times",
    )
    .await;
    assert_eq!(fx.read("code.rs"), "let a = 1;\nlet b = 1;\nlet c = 1;\n");
    let out = fx
        .ok(
            "file_edit",
            json!({"path": "code.rs", "old": "let b = 1", "new": "let b = 9"}),
        )
        .await;
    assert!(out.contains("replaced 1 occurrence in"), "{out}");
    assert_eq!(fx.read("code.rs"), "let a = 1;\nlet b = 9;\nlet c = 1;\n");
    let out = fx
        .ok(
            "file_edit",
            json!({"path": "code.rs", "old": "= 1", "new": "= 2", "replace_all": true}),
        )
        .await;
    assert!(out.contains("replaced 2 occurrences"), "{out}");
    assert_eq!(fx.read("code.rs"), "let a = 2;\nlet b = 9;\nlet c = 2;\n");
    fx.refused(
        "file_edit",
        json!({"path": "code.rs", "old": "", "new": "x"}),
        "`old` must not be empty",
    )
    .await;
    fx.refused(
        "file_edit",
        json!({"path": "missing.rs", "old": "a", "new": "b"}),
        "does not exist",
    )
    .await;
}

#[tokio::test]
async fn list_is_sorted_typed_sized_and_capped() {
    let fx = Fx::with_limits(small(1000, 1000, 5));
    fx.write("b.txt", "bb");
    fx.write("a.txt", "a");
    fx.write("sub/inner.txt", "123");
    fx.symlink("a.txt", "link");
    let l = fx.ok("file_list", json!({})).await;
    assert_eq!(
        l,
        "4 entries in `.`:\nfile     a.txt (1 bytes)\nfile     b.txt (2 bytes)\nsymlink  link -> a.txt\ndir      sub/"
    );
    let l = fx
        .ok("file_list", json!({"path": "sub", "recursive": true}))
        .await;
    assert_eq!(
        l,
        "1 entry in `sub` (recursive):\nfile     sub/inner.txt (3 bytes)"
    );
    let l = fx
        .ok("file_list", json!({"recursive": true, "max_entries": 3}))
        .await;
    assert!(l.starts_with("first 3 entries of `.` (recursive):"), "{l}");
    assert!(l.contains("[truncated at 3 entries"), "{l}");
    let l = fx.ok("file_list", json!({"recursive": true})).await;
    assert!(
        l.ends_with("dir      sub/\nfile     sub/inner.txt (3 bytes)"),
        "{l}"
    );
    fx.refused("file_list", json!({"max_entries": 6}), "at most 5")
        .await;
    fx.refused("file_list", json!({"path": "a.txt"}), "not a directory")
        .await;
    std::fs::create_dir(fx.root.join("empty")).unwrap();
    assert!(
        fx.ok("file_list", json!({"path": "empty"}))
            .await
            .contains("is empty")
    );
}

/// A name may hold a newline, a control character, a quote or bytes that
/// are not UTF-8; the listing shows each entry on one line, with such a
/// name quoted and escaped, so no file can pass for another entry.
#[tokio::test]
async fn odd_names_are_listed_one_per_line_and_unambiguous() {
    use std::os::unix::ffi::OsStrExt;
    let fx = Fx::with_limits(small(1000, 1000, 50));
    let spoof = "a.txt (1 bytes)\nfile     secret.txt";
    let names: Vec<&[u8]> = vec![
        b"plain.txt",
        spoof.as_bytes(),
        b"esc\x1b[2Jx",
        b"tab\there",
        b"quo\"te",
        b"back\\slash",
        b"two words",
        b"bad\xffbyte",
        b"x -> y",
    ];
    for n in &names {
        std::fs::write(fx.root.join(std::ffi::OsStr::from_bytes(n)), "1").unwrap();
    }
    std::fs::create_dir(fx.root.join("dir\nwith newline")).unwrap();
    let l = fx.ok("file_list", json!({"recursive": true})).await;
    let lines: Vec<&str> = l.lines().collect();
    // The header and one line per entry, nothing more.
    assert_eq!(lines.len(), 1 + names.len() + 1, "{l}");
    for want in [
        "file     plain.txt (1 bytes)",
        "file     \"a.txt (1 bytes)\\nfile     secret.txt\" (1 bytes)",
        "file     \"esc\\u{1b}[2Jx\" (1 bytes)",
        "file     \"tab\\there\" (1 bytes)",
        "file     \"quo\\\"te\" (1 bytes)",
        "file     \"back\\\\slash\" (1 bytes)",
        "file     \"two words\" (1 bytes)",
        "file     \"bad\\xffbyte\" (1 bytes)",
        "file     \"x -> y\" (1 bytes)",
        "dir      \"dir\\nwith newline/\"",
    ] {
        assert!(lines.contains(&want), "{want:?} not in:\n{l}");
    }
    // No line but the real one starts like a file entry for `secret.txt`.
    assert!(
        !lines.iter().any(|x| x.starts_with("file     secret.txt")),
        "{l}"
    );
    assert!(!l.contains('\u{1b}'), "{l}");
}

/// One check per malformed call: the refusal names the argument.
async fn bad_args(fx: &Fx, tool: &str, args: Value, needle: &str) {
    let m = fx.refused(tool, args.clone(), needle).await;
    assert!(m.starts_with(tool), "{tool} {args}: {m}");
}

#[tokio::test]
async fn malformed_arguments_are_refused_naming_the_argument() {
    let fx = Fx::new(ResolutionMode::Openat2);
    fx.write("a.txt", "a");
    bad_args(
        &fx,
        "file_read",
        json!({}),
        "missing required argument `path`",
    )
    .await;
    bad_args(
        &fx,
        "file_read",
        json!({"path": 3}),
        "`path` must be a string",
    )
    .await;
    bad_args(
        &fx,
        "file_read",
        json!({"path": "a.txt", "offset": "1"}),
        "`offset`",
    )
    .await;
    bad_args(
        &fx,
        "file_read",
        json!({"path": "a.txt", "limit": 0}),
        "`limit`",
    )
    .await;
    bad_args(
        &fx,
        "file_read",
        json!({"path": "a.txt", "pth": "x"}),
        "unknown argument `pth`",
    )
    .await;
    bad_args(&fx, "file_read", json!("a.txt"), "JSON object").await;
    bad_args(
        &fx,
        "file_list",
        json!({"recursive": "yes"}),
        "`recursive` must be a boolean",
    )
    .await;
    bad_args(
        &fx,
        "file_list",
        json!({"max_entries": -1}),
        "`max_entries`",
    )
    .await;
    bad_args(
        &fx,
        "file_write",
        json!({"path": "b.txt"}),
        "missing required argument `content`",
    )
    .await;
    bad_args(
        &fx,
        "file_write",
        json!({"path": "b.txt", "content": "x", "mode": 7}),
        "`mode`",
    )
    .await;
    bad_args(
        &fx,
        "file_write",
        json!({"path": "b.txt", "content": "x", "create_dirs": 1}),
        "`create_dirs`",
    )
    .await;
    bad_args(
        &fx,
        "file_edit",
        json!({"path": "a.txt", "old": "a"}),
        "missing required argument `new`",
    )
    .await;
    bad_args(
        &fx,
        "file_edit",
        json!({"path": "a.txt", "old": "a", "new": "b", "replace_all": "no"}),
        "`replace_all`",
    )
    .await;
    assert!(!fx.root.join("b.txt").exists());
    assert_eq!(fx.read("a.txt"), "a");
    // Optional arguments sent as null count as absent.
    assert_eq!(
        fx.ok("file_read", json!({"path": "a.txt", "offset": null}))
            .await,
        "a"
    );
}

#[test]
fn risk_is_declared_per_tool_and_malformed_is_highest() {
    let fx = Fx::new(ResolutionMode::Openat2);
    for (tool, risk) in [
        ("file_read", Risk::Low),
        ("file_list", Risk::Low),
        ("file_write", Risk::Medium),
        ("file_edit", Risk::Medium),
        ("shell", Risk::High),
    ] {
        let t = fx.tool(tool);
        assert_eq!(t.assess(&json!({"path": "a"})).risk, risk, "{tool}");
        assert_eq!(t.assess(&json!("garbage")).risk, risk, "{tool}");
        let spec = t.spec();
        assert_eq!(spec.parameters["type"], "object", "{tool}");
        assert_eq!(spec.parameters["additionalProperties"], false, "{tool}");
        assert!(spec.parameters["properties"].is_object(), "{tool}");
        assert!(spec.parameters["required"].is_array(), "{tool}");
        assert!(!spec.description.is_empty());
    }
}

#[test]
fn kernel_tools_are_the_five_tools_with_the_default_caps() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = std::sync::Arc::new(pincer_tools::Workspace::open(tmp.path(), vec![]).unwrap());
    let limits = ToolLimits::default();
    assert_eq!(
        (
            limits.read_cap,
            limits.write_cap,
            limits.list_max,
            limits.shell_output_cap
        ),
        (256 * 1024, 1024 * 1024, 500, 64 * 1024)
    );
    assert_eq!(limits.shell_timeout_default.as_secs(), 30);
    assert_eq!(limits.shell_timeout_max.as_secs(), 300);
    let names: Vec<String> = pincer_tools::kernel_tools(ws, &limits, "a")
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert_eq!(
        names,
        ["file_read", "file_list", "file_write", "file_edit", "shell"]
    );
}
