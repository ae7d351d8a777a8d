//! `cron/jobs.json` and `cron/state.json` (see the module doc of `cron`).

use super::schedule::Schedule;
use pincer_core::fsutil::{create_private_dir, write_atomic};
use pincer_core::message::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

/// The longest prompt a job may hold.
pub const MAX_PROMPT_BYTES: usize = 16 * 1024;

/// What a job does about runs it missed while pincer was down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Missed {
    /// Skip them, say so, wait for the next one.
    #[default]
    Skip,
    /// Run once now for all of them.
    RunOnce,
}

impl Missed {
    pub fn as_str(self) -> &'static str {
        match self {
            Missed::Skip => "skip",
            Missed::RunOnce => "run-once",
        }
    }

    pub fn parse(s: &str) -> Option<Missed> {
        match s {
            "skip" => Some(Missed::Skip),
            "run-once" => Some(Missed::RunOnce),
            _ => None,
        }
    }
}

/// One job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    pub name: String,
    pub schedule: String,
    pub prompt: String,
    #[serde(default)]
    pub missed: Missed,
    /// Where the reply goes (`telegram:123`); none keeps it in the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<String>,
    pub created: Timestamp,
}

impl Job {
    /// The session its turns run in.
    pub fn session_key(&self) -> String {
        format!("cron-{}", self.name)
    }
}

/// How a job's last run went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastRun {
    /// `schedule`, `catch_up`, `manual`.
    pub trigger: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled: Option<Timestamp>,
    pub started: Timestamp,
    /// Absent: the run was cut short (pincer stopped or crashed mid-run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<Timestamp>,
    /// `ok` or `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Runs missed before it (a catch-up run), or skipped (`skipped`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub missed: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One job's state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobState {
    /// When it is next due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_due: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<LastRun>,
}

/// `state.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CronState {
    #[serde(default)]
    pub jobs: BTreeMap<String, JobState>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct JobsFile {
    version: u32,
    jobs: Vec<Job>,
}

const VERSION: u32 = 1;

