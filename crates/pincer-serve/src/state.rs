//! What `pincer serve` is doing, on disk for `pincer status`:
//! `PINCER_HOME/serve/status.json`, rewritten atomically (temp, fsync,
//! rename) whenever a service changes state, and `serve/lock`, which the
//! daemon holds (an advisory `flock`) for as long as it runs. A reader
//! knows the daemon is alive when it cannot take the lock, so a status
//! file left by a daemon that was killed is reported as such, not as a
//! running service. One daemon per `PINCER_HOME`: a second is refused.

use pincer_core::fsutil::{create_private_dir, write_atomic};
use pincer_core::message::Timestamp;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// Where one service stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceState {
    Starting,
    Running,
    /// It failed; the supervisor waits, then starts it again.
    Retrying,
    /// The daemon is draining it.
    Stopping,
    Stopped,
}

impl ServiceState {
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceState::Starting => "starting",
            ServiceState::Running => "running",
            ServiceState::Retrying => "retrying",
            ServiceState::Stopping => "stopping",
            ServiceState::Stopped => "stopped",
        }
    }
}

/// One service's line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceStatus {
    pub name: String,
    pub state: ServiceState,
    /// When it entered this state.
    pub since: Timestamp,
    /// What it says about itself (`polling as @pincer_bot`, `3 jobs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Why it last failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Failures since the daemon started.
    #[serde(default)]
    pub failures: u32,
    /// When a retrying service is started again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_retry: Option<Timestamp>,
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServeState {
    pub pid: u32,
    pub started: Timestamp,
    pub updated: Timestamp,
    /// 1 at start, +1 for every reload that was applied.
    pub generation: u64,
    /// Set once the daemon has stopped (cleanly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Timestamp>,
    pub services: Vec<ServiceStatus>,
}

/// Why the state file could not be taken or read.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error(
        "another `pincer serve` is running on this PINCER_HOME (it holds {}); stop it first",
        lock.display()
    )]
    Running { lock: PathBuf },
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not a status file pincer wrote: {reason}", path.display())]
    Corrupt { path: PathBuf, reason: String },
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> StateError {
    let path = path.to_path_buf();
    move |source| StateError::Io { what, path, source }
}

struct Inner {
    path: PathBuf,
    state: ServeState,
    /// The last write error, kept so status can say the file is stale.
    write_error: Option<String>,
}

/// The daemon's side: holds the lock and writes the file.
#[derive(Clone)]
pub struct StateFile {
    inner: Arc<Mutex<Inner>>,
    _lock: Arc<File>,
}

impl std::fmt::Debug for StateFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateFile").finish_non_exhaustive()
    }
}

impl StateFile {
    /// Takes `dir/lock` (refused while another daemon holds it) and starts
    /// a fresh status.
    pub fn take(dir: &Path) -> Result<StateFile, StateError> {
        create_private_dir(dir).map_err(io("cannot create", dir))?;
        let lock_path = dir.join("lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io("cannot open", &lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(StateError::Running { lock: lock_path }),
            Err(TryLockError::Error(e)) => return Err(io("cannot lock", &lock_path)(e)),
        }
        let now = Timestamp::now();
        let file = StateFile {
            inner: Arc::new(Mutex::new(Inner {
                path: dir.join("status.json"),
                state: ServeState {
                    pid: std::process::id(),
                    started: now,
                    updated: now,
                    generation: 0,
                    stopped: None,
                    services: Vec::new(),
                },
                write_error: None,
            })),
            _lock: Arc::new(lock),
        };
        file.write();
        Ok(file)
    }

