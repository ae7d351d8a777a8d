//! The one error type of the benchmark. Bad data names its file and field;
//! failures of the stores it drives carry their own error.

use std::io;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A data file does not have the LoCoMo shape: fix `field` in `file`.
    #[error("{}: invalid {field}: {reason}", file.display())]
    Data {
        file: PathBuf,
        field: String,
        reason: String,
    },
    /// A bad option (an unknown strategy, a zero budget…): fix `field`.
    #[error("invalid {field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error("{}: {error}", path.display())]
    Io { path: PathBuf, error: io::Error },
    // The wrapped errors are in the message, not chained as a `source`,
    // so a report that prints the whole chain says each thing once.
    /// pincer's session store refused.
    #[error("session store: {0}")]
    Session(pincer_core::session::SessionError),
    /// pincer's trimmer refused.
    #[error("trim: {0}")]
    Trim(pincer_core::trim::TrimError),
    /// pincer's memory pages or index refused.
    #[error("memory: {0}")]
    Memory(pincer_memory::MemoryError),
    /// The SQLite database of the Seahorse port.
    #[error("seahorse port database {}: {reason}", path.display())]
    Sqlite { path: PathBuf, reason: String },
    /// A strategy failed on a conversation.
    #[error("{strategy} on conversation {sample}: {error}")]
    Strategy {
        strategy: &'static str,
        sample: String,
        error: Box<BenchError>,
    },
    /// What the stores handed back disagrees with what was put in: a bug
    /// in the harness or in the store, never something to average over.
    #[error("{0}")]
    Inconsistent(String),
}

impl From<pincer_core::session::SessionError> for BenchError {
    fn from(e: pincer_core::session::SessionError) -> Self {
        Self::Session(e)
    }
}

impl From<pincer_core::trim::TrimError> for BenchError {
    fn from(e: pincer_core::trim::TrimError) -> Self {
        Self::Trim(e)
    }
}

impl From<pincer_memory::MemoryError> for BenchError {
    fn from(e: pincer_memory::MemoryError) -> Self {
        Self::Memory(e)
    }
}

impl BenchError {
    pub(crate) fn data(
        file: impl Into<PathBuf>,
        field: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self::Data {
            file: file.into(),
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, error: io::Error) -> Self {
        Self::Io {
            path: path.into(),
            error,
        }
    }

    /// The field this error is about, when it is about one.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::Data { field, .. } => Some(field),
            Self::Invalid { field, .. } => Some(field),
            Self::Strategy { error, .. } => error.field(),
            _ => None,
        }
    }
}
