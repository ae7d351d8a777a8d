//! Running jobs: the `cron` service of `pincer serve` and `pincer cron
//! run`. Every run is a turn of the job's own session through the
//! runtime's gate, bracketed by `cron.run` and `cron.done` entries.

use super::schedule::{Plan, Schedule, plan};
use super::store::{CronError, CronStore, Job, LastRun};
use crate::Hub;
use crate::service::{BoxFuture, Service, ServiceCtx, ServiceError};
use crate::turn::{Turns, run_once};
use pincer_core::actor;
use pincer_core::agent::AgentEvent;
use pincer_core::approvals::{Approver, DenyAll};
use pincer_core::audit::schema::{CallStatus, CronDone, CronRun, CronSkip};
use pincer_core::message::{Message, Timestamp};
use pincer_runtime::Runtime;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;

/// Why a run happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    Schedule,
    CatchUp,
    Manual,
    Heartbeat,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Schedule => "schedule",
            Trigger::CatchUp => "catch_up",
            Trigger::Manual => "manual",
            Trigger::Heartbeat => "heartbeat",
        }
    }
}

/// How a run went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    pub reply: Option<String>,
    pub error: Option<String>,
    /// Where the reply went.
    pub delivered_to: Option<String>,
    pub delivery_error: Option<String>,
}

/// One prompt to run as a scheduled turn.
#[derive(Debug, Clone)]
pub(crate) struct RunSpec<'a> {
    pub job: &'a str,
    pub session: String,
    pub prompt: &'a str,
    pub notify: Option<&'a str>,
    pub trigger: Trigger,
    pub scheduled: Option<Timestamp>,
    pub missed: u64,
}

/// The approver of a scheduled turn: the chat it reports to, when that
/// channel is up; else the approval queue (`pincer approvals`).
async fn approver(runtime: &Runtime, hub: Option<&Hub>, notify: Option<&str>) -> Arc<dyn Approver> {
    if let (Some(hub), Some(target)) = (hub, notify)
        && let Some(a) = hub.approver_waiting(target).await
    {
        return a;
    }
    match runtime.queue_approver(|_| {}) {
        Ok(q) => Arc::new(q),
        Err(e) => Arc::new(DenyAll(format!("the approval queue cannot be opened: {e}"))),
    }
}

/// Runs `spec` as a turn. `quiet` is the token a reply that has nothing to
/// say consists of (the heartbeat's `HEARTBEAT_OK`): such a reply is not
/// delivered. The outer error is the trail's (nothing ran).
pub(crate) async fn run_prompt(
    runtime: &Runtime,
    hub: Option<&Hub>,
    turns: &Turns,
    spec: RunSpec<'_>,
    quiet: Option<&str>,
) -> Result<RunOutcome, pincer_core::audit::AuditError> {
    runtime.audit().record(
        actor::SYSTEM,
        &CronRun {
            job: spec.job.to_string(),
            trigger: spec.trigger.as_str().to_string(),
            scheduled: spec.scheduled.map(|t| t.to_string()),
            missed: spec.missed,
            session: spec.session.clone(),
        },
    )?;
    let approver = approver(runtime, hub, spec.notify).await;
    let result = run_once(
        runtime,
        &spec.session,
        approver,
        Message::user(spec.prompt),
        turns,
        &|_: AgentEvent| {},
    )
    .await;
    let mut out = RunOutcome {
        reply: None,
        error: None,
        delivered_to: None,
        delivery_error: None,
    };
    match result {
        Ok(turn) => {
            let said = match quiet {
                Some(token) => {
                    let rest = turn.reply.replace(token, "");
                    (!rest.trim().is_empty()).then(|| rest.trim().to_string())
                }
                None => Some(turn.reply.clone()),
            };
            if let (Some(text), Some(target)) = (&said, spec.notify) {
                let text = format!("[{}] {text}", spec.job);
                match hub {
                    Some(hub) => match hub.deliver(target, &text).await {
                        Ok(()) => out.delivered_to = Some(target.to_string()),
                        Err(e) => out.delivery_error = Some(e),
                    },
                    None => {
                        out.delivery_error = Some(format!(
                            "not sent to {target}: a run from the command line prints its reply instead"
                        ));
                    }
                }
            }
            out.reply = Some(turn.reply);
        }
        Err(e) => out.error = Some(e.to_string()),
    }
    runtime.audit().record(
        actor::SYSTEM,
        &CronDone {
            job: spec.job.to_string(),
            status: if out.error.is_some() {
                CallStatus::Error
            } else {
                CallStatus::Ok
            },
            error: out.error.clone(),
            reply_bytes: out.reply.as_ref().map_or(0, String::len),
            delivered_to: out.delivered_to.clone(),
            delivery_error: out.delivery_error.clone(),
        },
    )?;
    Ok(out)
}