    fn update(&self, f: impl FnOnce(&mut ServeState)) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut inner.state);
        inner.state.updated = Timestamp::now();
        let text = serde_json::to_vec_pretty(&inner.state).unwrap_or_default();
        // A status that cannot be written must not stop the daemon; the
        // log says so once per change.
        inner.write_error = write_atomic(&inner.path, &text)
            .err()
            .map(|e| e.to_string());
        if let Some(e) = &inner.write_error {
            tracing::warn!(path = %inner.path.display(), error = %e, "cannot write the serve status");
        }
    }

    fn write(&self) {
        self.update(|_| {});
    }

    /// A new generation of services: the old lines go.
    pub fn new_generation(&self, names: &[String]) {
        let now = Timestamp::now();
        self.update(|s| {
            s.generation += 1;
            s.services = names
                .iter()
                .map(|n| ServiceStatus {
                    name: n.clone(),
                    state: ServiceState::Starting,
                    since: now,
                    detail: None,
                    last_error: None,
                    failures: 0,
                    next_retry: None,
                })
                .collect();
        });
    }

    /// The handle service `name` reports through.
    pub fn handle(&self, name: &str) -> StatusHandle {
        StatusHandle {
            file: Some(self.clone()),
            name: name.to_string(),
        }
    }

    /// Marks the daemon stopped.
    pub fn stopped(&self) {
        self.update(|s| {
            s.stopped = Some(Timestamp::now());
            for svc in &mut s.services {
                svc.state = ServiceState::Stopped;
            }
        });
    }

    pub fn snapshot(&self) -> ServeState {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .state
            .clone()
    }
}

/// One service's way to report; cheap to clone. A handle with no file
/// (tests, `pincer cron run`) reports nowhere.
#[derive(Debug, Clone)]
pub struct StatusHandle {
    file: Option<StateFile>,
    name: String,
}

impl StatusHandle {
    /// Reports nowhere.
    pub fn detached(name: &str) -> StatusHandle {
        StatusHandle {
            file: None,
            name: name.to_string(),
        }
    }

