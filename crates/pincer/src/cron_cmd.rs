//! `pincer cron`: add, list, remove and run the jobs `pincer serve` runs.
//! A change is recorded as `cron.change` (the prompt by its hash); a run
//! from here is a turn of the job's session like a scheduled one, with
//! trigger `manual`, its approvals going to the queue (`pincer approvals`).

use crate::Ctx;
use anyhow::{Context, Result};
use clap::Subcommand;
use pincer_core::actor;
use pincer_core::audit::schema::CronChange;
use pincer_core::canonical::sha256_hex;
use pincer_core::message::Timestamp;
use pincer_core::text::terminal_safe;
use pincer_runtime::{Runtime, RuntimeOptions, open_audit};
use pincer_serve::cron::{CronStore, Job, Missed, Schedule, Trigger, run_job};
use pincer_serve::turn::Turns;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum CronCmd {
    /// Add a job.
    Add {
        /// 1 to 40 of a-z, 0-9, `-`, `_`; its session is `cron-NAME`.
        #[arg(long)]
        name: String,
        /// A cron expression in local time: 5 fields (`0 7 * * *`) or 6
        /// with seconds first.
        #[arg(long)]
        schedule: String,
        /// What the agent is asked at each run.
        #[arg(long)]
        prompt: String,
        /// Runs missed while pincer was down: `skip` (said, then the next
        /// one) or `run-once` (one catch-up run).
        #[arg(long, default_value = "skip", value_parser = ["skip", "run-once"])]
        missed: String,
        /// Where the reply goes, like telegram:123456789 (else it stays in
        /// the session).
        #[arg(long, value_name = "CHANNEL:CHAT_ID")]
        notify: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// The jobs, when each is due and how its last run went.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove a job (its session stays).
    Remove {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Run a job now, here, and print its reply.
    Run {
        name: String,
        #[arg(long)]
        json: bool,
    },
}

pub fn run(ctx: &Ctx, cmd: CronCmd) -> Result<ExitCode> {
    let store = CronStore::open(&ctx.home.cron_dir())?;
    match cmd {
        CronCmd::Add {
            name,
            schedule,
            prompt,
            missed,
            notify,
            json,
        } => {
            let job = store.add(Job {
                name,
                schedule,
                prompt,
                // The value parser admits only the two words.
                missed: Missed::parse(&missed).unwrap_or_default(),
                notify,
                created: Timestamp::now(),
            })?;
            let audit = open_audit(&ctx.home)?;
            audit.record(
                actor::HUMAN_CLI,
                &CronChange {
                    op: "add".into(),
                    job: job.name.clone(),
                    schedule: Some(job.schedule.clone()),
                    missed: Some(job.missed.as_str().into()),
                    prompt_sha256: Some(sha256_hex(job.prompt.as_bytes())),
                    notify: job.notify.clone(),
                },
            )?;
            let next = Schedule::parse(&job.schedule)
                .ok()
                .and_then(|s| s.next_after(Timestamp::now()));
            if json {
                println!(
                    "{}",
                    serde_json::json!({"added": job, "next": next.map(|t| t.to_string())})
                );
            } else {
                println!(
                    "added `{}` ({}); next run {}",
                    job.name,
                    job.schedule,
                    next.map_or_else(|| "never".to_string(), |t| t.to_string())
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        CronCmd::List { json } => list(&store, json),
        CronCmd::Remove { name, json } => {
            let job = store.remove(&name)?;
            open_audit(&ctx.home)?.record(
                actor::HUMAN_CLI,
                &CronChange {
                    op: "remove".into(),
                    job: job.name.clone(),
                    schedule: None,
                    missed: None,
                    prompt_sha256: None,
                    notify: None,
                },
            )?;
            if json {
                println!("{}", serde_json::json!({"removed": job.name}));
            } else {
                println!("removed `{}`", job.name);
            }
            Ok(ExitCode::SUCCESS)
        }
        CronCmd::Run { name, json } => run_now(ctx, &store, &name, json),
    }
}

fn list(store: &CronStore, json: bool) -> Result<ExitCode> {
    let jobs = store.jobs()?;
    let state = store.state()?;
    let now = Timestamp::now();
    let rows: Vec<serde_json::Value> = jobs
        .iter()
        .map(|j| {
            let s = state.jobs.get(&j.name);
            let next = s.and_then(|s| s.next_due).or_else(|| {
                Schedule::parse(&j.schedule)
                    .ok()
                    .and_then(|sc| sc.next_after(now))
            });
            serde_json::json!({
                "name": j.name,
                "schedule": j.schedule,
                "missed": j.missed.as_str(),
                "notify": j.notify,
                "prompt": j.prompt,
                "next": next.map(|t| t.to_string()),
                "last": s.and_then(|s| s.last.clone()),
            })
        })
        .collect();
    if json {
        println!("{}", serde_json::json!({ "jobs": rows }));
        return Ok(ExitCode::SUCCESS);
    }
    if jobs.is_empty() {
        println!("no cron jobs");
    }
    for (j, row) in jobs.iter().zip(&rows) {
        let last = match state.jobs.get(&j.name).and_then(|s| s.last.as_ref()) {
            None => "never ran".to_string(),
            Some(l) if l.finished.is_none() => {
                format!("{} run started {} was interrupted", l.trigger, l.started)
            }
            Some(l) if l.trigger == "skipped" => {
                format!("skipped {} missed run(s) at {}", l.missed, l.started)
            }
            Some(l) => format!(
                "{} run at {}: {}{}",
                l.trigger,
                l.started,
                l.status.as_deref().unwrap_or("?"),
                l.error
                    .as_deref()
                    .map(|e| format!(" ({})", terminal_safe(e)))
                    .unwrap_or_default()
            ),
        };
        println!(
            "{:<20} {:<16} missed={:<8} next {}  last: {last}",
            j.name,
            j.schedule,
            j.missed.as_str(),
            row["next"].as_str().unwrap_or("never"),
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn run_now(ctx: &Ctx, store: &CronStore, name: &str, json: bool) -> Result<ExitCode> {
    let job = store
        .jobs()?
        .into_iter()
        .find(|j| j.name == name)
        .with_context(|| format!("no cron job `{name}` (pincer cron list)"))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let out = rt.block_on(async {
        let runtime = Runtime::start(
            ctx.home.clone(),
            ctx.settings.clone(),
            ctx.env.clone(),
            RuntimeOptions::default(),
        )
        .await?;
        for w in runtime.warnings() {
            eprintln!("warning: {}", terminal_safe(w));
        }
        anyhow::Ok(
            run_job(
                &runtime,
                None,
                store,
                &Turns::default(),
                &job,
                Trigger::Manual,
                None,
                0,
                None,
            )
            .await?,
        )
    });
    rt.shutdown_background();
    let out = out?;
    if json {
        println!(
            "{}",
            serde_json::json!({"job": job.name, "reply": out.reply, "error": out.error, "delivery_error": out.delivery_error})
        );
    } else if let Some(reply) = &out.reply {
        println!("{}", terminal_safe(reply));
    }
    if let Some(e) = &out.error {
        eprintln!("error: the run failed: {}", terminal_safe(e));
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
