//! `PINCER_HOME`: where pincer keeps its state. The binary decides the path
//! (it reads the environment); this module is the one place that lays it
//! out — every directory and file, and which of them no tool may touch.

use crate::fsutil::create_private_dir;
use std::io;
use std::path::{Path, PathBuf};

/// The state directory and the paths inside it.
#[derive(Debug, Clone)]
pub struct Home {
    root: PathBuf,
}

/// One entry of the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The name under `PINCER_HOME`.
    pub name: &'static str,
    pub dir: bool,
    /// No tool may read or write it (the file tools refuse it by identity,
    /// the shell cannot see it).
    pub protected: bool,
    pub what: &'static str,
}

/// Every entry of `PINCER_HOME`, in the order `doctor` lists them.
pub const LAYOUT: &[Entry] = &[
    Entry {
        name: "config.toml",
        dir: false,
        protected: true,
        what: "the configuration; an agent that could write it could raise its own autonomy",
    },
    Entry {
        name: "sessions",
        dir: true,
        protected: true,
        what: "conversations, one append-only JSONL file per session",
    },
    Entry {
        name: "audit",
        dir: true,
        protected: true,
        what: "the hash-chained audit trail and its anchor",
    },
    Entry {
        name: "approvals",
        dir: true,
        protected: true,
        what: "calls waiting for a person; a tool that could write here could approve its own calls",
    },
    Entry {
        name: "memory",
        dir: true,
        protected: true,
        what: "memory pages (canonical) and their disposable search index",
    },
    Entry {
        name: "keys",
        dir: true,
        protected: true,
        what: "signing keys",
    },
    Entry {
        name: "gateway",
        dir: true,
        protected: true,
        what: "the gateway's paired tokens (hashed) and pairing codes; a tool that could write here could pair itself",
    },
    Entry {
        name: "skills",
        dir: true,
        protected: true,
        what: "markdown that extends every system prompt",
    },
    Entry {
        name: "camera",
        dir: true,
        protected: true,
        what: "pictures the camera tool took",
    },
    Entry {
        name: "cron",
        dir: true,
        protected: true,
        what: "scheduled jobs and when each last ran; a job an agent could add would run its prompt unattended",
    },
    Entry {
        name: "channels",
        dir: true,
        protected: true,
        what: "chat channels' state (the Telegram update offset)",
    },
    Entry {
        name: "serve",
        dir: true,
        protected: true,
        what: "`pincer serve`'s lock and the status of its services",
    },
    Entry {
        name: "HEARTBEAT.md",
        dir: false,
        protected: true,
        what: "the heartbeat's check-in prompt; an agent that could write it would steer every heartbeat",
    },
    Entry {
        name: "history.txt",
        dir: false,
        protected: true,
        what: "the REPL's line history",
    },
];

/// The name the default workspace had inside `PINCER_HOME` before it moved
/// out (see [`Home::default_workspace`]).
pub const OLD_WORKSPACE: &str = "workspace";

impl Home {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn at(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    pub fn config_path(&self) -> PathBuf {
        self.at("config.toml")
    }

    pub fn sessions_dir(&self) -> PathBuf {
        self.at("sessions")
    }

    /// The tamper-evident audit trail.
    pub fn audit_dir(&self) -> PathBuf {
        self.at("audit")
    }

    /// Pending approvals and their answers.
    pub fn approvals_dir(&self) -> PathBuf {
        self.at("approvals")
    }

    /// Memory pages (`pages/`), the index and the consolidation watermark.
    pub fn memory_dir(&self) -> PathBuf {
        self.at("memory")
    }

    pub fn keys_dir(&self) -> PathBuf {
        self.at("keys")
    }

    /// The gateway's token store and pairing codes.
    pub fn gateway_dir(&self) -> PathBuf {
        self.at("gateway")
    }

    pub fn skills_dir(&self) -> PathBuf {
        self.at("skills")
    }

    pub fn camera_dir(&self) -> PathBuf {
        self.at("camera")
    }

    /// Cron jobs (`jobs.json`) and their run state (`state.json`).
    pub fn cron_dir(&self) -> PathBuf {
        self.at("cron")
    }

    /// Chat channels' state.
    pub fn channels_dir(&self) -> PathBuf {
        self.at("channels")
    }

    /// `pincer serve`'s lock and status.
    pub fn serve_dir(&self) -> PathBuf {
        self.at("serve")
    }

    /// The heartbeat's prompt.
    pub fn heartbeat_path(&self) -> PathBuf {
        self.at("HEARTBEAT.md")
    }

    pub fn history_path(&self) -> PathBuf {
        self.at("history.txt")
    }

    /// Where the workspace is when nothing names one: beside `PINCER_HOME`,
    /// never inside it (`~/.pincer` → `~/.pincer-workspace`), so no path
    /// from the workspace, `..` included, leads into pincer's state, and
    /// the shell's sandbox can hide all of `PINCER_HOME`.
    pub fn default_workspace(&self) -> PathBuf {
        let name = match self.root.file_name() {
            Some(n) => {
                let mut n = n.to_os_string();
                n.push("-workspace");
                n
            }
            None => "pincer-workspace".into(),
        };
        match self.root.parent() {
            Some(parent) => parent.join(name),
            None => PathBuf::from("/").join(name),
        }
    }

    /// Where the default workspace was before it moved out of the home.
    pub fn old_workspace(&self) -> PathBuf {
        self.at(OLD_WORKSPACE)
    }

    /// Every protected entry of [`LAYOUT`], as a path.
    pub fn protected(&self) -> Vec<PathBuf> {
        LAYOUT
            .iter()
            .filter(|e| e.protected)
            .map(|e| self.at(e.name))
            .collect()
    }

    /// Creates the home directory (mode 0700) if it is missing.
    pub fn ensure(&self) -> io::Result<()> {
        create_private_dir(&self.root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_accessor_is_in_the_layout() {
        let h = Home::new("/h");
        let named = [
            h.config_path(),
            h.sessions_dir(),
            h.audit_dir(),
            h.approvals_dir(),
            h.memory_dir(),
            h.keys_dir(),
            h.gateway_dir(),
            h.skills_dir(),
            h.camera_dir(),
            h.cron_dir(),
            h.channels_dir(),
            h.serve_dir(),
            h.heartbeat_path(),
            h.history_path(),
        ];
        for p in &named {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            assert!(
                LAYOUT.iter().any(|e| e.name == name),
                "{name} not in LAYOUT"
            );
        }
        assert_eq!(named.len(), LAYOUT.len());
        assert!(!h.default_workspace().starts_with(h.root()));
        assert!(h.protected().contains(&h.approvals_dir()));
        assert!(h.protected().contains(&h.skills_dir()));
        assert!(h.protected().contains(&h.gateway_dir()));
    }

    #[test]
    fn the_default_workspace_is_beside_the_home() {
        for (home, ws) in [
            ("/h", "/h-workspace"),
            ("/home/u/.pincer", "/home/u/.pincer-workspace"),
            ("/srv/pincer/", "/srv/pincer-workspace"),
            ("/", "/pincer-workspace"),
        ] {
            let h = Home::new(home);
            assert_eq!(h.default_workspace(), PathBuf::from(ws), "{home}");
            assert!(!h.default_workspace().starts_with(h.root()) || home == "/");
        }
    }
}