    fn with(&self, f: impl FnOnce(&mut ServiceStatus)) {
        if let Some(file) = &self.file {
            file.update(|s| {
                if let Some(svc) = s.services.iter_mut().find(|x| x.name == self.name) {
                    f(svc);
                }
            });
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The state the file holds for this service now.
    pub fn state_now(&self) -> Option<ServiceState> {
        let file = self.file.as_ref()?;
        file.snapshot()
            .services
            .iter()
            .find(|s| s.name == self.name)
            .map(|s| s.state)
    }

    pub(crate) fn set_state(&self, state: ServiceState) {
        self.with(|s| {
            if s.state != state {
                s.state = state;
                s.since = Timestamp::now();
            }
            if state != ServiceState::Retrying {
                s.next_retry = None;
            }
        });
    }

    pub(crate) fn failed(&self, error: &str, next_retry: Timestamp) {
        self.with(|s| {
            s.state = ServiceState::Retrying;
            s.since = Timestamp::now();
            s.last_error = Some(error.to_string());
            s.failures += 1;
            s.next_retry = Some(next_retry);
        });
    }

    /// The service is up; `detail` says how (`polling as @pincer_bot`).
    pub fn running(&self, detail: impl Into<String>) {
        let detail = detail.into();
        self.with(|s| {
            if s.state != ServiceState::Running {
                s.state = ServiceState::Running;
                s.since = Timestamp::now();
            }
            s.next_retry = None;
            s.detail = Some(detail);
        });
    }

    /// Replaces the detail line, state unchanged.
    pub fn detail(&self, detail: impl Into<String>) {
        let detail = detail.into();
        self.with(|s| s.detail = Some(detail));
    }
}

/// What a reader finds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Observed {
    /// A daemon holds the lock now.
    pub running: bool,
    /// The last status it wrote, if any.
    pub state: Option<ServeState>,
}

/// Reads the status in `dir` (`PINCER_HOME/serve`) without changing it.
pub fn observe(dir: &Path) -> Result<Observed, StateError> {
    let lock_path = dir.join("lock");
    let running = match File::open(&lock_path) {
        Ok(f) => match f.try_lock_shared() {
            Ok(()) => false,
            Err(TryLockError::WouldBlock) => true,
            Err(TryLockError::Error(e)) => return Err(io("cannot lock", &lock_path)(e)),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(io("cannot open", &lock_path)(e)),
    };
    let path = dir.join("status.json");
    let state = match std::fs::read(&path) {
        Ok(bytes) => Some(
            serde_json::from_slice(&bytes).map_err(|e| StateError::Corrupt {
                path: path.clone(),
                reason: e.to_string(),
            })?,
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io("cannot read", &path)(e)),
    };
    Ok(Observed { running, state })
}

/// The part of `pincer status` this crate owns: whether a daemon runs on
/// this home and how each of its services is, and the cron jobs. A
/// service that is failing is an error (a person must act); a daemon that
/// is not running is not (many homes never run one).
pub fn status_part(
    home: &pincer_core::home::Home,
) -> (pincer_runtime::status::FrontEnd, Vec<String>, Vec<String>) {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let observed = observe(&home.serve_dir());
    let jobs =
        crate::cron::CronStore::open(&home.cron_dir()).and_then(|s| Ok((s.jobs()?, s.state()?)));
    let (summary, detail) = match &observed {
        Err(e) => {
            errors.push(format!("serve: {e}"));
            (
                format!("ERROR {e}"),
                serde_json::json!({"error": e.to_string()}),
            )
        }
        Ok(o) => {
            let mut line = match (&o.state, o.running) {
                (Some(s), true) => {
                    let svcs: Vec<String> = s
                        .services
                        .iter()
                        .map(|x| match (&x.state, &x.last_error) {
                            (ServiceState::Retrying, Some(e)) => {
                                errors.push(format!(
                                    "serve: {} is failing ({e}); retrying{}",
                                    x.name,
                                    x.next_retry.map(|t| format!(" at {t}")).unwrap_or_default()
                                ));
                                format!("{} RETRYING", x.name)
                            }
                            _ => match &x.detail {
                                Some(d) => format!("{} {} ({d})", x.name, x.state.as_str()),
                                None => format!("{} {}", x.name, x.state.as_str()),
                            },
                        })
                        .collect();
                    format!(
                        "running (pid {}, since {}): {}",
                        s.pid,
                        s.started,
                        svcs.join(", ")
                    )
                }
                (Some(s), false) => match s.stopped {
                    Some(t) => format!("not running (stopped at {t})"),
                    None => format!("not running (pid {} ended without stopping cleanly)", s.pid),
                },
                (None, _) => "not running".to_string(),
            };
            match &jobs {
                Ok((list, state)) => {
                    line.push_str(&format!("; cron: {} job(s)", list.len()));
                    for j in list {
                        if let Some(last) = state.jobs.get(&j.name).and_then(|s| s.last.as_ref()) {
                            if let Some(e) = &last.error {
                                warnings.push(format!(
                                    "cron job `{}`: its last run failed: {e}",
                                    j.name
                                ));
                            } else if last.finished.is_none() {
                                warnings.push(format!(
                                    "cron job `{}`: its last run (started {}) was cut short when pincer stopped",
                                    j.name, last.started
                                ));
                            }
                        }
                    }
                }
                Err(e) => errors.push(format!("cron: {e}")),
            }
            (
                line,
                serde_json::json!({
                    "running": o.running,
                    "state": o.state,
                    "cron_jobs": jobs.as_ref().map(|(l, _)| l.len()).ok(),
                }),
            )
        }
    };
    (
        pincer_runtime::status::FrontEnd {
            name: "serve",
            summary,
            detail,
        },
        errors,
        warnings,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_daemon_per_home_and_a_reader_sees_it_alive_then_stopped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let serve = dir.path().join("serve");
        assert_eq!(
            observe(&serve).expect("nothing yet"),
            Observed {
                running: false,
                state: None
            }
        );
        let file = StateFile::take(&serve).expect("first");
        let again = StateFile::take(&serve).expect_err("second refused");
        assert!(
            again.to_string().contains("another `pincer serve`"),
            "{again}"
        );
        file.new_generation(&["telegram".into(), "cron".into()]);
        let h = file.handle("telegram");
        h.running("polling");
        h.failed("bad token", Timestamp::now());
        let seen = observe(&serve).expect("reads");
        assert!(seen.running);
        let state = seen.state.expect("state");
        assert_eq!(state.generation, 1);
        assert_eq!(state.services[0].state, ServiceState::Retrying);
        assert_eq!(state.services[0].last_error.as_deref(), Some("bad token"));
        assert_eq!(state.services[0].failures, 1);
        file.stopped();
        drop(h);
        drop(file);
        let seen = observe(&serve).expect("reads");
        assert!(!seen.running, "the lock went with the daemon");
        assert!(seen.state.expect("kept").stopped.is_some());
    }
}