/// Errors of the cron store; each names the job, field or file.
#[derive(Debug, thiserror::Error)]
pub enum CronError {
    #[error("--name: `{name}` {reason}")]
    BadName { name: String, reason: &'static str },
    #[error("--schedule: {0}")]
    BadSchedule(String),
    #[error("--prompt: {0}")]
    BadPrompt(String),
    #[error("--notify: {0}")]
    BadNotify(String),
    #[error("a job named `{0}` already exists; remove it first or choose another name")]
    Exists(String),
    #[error("no job named `{0}`; `pincer cron list` shows the jobs")]
    Unknown(String),
    #[error("{}: {reason}", path.display())]
    Corrupt { path: PathBuf, reason: String },
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> CronError {
    let path = path.to_path_buf();
    move |source| CronError::Io { what, path, source }
}

/// A job name: it becomes part of a session key.
pub fn check_name(name: &str) -> Result<(), CronError> {
    let bad = |reason| {
        Err(CronError::BadName {
            name: name.escape_debug().to_string(),
            reason,
        })
    };
    if name.is_empty() || name.len() > 40 {
        return bad("must be 1 to 40 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
    {
        return bad("may hold only a-z, 0-9, `-` and `_`");
    }
    Ok(())
}

/// The job directory of one home.
#[derive(Debug, Clone)]
pub struct CronStore {
    dir: PathBuf,
}

/// Held while a read-modify-write runs.
struct Locked(#[allow(dead_code)] File);

impl CronStore {
    /// `PINCER_HOME/cron`, created (0700) if missing.
    pub fn open(dir: &Path) -> Result<CronStore, CronError> {
        create_private_dir(dir).map_err(io("cannot create", dir))?;
        Ok(CronStore {
            dir: dir.to_path_buf(),
        })
    }

    fn jobs_path(&self) -> PathBuf {
        self.dir.join("jobs.json")
    }

    fn state_path(&self) -> PathBuf {
        self.dir.join("state.json")
    }

    fn lock(&self) -> Result<Locked, CronError> {
        let path = self.dir.join(".lock");
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io("cannot open", &path))?;
        f.lock().map_err(io("cannot lock", &path))?;
        Ok(Locked(f))
    }

    fn read_json<T: Default + serde::de::DeserializeOwned>(path: &Path) -> Result<T, CronError> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| CronError::Corrupt {
                path: path.to_path_buf(),
                reason: format!("not a file pincer wrote: {e}"),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
            Err(e) => Err(io("cannot read", path)(e)),
        }
    }

    fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), CronError> {
        let text = serde_json::to_vec_pretty(value).unwrap_or_default();
        write_atomic(path, &text).map_err(io("cannot write", path))
    }

    /// The jobs, in the order they were added.
    pub fn jobs(&self) -> Result<Vec<Job>, CronError> {
        let file: JobsFile = Self::read_json(&self.jobs_path())?;
        if file.version > VERSION {
            return Err(CronError::Corrupt {
                path: self.jobs_path(),
                reason: format!(
                    "version {} is newer than this pincer reads ({VERSION})",
                    file.version
                ),
            });
        }
        Ok(file.jobs)
    }

    /// A cheap stamp of `jobs.json` (length and modification time), to
    /// notice a change without reading it.
    pub fn jobs_stamp(&self) -> Option<(u64, std::time::SystemTime)> {
        let m = std::fs::metadata(self.jobs_path()).ok()?;
        Some((m.len(), m.modified().ok()?))
    }

    /// Validates and adds `job`.
    pub fn add(&self, job: Job) -> Result<Job, CronError> {
        check_name(&job.name)?;
        Schedule::parse(&job.schedule).map_err(CronError::BadSchedule)?;
        if job.prompt.trim().is_empty() {
            return Err(CronError::BadPrompt("is empty".into()));
        }
        if job.prompt.len() > MAX_PROMPT_BYTES {
            return Err(CronError::BadPrompt(format!(
                "is {} bytes; at most {MAX_PROMPT_BYTES}",
                job.prompt.len()
            )));
        }
        if let Some(t) = &job.notify {
            crate::config::check_target(t).map_err(CronError::BadNotify)?;
        }
        let _lock = self.lock()?;
        let mut file: JobsFile = Self::read_json(&self.jobs_path())?;
        if file.jobs.iter().any(|j| j.name == job.name) {
            return Err(CronError::Exists(job.name));
        }
        file.version = VERSION;
        file.jobs.push(job.clone());
        Self::write_json(&self.jobs_path(), &file)?;
        Ok(job)
    }

    /// Removes job `name` and its state.
    pub fn remove(&self, name: &str) -> Result<Job, CronError> {
        let _lock = self.lock()?;
        let mut file: JobsFile = Self::read_json(&self.jobs_path())?;
        let Some(at) = file.jobs.iter().position(|j| j.name == name) else {
            return Err(CronError::Unknown(name.to_string()));
        };
        let job = file.jobs.remove(at);
        file.version = VERSION;
        Self::write_json(&self.jobs_path(), &file)?;
        let mut state: CronState = Self::read_json(&self.state_path())?;
        if state.jobs.remove(name).is_some() {
            Self::write_json(&self.state_path(), &state)?;
        }
        Ok(job)
    }

    pub fn state(&self) -> Result<CronState, CronError> {
        Self::read_json(&self.state_path())
    }

    /// Changes the state of job `name` under the lock; returns the result
    /// of `f`.
    pub fn update<R>(
        &self,
        name: &str,
        f: impl FnOnce(&mut JobState) -> R,
    ) -> Result<R, CronError> {
        let _lock = self.lock()?;
        let mut state: CronState = Self::read_json(&self.state_path())?;
        let r = f(state.jobs.entry(name.to_string()).or_default());
        Self::write_json(&self.state_path(), &state)?;
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str) -> Job {
        Job {
            name: name.into(),
            schedule: "0 7 * * *".into(),
            prompt: "Good morning: read the sensor.".into(),
            missed: Missed::Skip,
            notify: None,
            created: Timestamp::now(),
        }
    }

    #[test]
    fn add_list_remove_and_bad_input_names_the_flag() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = CronStore::open(&dir.path().join("cron")).expect("open");
        assert!(store.jobs().expect("none").is_empty());
        store.add(job("morning")).expect("added");
        let e = store.add(job("morning")).expect_err("twice");
        assert!(e.to_string().contains("already exists"), "{e}");
        for (bad, needle) in [
            (
                Job {
                    name: "Bad Name".into(),
                    ..job("x")
                },
                "--name",
            ),
            (
                Job {
                    schedule: "nope".into(),
                    ..job("y")
                },
                "--schedule",
            ),
            (
                Job {
                    prompt: " ".into(),
                    ..job("z")
                },
                "--prompt",
            ),
            (
                Job {
                    notify: Some("me".into()),
                    ..job("w")
                },
                "--notify",
            ),
        ] {
            let e = store.add(bad).expect_err("refused");
            assert!(e.to_string().contains(needle), "{e}");
        }
        store
            .update("morning", |s| s.next_due = Some(Timestamp::now()))
            .expect("state");
        assert!(store.state().expect("state").jobs.contains_key("morning"));
        assert_eq!(store.jobs().expect("one").len(), 1);
        store.remove("morning").expect("removed");
        assert!(store.jobs().expect("none").is_empty());
        assert!(
            store.state().expect("state").jobs.is_empty(),
            "state goes with the job"
        );
        let e = store.remove("morning").expect_err("gone");
        assert!(e.to_string().contains("no job named"), "{e}");
    }

    #[test]
    fn a_corrupt_file_is_an_error_naming_it_never_an_empty_list() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = CronStore::open(dir.path()).expect("open");
        std::fs::write(dir.path().join("jobs.json"), "{not json").expect("write");
        let e = store.jobs().expect_err("corrupt");
        assert!(e.to_string().contains("jobs.json"), "{e}");
    }
}
