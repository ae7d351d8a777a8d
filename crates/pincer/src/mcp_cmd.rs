//! `pincer mcp list|tools|call`: the configured MCP servers for a person
//! at the terminal. `list` and `tools` start the servers (as the agent
//! would, in the sandbox) to show what they offer; `call` runs one tool as
//! the person: checked against the tool's input schema, recorded by the
//! runtime as `mcp.call` (before it is sent) and `mcp.result` under
//! `human:cli`, not gated. Bad arguments exit 2, are recorded as
//! `invalid`, and reach no server. Everything a server says is shown
//! terminal-safe.

use crate::Ctx;
use anyhow::{Context, Result};
use pincer_core::actor::HUMAN_CLI;
use pincer_core::text::{one_line, terminal_safe};
use pincer_runtime::mcp;
use serde_json::json;
use std::process::ExitCode;

#[derive(clap::Subcommand, Debug)]
pub enum McpCmd {
    /// The configured servers, each started: what it says it is and how
    /// many of its tools the agent is offered.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Every tool server NAME lists: offered to the agent or not (and
    /// why), its risk and description.
    Tools {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Call TOOL of server NAME with a JSON object of arguments, as you:
    /// recorded in the audit trail (human:cli), not gated.
    Call {
        name: String,
        tool: String,
        /// The arguments, e.g. '{"message": "hi"}'.
        arguments: String,
        #[arg(long)]
        json: bool,
    },
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

pub fn run(ctx: &Ctx, cmd: McpCmd) -> Result<ExitCode> {
    let rt = runtime()?;
    rt.block_on(async {
        match cmd {
            McpCmd::List { json } => list(ctx, json).await,
            McpCmd::Tools { name, json } => tools(ctx, &name, json).await,
            McpCmd::Call {
                name,
                tool,
                arguments,
                json,
            } => call(ctx, &name, &tool, &arguments, json).await,
        }
    })
}

async fn list(ctx: &Ctx, json: bool) -> Result<ExitCode> {
    let servers = mcp::list(&ctx.home, &ctx.settings, &ctx.env).await;
    let failed = servers.iter().any(|s| s.state == "error");
    if json {
        println!("{}", json!({ "servers": servers }));
    } else if servers.is_empty() {
        println!(
            "no MCP servers configured ([mcp.servers.NAME] in {})",
            ctx.settings.path.display()
        );
    } else {
        for s in &servers {
            let what = match s.state {
                "ok" => format!(
                    "ok: {} ({}), {} of {} tools offered, started in {} ms",
                    s.server.as_deref().unwrap_or(""),
                    s.protocol.as_deref().unwrap_or(""),
                    s.offered.len(),
                    s.offered.len() + s.not_offered.len(),
                    s.start_ms.unwrap_or(0)
                ),
                _ => format!("ERROR {}", s.error.as_deref().unwrap_or("")),
            };
            println!("{:<16} {:<5} {}", s.name, s.transport, terminal_safe(&what));
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

async fn tools(ctx: &Ctx, name: &str, json: bool) -> Result<ExitCode> {
    let server = mcp::start_one(&ctx.home, &ctx.settings, &ctx.env, name).await?;
    if json {
        println!(
            "{}",
            json!({ "server": server.facts(), "tools": server.listed() })
        );
    } else {
        let f = server.facts();
        println!(
            "{} ({}, {} {}, started in {} ms)",
            f.name,
            f.transport,
            terminal_safe(&f.server),
            terminal_safe(&f.protocol),
            f.start_ms
        );
        for n in &f.notes {
            println!("  note: {}", terminal_safe(n));
        }
        if let Some(t) = &f.truncated {
            println!("  note: {}", terminal_safe(t));
        }
        for t in server.listed() {
            let shown = t.exposed.clone().unwrap_or_else(|| one_line(&t.name, 64));
            let state = match &t.not_offered {
                None => "offered".to_string(),
                Some(why) => format!("not offered: {why}"),
            };
            println!(
                "  {:<40} {:<6} {}\n      {}",
                shown,
                t.risk.as_str(),
                terminal_safe(&state),
                terminal_safe(&t.description)
            );
        }
    }
    server.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

async fn call(ctx: &Ctx, name: &str, tool: &str, raw: &str, json: bool) -> Result<ExitCode> {
    let audit = pincer_runtime::open_audit(&ctx.home)?;
    let args: serde_json::Value = match serde_json::from_str(raw) {
        Ok(v) => v,
        Err(e) => {
            let why = format!("the arguments are not JSON: {e}");
            mcp::record_invalid(
                &audit,
                &ctx.settings,
                HUMAN_CLI,
                name,
                tool,
                serde_json::Value::String(raw.to_string()),
                &why,
            )?;
            eprintln!("error: {why}; nothing was sent");
            return Ok(ExitCode::from(2));
        }
    };
    let server = mcp::start_one(&ctx.home, &ctx.settings, &ctx.env, name).await?;
    let done = mcp::person_call(&audit, &server, HUMAN_CLI, tool, &args).await;
    server.shutdown().await;
    let done = done?;
    if json {
        println!(
            "{}",
            json!({
                "ok": done.outcome.is_ok(),
                "result": done.outcome.as_ref().ok(),
                "error": done.outcome.as_ref().err(),
                "invalid": done.invalid,
                "seq": done.seq,
            })
        );
    }
    match done.outcome {
        Ok(text) => {
            if !json {
                println!("{}", terminal_safe(&text));
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            if !json {
                eprintln!(
                    "error: {}{}",
                    terminal_safe(&e),
                    if done.invalid {
                        "; nothing was sent"
                    } else {
                        ""
                    }
                );
            }
            Ok(ExitCode::from(if done.invalid { 2 } else { 1 }))
        }
    }
}
