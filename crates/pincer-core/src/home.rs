//! `PINCER_HOME`: where pincer keeps its state. The binary decides the path
//! (it reads the environment); this module only lays it out.

use crate::fsutil::create_private_dir;
use std::io;
use std::path::{Path, PathBuf};

/// The state directory and the paths inside it.
#[derive(Debug, Clone)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn config_path(&self) -> PathBuf {
        self.root.join("config.toml")
    }

    pub fn sessions_dir(&self) -> PathBuf {
        self.root.join("sessions")
    }

    /// The tamper-evident audit trail (`trail.jsonl`, `anchor.json`).
    pub fn audit_dir(&self) -> PathBuf {
        self.root.join("audit")
    }

    /// Pending approvals and their answers.
    pub fn approvals_dir(&self) -> PathBuf {
        self.root.join("approvals")
    }

    /// Creates the home directory (mode 0700) if it is missing.
    pub fn ensure(&self) -> io::Result<()> {
        create_private_dir(&self.root)
    }
}
