//! What a run reports: per layer, whether it was enforced, and how the
//! command ended. The helper builds it; the caller turns it into
//! [`crate::Finished`] and the lines its result shows.

use crate::spec::Layer;
use serde::{Deserialize, Serialize};

/// How one layer stood in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Applied (and, where the kernel can tell, verified).
    Enforced,
    /// Required but not applied; the spec allowed this layer to degrade.
    Degraded,
    /// Not required for this run (e.g. no user namespace as root, no
    /// network namespace with the network on), or a second line of defence
    /// the machine lacks.
    NotApplied,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerStatus {
    pub layer: Layer,
    pub state: State,
    /// What was applied ("ABI 7", "cgroup v1 /sys/fs/cgroup/memory/…"), or
    /// why it was not.
    pub detail: String,
}

/// How the command ended, as the helper saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Outcome {
    Exited {
        code: i32,
    },
    Signaled {
        signal: i32,
    },
    /// A required layer could not be applied: the command did not run.
    SetupFailed {
        layer: Layer,
        message: String,
    },
    /// Every layer was in place but the program could not be started.
    SpawnFailed {
        message: String,
    },
    /// Every layer was in place and the init had started the command (or
    /// was starting it), but died before it could say how the command
    /// ended; the kernel then killed the command and everything it started
    /// (`message`: how the init ended, and how far it got). The command's
    /// own memory use causes this only where the init could not leave the
    /// run's cgroups, or in the moment before it does.
    InitDied {
        message: String,
    },
}

/// The helper's final word to the caller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub layers: Vec<LayerStatus>,
    /// The Landlock ABI the kernel offered, when Landlock was tried.
    pub landlock_abi: Option<u32>,
    pub outcome: Outcome,
    /// Processes still running in the sandbox when the command exited
    /// (killed with it).
    pub leftovers: u32,
    /// What the helper has to say about this run besides the layers
    /// (`note: …` lines for the result).
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Report {
    pub fn state(&self, layer: Layer) -> Option<State> {
        self.layers
            .iter()
            .find(|l| l.layer == layer)
            .map(|l| l.state)
    }

    pub fn degraded(&self) -> impl Iterator<Item = &LayerStatus> {
        self.layers.iter().filter(|l| l.state == State::Degraded)
    }
}

/// Describes a wait status the way a person reads it.
pub fn describe_signal(sig: i32) -> &'static str {
    match sig {
        1 => " (SIGHUP)",
        2 => " (SIGINT)",
        6 => " (SIGABRT)",
        9 => " (SIGKILL)",
        11 => " (SIGSEGV)",
        13 => " (SIGPIPE)",
        15 => " (SIGTERM)",
        24 => " (SIGXCPU)",
        25 => " (SIGXFSZ)",
        _ => "",
    }
}
