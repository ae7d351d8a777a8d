//! `pincer approvals list|approve|deny` (PO4): answer an agent waiting in
//! another terminal (or behind the gateway). The answer is bound to the
//! call's hash, written once, and recorded in the audit trail with actor
//! `human:cli`.

use crate::Ctx;
use anyhow::{Context, Result};
use pincer_core::actor::HUMAN_CLI;
use pincer_core::approvals::{ApprovalQueue, Pending, Resolution};
use pincer_core::text::terminal_safe;
use std::process::ExitCode;

#[derive(clap::Subcommand, Debug)]
pub enum ApprovalsCmd {
    /// The calls waiting for an answer, oldest first.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Approve the call waiting under ID (this exact call only).
    Approve {
        /// The id `approvals list` shows.
        id: String,
        /// Print the answered approval as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Deny the call waiting under ID.
    Deny {
        /// The id `approvals list` shows.
        id: String,
        /// Why; the agent's model sees it.
        #[arg(
            long,
            value_name = "TEXT",
            default_value = "denied at the command line"
        )]
        reason: String,
        /// Print the answered approval as one JSON object.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(ctx: &Ctx, cmd: ApprovalsCmd) -> Result<ExitCode> {
    let dir = ctx.home.approvals_dir();
    let queue = ApprovalQueue::open(&dir)
        .with_context(|| format!("cannot open the approval queue in {}", dir.display()))?;
    match cmd {
        ApprovalsCmd::List { json } => {
            // Leftovers of agents that died while waiting go first.
            queue.prune()?;
            let listing = queue.list()?;
            if json {
                let problems: Vec<String> =
                    listing.problems.iter().map(|p| p.to_string()).collect();
                println!(
                    "{}",
                    serde_json::json!({ "pending": listing.pending, "problems": problems })
                );
            } else {
                if listing.pending.is_empty() {
                    println!("no approvals waiting");
                }
                for p in &listing.pending {
                    print!("{}", render(p));
                }
                for problem in &listing.problems {
                    eprintln!("warning: {}", terminal_safe(&problem.to_string()));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        ApprovalsCmd::Approve { id, json } => answer(
            ctx,
            &id,
            json,
            Resolution::Approved {
                by: HUMAN_CLI.into(),
            },
        ),
        ApprovalsCmd::Deny { id, reason, json } => {
            if reason.trim().is_empty() {
                anyhow::bail!("--reason is empty; say why, the agent's model sees it");
            }
            answer(
                ctx,
                &id,
                json,
                Resolution::Denied {
                    by: HUMAN_CLI.into(),
                    reason,
                },
            )
        }
    }
}

fn answer(ctx: &Ctx, id: &str, json: bool, resolution: Resolution) -> Result<ExitCode> {
    let word = match &resolution {
        Resolution::Approved { .. } => "approved",
        Resolution::Denied { .. } => "denied",
    };
    let p = pincer_runtime::person::answer_approval(&ctx.home, HUMAN_CLI, id, resolution)?;
    if json {
        println!("{}", serde_json::json!({ "answer": word, "approval": p }));
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{word} {}: `{}` in session `{}`",
        p.id,
        terminal_safe(&p.tool),
        terminal_safe(&p.session)
    );
    Ok(ExitCode::SUCCESS)
}

fn render(p: &Pending) -> String {
    format!(
        "{}  {} risk  `{}`  session `{}`  expires {}\n    why:  {}\n    args: {}\n",
        p.id,
        p.risk.as_str(),
        terminal_safe(&p.tool),
        terminal_safe(&p.session),
        p.expires,
        terminal_safe(&p.why),
        terminal_safe(&p.arguments.to_string())
    )
}
