//! `pincer policy explain`: what the gate would decide about a call, and
//! why, without running anything (no tool, no hook).

use crate::Ctx;
use anyhow::{Result, bail};
use pincer_core::gate::{self, Explanation};
use pincer_core::text::terminal_safe;
use std::process::ExitCode;

#[derive(clap::Subcommand, Debug)]
pub enum PolicyCmd {
    /// The risk class the gate assigns to a call, why (for a shell command:
    /// which part decided it), and the decision under each autonomy level.
    Explain {
        /// The tool, e.g. `shell` or `file_write`.
        tool: String,
        /// The call's arguments as a JSON object, e.g. '{"command":"ls; rm x"}'.
        arguments: String,
        #[arg(long)]
        json: bool,
    },
}

pub fn run(ctx: &Ctx, cmd: PolicyCmd) -> Result<ExitCode> {
    let PolicyCmd::Explain {
        tool,
        arguments,
        json,
    } = cmd;
    let args: serde_json::Value = match serde_json::from_str(&arguments) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        Ok(_) => bail!("<arguments> must be a JSON object, like '{{\"command\": \"ls\"}}'"),
        Err(e) => bail!("<arguments> is not valid JSON: {e}"),
    };
    // Only assessed, never run: the same tools, with the same protected
    // paths, the agent gets.
    let tools = pincer_runtime::tools::assessment_tools(&ctx.home, &ctx.settings, &ctx.env)?;
    let Some(t) = tools.iter().find(|t| t.name() == tool) else {
        let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
        bail!(
            "<tool> `{}` is not a tool; the tools are: {}",
            terminal_safe(&tool),
            names.join(", ")
        );
    };
    let policy = &ctx.settings.core.policy;
    let e = gate::explain(&policy.deny_tools, t.as_ref(), &args);
    if json {
        println!("{}", serde_json::to_string(&e)?);
    } else {
        print!("{}", render(&e, policy.autonomy.as_str()));
    }
    Ok(ExitCode::SUCCESS)
}

fn render(e: &Explanation, configured: &str) -> String {
    let mut out = format!(
        "tool:  {}\nrisk:  {}\nwhy:   {}\n",
        e.tool,
        e.risk.as_str(),
        terminal_safe(&e.why)
    );
    if let Some(d) = &e.denied {
        out.push_str(&format!(
            "deny:  {} (blocked at every level)\n",
            terminal_safe(d)
        ));
    }
    if let Some(parts) = e
        .detail
        .as_ref()
        .and_then(|d| d.get("parts"))
        .and_then(|p| p.as_array())
    {
        out.push_str("parts:\n");
        for p in parts {
            out.push_str(&format!(
                "  {:<6} {}  ({})\n",
                p["risk"].as_str().unwrap_or("?"),
                terminal_safe(p["text"].as_str().unwrap_or("")),
                terminal_safe(p["why"].as_str().unwrap_or(""))
            ));
        }
    }
    out.push_str("decision by autonomy level:\n");
    for d in &e.decisions {
        let mark = if d.autonomy.as_str() == configured {
            "  <- configured"
        } else {
            ""
        };
        out.push_str(&format!(
            "  {:<10} {:<5} {}{mark}\n",
            d.autonomy.as_str(),
            d.decision,
            terminal_safe(&d.reason)
        ));
    }
    out
}
