//! Cron: jobs that run an agent prompt on a schedule (`pincer cron add
//! --name NAME --schedule "CRON" --prompt "…"`), each run a turn of its own
//! session (`cron-NAME`) through the one gate and audit trail, like any
//! turn.
//!
//! # Files and durability
//!
//! Under `PINCER_HOME/cron/` (protected: no tool can add a job):
//!
//! - `jobs.json` — the jobs, written only by `pincer cron add|remove`;
//! - `state.json` — for each job the next time it is due and how its last
//!   run went, written by whoever runs it (`pincer serve`, `pincer cron
//!   run`).
//!
//! Both are rewritten whole, atomically (temp, fsync, rename, dir fsync),
//! under an advisory lock (`cron/.lock`) taken for each read-modify-write,
//! so a crash leaves the old file or the new one, never half of either, and
//! `pincer cron add` beside a running daemon cannot lose a job.
//!
//! A run is recorded in `state.json` (its next due time moved on, the run
//! marked started) *before* the turn starts: a crash mid-run does not run
//! the job again on restart, and `cron list` shows that run as
//! interrupted. So a scheduled run happens at most once.
//!
//! # Missed runs
//!
//! When pincer was down (or asleep) past a job's due time by more than
//! [`GRACE`], the runs it missed are handled as the job says (`--missed`):
//! `skip` records a `cron.skip` entry with how many and when, and waits for
//! the next one; `run-once` runs the job once now (`cron.run` with trigger
//! `catch_up` and the count). Either way it is said, in the trail and in
//! `cron list`.

mod runner;
mod schedule;
mod store;

pub use runner::{CronService, RunOutcome, Trigger, run_job};

/// What the heartbeat shares with cron.
pub(crate) mod runner_api {
    pub(crate) use super::runner::{RunSpec, run_prompt};
}
pub use schedule::{GRACE, Plan, Schedule, plan};
pub use store::{CronError, CronState, CronStore, Job, JobState, LastRun, Missed, check_name};
