//! Cron expressions (croner: five fields, or six with seconds first;
//! `@hourly`, `@daily`…), evaluated in the machine's local time zone, and
//! what a job should do now.

use super::store::{Job, JobState, Missed};
use chrono::{DateTime, Local, TimeZone};
use pincer_core::message::Timestamp;
use std::str::FromStr;
use std::time::Duration;

/// How late a run may start and still count as on time.
pub const GRACE: Duration = Duration::from_secs(60);
/// At most this many missed runs are counted (a per-second job down for a
/// year stops counting here).
const MAX_COUNTED: u64 = 100_000;

/// A parsed schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    cron: croner::Cron,
}

fn local(t: Timestamp) -> Option<DateTime<Local>> {
    let ms = i64::try_from(t.as_millis()).ok()?;
    Local.timestamp_millis_opt(ms).single()
}

fn stamp(t: DateTime<Local>) -> Timestamp {
    Timestamp::from_millis(u64::try_from(t.timestamp_millis()).unwrap_or(0))
}

impl Schedule {
    /// Parses `text`; the reason is in words.
    pub fn parse(text: &str) -> Result<Schedule, String> {
        let trimmed = text.trim();
        let fields = trimmed.split_whitespace().count();
        if !trimmed.starts_with('@') && !(5..=6).contains(&fields) {
            return Err(format!(
                "`{}` has {fields} fields; a schedule has 5 (minute hour day month weekday) or 6 (seconds first), or is @hourly, @daily, @weekly…",
                text.escape_debug()
            ));
        }
        let cron = croner::Cron::from_str(trimmed)
            .map_err(|e| format!("`{}` is not a cron schedule: {e}", text.escape_debug()))?;
        let s = Schedule { cron };
        if s.next_after(Timestamp::now()).is_none() {
            return Err(format!("`{}` never happens", text.escape_debug()));
        }
        Ok(s)
    }

    /// The first occurrence strictly after `t`.
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        let from = local(t)?;
        self.cron.find_next_occurrence(&from, false).ok().map(stamp)
    }

    /// How many occurrences fall in `[from, to]`, and the last of them.
    fn count(&self, from: Timestamp, to: Timestamp) -> (u64, Timestamp) {
        let mut n = 0;
        let mut last = from;
        let mut t = from;
        while t <= to && n < MAX_COUNTED {
            n += 1;
            last = t;
            match self.next_after(t) {
                Some(next) => t = next,
                None => break,
            }
        }
        (n, last)
    }
}

/// What a job should do at `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Nothing until then.
    Wait(Timestamp),
    /// Run now; `next_due` is the time after this run.
    Run {
        scheduled: Timestamp,
        /// Runs missed that this one stands for (0 when on time).
        missed: u64,
        next_due: Timestamp,
    },
    /// Skip the runs missed while pincer was down.
    Skip {
        missed: u64,
        first: Timestamp,
        last: Timestamp,
        next_due: Timestamp,
    },
    /// The schedule has no further occurrence.
    Never,
}

/// The plan for `job` at `now`, from its state (a job never run is first
/// due at its schedule's first time after it was added).
pub fn plan(job: &Job, schedule: &Schedule, state: Option<&JobState>, now: Timestamp) -> Plan {
    let due = state
        .and_then(|s| s.next_due)
        .or_else(|| schedule.next_after(job.created));
    let Some(due) = due else { return Plan::Never };
    if now < due {
        return Plan::Wait(due);
    }
    let Some(next_due) = schedule.next_after(now) else {
        return Plan::Never;
    };
    let late = Duration::from_millis(now.as_millis() - due.as_millis());
    let (missed, last) = schedule.count(due, now);
    // On time: a little late, and no later run has come due meanwhile.
    if late <= GRACE && missed <= 1 {
        return Plan::Run {
            scheduled: due,
            missed: 0,
            next_due,
        };
    }
    match job.missed {
        Missed::RunOnce => Plan::Run {
            scheduled: last,
            missed,
            next_due,
        },
        Missed::Skip => Plan::Skip {
            missed,
            first: due,
            last,
            next_due,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        Timestamp::parse(s).expect("ts")
    }

    fn job(missed: Missed, created: &str) -> Job {
        Job {
            name: "j".into(),
            schedule: "*/10 * * * * *".into(),
            prompt: "p".into(),
            missed,
            notify: None,
            created: at(created),
        }
    }

    #[test]
    fn bad_schedules_say_why() {
        for (s, needle) in [
            ("* * *", "3 fields"),
            ("61 * * * *", "not a cron schedule"),
            ("", "0 fields"),
        ] {
            let e = Schedule::parse(s).expect_err(s);
            assert!(e.contains(needle), "{s}: {e}");
        }
        assert!(Schedule::parse("0 7 * * MON-FRI").is_ok());
        assert!(Schedule::parse("@daily").is_ok());
    }

    #[test]
    fn on_time_late_and_missed() {
        let s = Schedule::parse("*/10 * * * * *").expect("parses");
        let j = job(Missed::Skip, "2026-01-01T00:00:01Z");
        // First due at :10.
        assert_eq!(
            plan(&j, &s, None, at("2026-01-01T00:00:05Z")),
            Plan::Wait(at("2026-01-01T00:00:10Z"))
        );
        // A little late is on time.
        assert_eq!(
            plan(&j, &s, None, at("2026-01-01T00:00:15Z")),
            Plan::Run {
                scheduled: at("2026-01-01T00:00:10Z"),
                missed: 0,
                next_due: at("2026-01-01T00:00:20Z")
            }
        );
        // Late past a second run: both are missed, whatever the grace.
        assert!(matches!(
            plan(&j, &s, None, at("2026-01-01T00:00:25Z")),
            Plan::Skip { missed: 2, .. }
        ));
        // Down for ten minutes: 10:10 … 10:10:10 is 61 runs, skipped.
        let state = JobState {
            next_due: Some(at("2026-01-01T00:00:10Z")),
            last: None,
        };
        assert_eq!(
            plan(&j, &s, Some(&state), at("2026-01-01T00:10:15Z")),
            Plan::Skip {
                missed: 61,
                first: at("2026-01-01T00:00:10Z"),
                last: at("2026-01-01T00:10:10Z"),
                next_due: at("2026-01-01T00:10:20Z")
            }
        );
        let once = job(Missed::RunOnce, "2026-01-01T00:00:01Z");
        assert_eq!(
            plan(&once, &s, Some(&state), at("2026-01-01T00:10:15Z")),
            Plan::Run {
                scheduled: at("2026-01-01T00:10:10Z"),
                missed: 61,
                next_due: at("2026-01-01T00:10:20Z")
            }
        );
    }
}