/// Runs `job` now: its state marks the run started first (and moves its
/// next due time to `next_due` when the schedule triggered it), then the
/// turn runs, then the state says how it ended.
#[allow(clippy::too_many_arguments)]
pub async fn run_job(
    runtime: &Runtime,
    hub: Option<&Hub>,
    store: &CronStore,
    turns: &Turns,
    job: &Job,
    trigger: Trigger,
    scheduled: Option<Timestamp>,
    missed: u64,
    next_due: Option<Timestamp>,
) -> Result<RunOutcome, CronError> {
    let started = Timestamp::now();
    store.update(&job.name, |s| {
        if next_due.is_some() {
            s.next_due = next_due;
        }
        s.last = Some(LastRun {
            trigger: trigger.as_str().to_string(),
            scheduled,
            started,
            finished: None,
            status: None,
            error: None,
            missed,
        });
    })?;
    let outcome = run_prompt(
        runtime,
        hub,
        turns,
        RunSpec {
            job: &job.name,
            session: job.session_key(),
            prompt: &job.prompt,
            notify: job.notify.as_deref(),
            trigger,
            scheduled,
            missed,
        },
        None,
    )
    .await;
    let (status, error) = match &outcome {
        Ok(o) if o.error.is_none() => ("ok", None),
        Ok(o) => ("error", o.error.clone()),
        Err(e) => ("error", Some(e.to_string())),
    };
    store.update(&job.name, |s| {
        if let Some(last) = &mut s.last
            && last.started == started
        {
            last.finished = Some(Timestamp::now());
            last.status = Some(status.to_string());
            last.error = error.clone();
        }
    })?;
    outcome.map_err(|e| CronError::Io {
        what: "the audit trail refused an entry for",
        path: job.session_key().into(),
        source: std::io::Error::other(e.to_string()),
    })
}

/// The `cron` service: runs every job when it is due.
#[derive(Debug, Clone, Default)]
pub struct CronService;

/// How often the job file is looked at for changes, at the least.
const RESCAN: Duration = Duration::from_secs(2);

impl Service for CronService {
    fn name(&self) -> &str {
        "cron"
    }

    fn run(&self, ctx: ServiceCtx) -> BoxFuture<'_, Result<(), ServiceError>> {
        Box::pin(run_service(ctx))
    }
}

fn err(e: impl std::fmt::Display) -> ServiceError {
    ServiceError::new(e.to_string())
}

async fn run_service(ctx: ServiceCtx) -> Result<(), ServiceError> {
    let rt = ctx.runtime.clone();
    let store = CronStore::open(&rt.home().cron_dir()).map_err(err)?;
    let mut shutdown = ctx.shutdown.clone();
    let mut stamp = None;
    let mut jobs: Vec<(Job, Schedule)> = Vec::new();
    let mut running: BTreeSet<String> = BTreeSet::new();
    let mut tasks: JoinSet<String> = JoinSet::new();
    loop {
        if shutdown.is_set() {
            break;
        }
        let now_stamp = store.jobs_stamp();
        if now_stamp != stamp || stamp.is_none() {
            stamp = now_stamp;
            let mut bad = Vec::new();
            jobs = store
                .jobs()
                .map_err(err)?
                .into_iter()
                .filter_map(|j| match Schedule::parse(&j.schedule) {
                    Ok(s) => Some((j, s)),
                    Err(e) => {
                        bad.push(format!("{}: {e}", j.name));
                        None
                    }
                })
                .collect();
            let mut detail = format!("{} job(s)", jobs.len());
            if !bad.is_empty() {
                detail.push_str(&format!("; not run: {}", bad.join("; ")));
            }
            ctx.status.running(detail);
        }
        let now = Timestamp::now();
        let state = store.state().map_err(err)?;
        let mut wake = now.as_millis() + RESCAN.as_millis() as u64;
        for (job, schedule) in &jobs {
            if running.contains(&job.name) {
                continue;
            }
            match plan(job, schedule, state.jobs.get(&job.name), now) {
                Plan::Wait(t) => wake = wake.min(t.as_millis()),
                Plan::Never => {}
                Plan::Skip {
                    missed,
                    first,
                    last,
                    next_due,
                } => {
                    rt.audit()
                        .record(
                            actor::SYSTEM,
                            &CronSkip {
                                job: job.name.clone(),
                                missed,
                                first: first.to_string(),
                                last: last.to_string(),
                            },
                        )
                        .map_err(err)?;
                    tracing::info!(job = %job.name, missed, "cron: missed runs skipped");
                    store
                        .update(&job.name, |s| {
                            s.next_due = Some(next_due);
                            s.last = Some(LastRun {
                                trigger: "skipped".into(),
                                scheduled: Some(last),
                                started: now,
                                finished: Some(now),
                                status: Some("skipped".into()),
                                error: None,
                                missed,
                            });
                        })
                        .map_err(err)?;
                    wake = wake.min(next_due.as_millis());
                }
                Plan::Run {
                    scheduled,
                    missed,
                    next_due,
                } => {
                    running.insert(job.name.clone());
                    let (rt, hub, store, turns, job) = (
                        rt.clone(),
                        ctx.hub.clone(),
                        store.clone(),
                        ctx.turns.clone(),
                        job.clone(),
                    );
                    let trigger = if missed > 0 {
                        Trigger::CatchUp
                    } else {
                        Trigger::Schedule
                    };
                    tasks.spawn(async move {
                        if let Err(e) = run_job(
                            &rt,
                            Some(&hub),
                            &store,
                            &turns,
                            &job,
                            trigger,
                            Some(scheduled),
                            missed,
                            Some(next_due),
                        )
                        .await
                        {
                            tracing::warn!(job = %job.name, error = %e, "cron: run failed");
                        }
                        job.name
                    });
                }
            }
        }
        let sleep = Duration::from_millis(wake.saturating_sub(Timestamp::now().as_millis()));
        tokio::select! {
            _ = tokio::time::sleep(sleep) => {}
            Some(done) = tasks.join_next() => {
                if let Ok(name) = done {
                    running.remove(&name);
                }
            }
            _ = shutdown.wait() => break,
        }
    }
    // Drain: the runs in flight finish (or the supervisor cuts them).
    while tasks.join_next().await.is_some() {}
    Ok(())
}
