//! Protected paths (pincer's own state) next to the workspace (TL1).

use crate::support::{Fx, MODES};
use pincer_tools::{ToolLimits, Workspace, WorkspaceError};
use serde_json::json;

fn open_err(root: &std::path::Path, protected: Vec<std::path::PathBuf>) -> WorkspaceError {
    match Workspace::open(root, protected) {
        Err(e) => e,
        Ok(ws) => panic!("opened {ws:?}"),
    }
}

#[test]
fn a_root_overlapping_a_protected_path_is_refused_at_open() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let home = base.join("home");
    std::fs::create_dir_all(home.join("ws/sessions")).unwrap();

    // The root contains a protected directory.
    let e = open_err(&home, vec![home.join("ws/sessions")]);
    assert!(
        matches!(
            e,
            WorkspaceError::OverlapsProtected {
                relation: "contains",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("sessions"), "{e}");
    // ...even one that does not exist yet.
    let e = open_err(&home, vec![home.join("keys/not-yet")]);
    assert!(
        matches!(
            e,
            WorkspaceError::OverlapsProtected {
                relation: "contains",
                ..
            }
        ),
        "{e}"
    );
    // The root is a protected path.
    let e = open_err(&home.join("ws"), vec![home.join("ws")]);
    assert!(
        matches!(e, WorkspaceError::OverlapsProtected { relation: "is", .. }),
        "{e}"
    );
    // The root is inside one (PINCER_HOME as the protected path).
    let e = open_err(&home.join("ws"), vec![home.clone()]);
    assert!(
        matches!(
            e,
            WorkspaceError::OverlapsProtected {
                relation: "is inside",
                ..
            }
        ),
        "{e}"
    );
    // A protected path spelled through a symlink into the root.
    std::os::unix::fs::symlink(home.join("ws"), base.join("alias")).unwrap();
    let e = open_err(&home.join("ws"), vec![base.join("alias/sessions")]);
    assert!(matches!(e, WorkspaceError::OverlapsProtected { .. }), "{e}");
    // Disjoint is fine.
    std::fs::create_dir(base.join("state")).unwrap();
    let ws = Workspace::open(&home.join("ws"), vec![base.join("state")]).unwrap();
    assert_eq!(ws.protected_paths(), vec![base.join("state").as_path()]);
    // A root that is not a directory.
    std::fs::write(base.join("file"), "x").unwrap();
    assert!(matches!(
        open_err(&base.join("file"), vec![]),
        WorkspaceError::NotADirectory(_)
    ));
}

/// A protected directory that comes to be inside the workspace after it was
/// opened (moved in; a bind mount would look the same) is still denied: the
/// check is by identity, not by name.
#[tokio::test]
async fn a_protected_directory_inside_the_root_is_denied() {
    for mode in MODES {
        let fx = Fx::with(mode, ToolLimits::default(), vec!["state"], |base| {
            std::fs::create_dir(base.join("state")).unwrap();
            std::fs::write(base.join("state/keys.txt"), "KEY-MATERIAL").unwrap();
        });
        std::fs::rename(fx.base.join("state"), fx.root.join("state")).unwrap();
        fx.write("ok.txt", "fine");

        for p in ["state/keys.txt", "state"] {
            fx.refused("file_read", json!({"path": p}), "protected")
                .await;
        }
        fx.refused("file_list", json!({"path": "state"}), "protected")
            .await;
        fx.refused(
            "file_write",
            json!({"path": "state/new.txt", "content": "x"}),
            "protected",
        )
        .await;
        fx.refused(
            "file_write",
            json!({"path": "state/keys.txt", "content": "x"}),
            "protected",
        )
        .await;
        fx.refused(
            "file_edit",
            json!({"path": "state/keys.txt", "old": "KEY", "new": "x"}),
            "protected",
        )
        .await;
        // Reached through an inside symlink: same answer.
        fx.symlink("state", "innocent");
        fx.refused(
            "file_read",
            json!({"path": "innocent/keys.txt"}),
            "protected",
        )
        .await;
        // Listing the root shows it is there but not what is inside.
        let l = fx.ok("file_list", json!({"recursive": true})).await;
        assert!(l.contains("dir      state (protected: not listed)"), "{l}");
        assert!(!l.contains("keys.txt"), "{l}");
        assert!(l.contains("file     ok.txt (4 bytes)"), "{l}");

        assert_eq!(
            std::fs::read_to_string(fx.root.join("state/keys.txt")).unwrap(),
            "KEY-MATERIAL"
        );
        assert!(!fx.root.join("state/new.txt").exists());
    }
}

/// A hard link to a protected file is the protected file.
#[tokio::test]
async fn a_hard_link_to_a_protected_file_is_denied() {
    for mode in MODES {
        let fx = Fx::with(mode, ToolLimits::default(), vec!["keys.txt"], |base| {
            std::fs::write(base.join("keys.txt"), "KEY-MATERIAL").unwrap();
        });
        std::fs::hard_link(fx.base.join("keys.txt"), fx.root.join("k")).unwrap();
        fx.refused("file_read", json!({"path": "k"}), "protected")
            .await;
        fx.refused(
            "file_edit",
            json!({"path": "k", "old": "KEY", "new": "x"}),
            "protected",
        )
        .await;
        fx.refused(
            "file_write",
            json!({"path": "k", "content": "x"}),
            "protected",
        )
        .await;
        let l = fx.ok("file_list", json!({})).await;
        assert!(l.contains("file     k (protected: not listed)"), "{l}");
        assert_eq!(
            std::fs::read_to_string(fx.base.join("keys.txt")).unwrap(),
            "KEY-MATERIAL"
        );
    }
}

/// A hard link placed in the workspace to a file *inside* a protected
/// directory (the audit trail, a session, a memory page) is that file:
/// refused by every file tool, whatever its name. Files that merely have
/// several links (both inside the workspace, or to an unprotected file) are
/// not affected.
#[tokio::test]
async fn a_hard_link_to_a_file_inside_a_protected_directory_is_denied() {
    for mode in MODES {
        let fx = Fx::with(
            mode,
            ToolLimits::default(),
            vec!["state/audit", "state/sessions", "state/memory"],
            |base| {
                for (rel, text) in [
                    ("state/audit/trail.jsonl", "TRAIL-LINE"),
                    ("state/sessions/main.jsonl", "SESSION-LINE"),
                    ("state/memory/pages/garden.md", "MEMORY-PAGE"),
                ] {
                    let p = base.join(rel);
                    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                    std::fs::write(p, text).unwrap();
                }
                std::fs::write(base.join("plain.txt"), "PLAIN").unwrap();
            },
        );
        for (target, name) in [
            ("state/audit/trail.jsonl", "notes.txt"),
            ("state/sessions/main.jsonl", "deep/er/s.jsonl"),
            ("state/memory/pages/garden.md", "page.md"),
        ] {
            let link = fx.root.join(name);
            std::fs::create_dir_all(link.parent().unwrap()).unwrap();
            std::fs::hard_link(fx.base.join(target), &link).unwrap();
            fx.refused("file_read", json!({"path": name}), "protected")
                .await;
            fx.refused(
                "file_edit",
                json!({"path": name, "old": "LINE", "new": "x"}),
                "protected",
            )
            .await;
            fx.refused(
                "file_write",
                json!({"path": name, "content": "overwritten"}),
                "protected",
            )
            .await;
        }
        let l = fx.ok("file_list", json!({"recursive": true})).await;
        assert!(
            l.contains("file     notes.txt (protected: not listed)"),
            "{l}"
        );
        assert!(
            l.contains("file     page.md (protected: not listed)"),
            "{l}"
        );
        assert!(l.contains("deep/er/s.jsonl (protected: not listed)"), "{l}");
        for (rel, text) in [
            ("state/audit/trail.jsonl", "TRAIL-LINE"),
            ("state/sessions/main.jsonl", "SESSION-LINE"),
            ("state/memory/pages/garden.md", "MEMORY-PAGE"),
        ] {
            assert_eq!(std::fs::read_to_string(fx.base.join(rel)).unwrap(), text);
        }

        // Several links, none of them pincer's state: readable.
        std::fs::hard_link(fx.base.join("plain.txt"), fx.root.join("plain.txt")).unwrap();
        fx.write("a.txt", "TWICE");
        std::fs::hard_link(fx.root.join("a.txt"), fx.root.join("b.txt")).unwrap();
        assert!(
            fx.ok("file_read", json!({"path": "plain.txt"}))
                .await
                .contains("PLAIN")
        );
        assert!(
            fx.ok("file_read", json!({"path": "b.txt"}))
                .await
                .contains("TWICE")
        );
    }
}
