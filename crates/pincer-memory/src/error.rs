//! The one error type of the memory crate. Every variant names what the
//! caller must fix: the field of a page or query, or the file on disk.

use std::io;
use std::path::PathBuf;

/// What went wrong in a memory operation.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// Bad caller input (a page being written, a query, a limit): fix `field`.
    #[error("invalid {field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    /// A page file on disk does not parse. `field` is the front-matter key
    /// (or `front matter` / `body`) at fault.
    #[error("{}: invalid {field}: {reason}", file.display())]
    Corrupt {
        file: PathBuf,
        field: String,
        reason: String,
    },
    /// No page has this id.
    #[error("no memory page with id `{id}`")]
    NotFound { id: String },
    /// `write` never replaces a page: use `update`/`upsert` for that.
    #[error("memory page `{id}` already exists (use update to change it)")]
    Exists { id: String },
    /// The file system refused.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The SQLite index failed in a way a rebuild did not fix.
    #[error("memory index {}: {reason}", path.display())]
    Index { path: PathBuf, reason: String },
}

impl MemoryError {
    pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        Self::Invalid {
            field,
            reason: reason.into(),
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }

    /// The field this error is about, when it is about one.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::Invalid { field, .. } => Some(field),
            Self::Corrupt { field, .. } => Some(field),
            Self::NotFound { .. } | Self::Exists { .. } => Some("id"),
            Self::Io { .. } | Self::Index { .. } => None,
        }
    }
}
