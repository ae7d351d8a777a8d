//! `pincer doctor` and `pincer status`: one report built by the runtime
//! (`pincer_runtime::status`), rendered whole or as its first screen. Both
//! exit 1 when the report has an error; warnings are listed apart and do
//! not change the exit code.

use crate::Ctx;
use anyhow::{Context, Result};
use pincer_core::text::terminal_safe;
use pincer_runtime::status::{self, Depth, Part, Report};
use pincer_tools::SandboxMode;
use std::fmt::Write as _;
use std::process::ExitCode;

fn build(ctx: &Ctx, depth: Depth) -> Result<Report> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // Mutated by the front ends built in (none in the kernel).
    #[allow(unused_mut)]
    let mut report = rt.block_on(status::report(&ctx.home, &ctx.settings, &ctx.env, depth));
    #[cfg(feature = "claude-code")]
    crate::hook_cmd::add_status(ctx, &mut report);
    #[cfg(feature = "serve")]
    {
        let (part, errors, warnings) = pincer_serve::status_part(&ctx.home);
        report.add_front_end(part, errors, warnings);
    }
    Ok(report)
}

fn exit(r: &Report) -> ExitCode {
    if r.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

pub fn doctor(ctx: &Ctx, json: bool) -> Result<ExitCode> {
    let report = build(ctx, Depth::Full)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render_doctor(&report));
    }
    Ok(exit(&report))
}

pub fn status(ctx: &Ctx, json: bool) -> Result<ExitCode> {
    let report = build(ctx, Depth::Quick)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report.status())?);
    } else {
        print!("{}", render_status(&report));
    }
    Ok(exit(&report))
}

/// `value`, or `ERROR <why>`.
fn part<T>(p: &Part<T>, show: impl Fn(&T) -> String) -> String {
    match p {
        Part::Ok(v) => show(v),
        Part::Err { error } => format!("ERROR {}", terminal_safe(error)),
    }
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}

/// The lines both views share: what the agent would run with.
fn summary(o: &mut String, r: &Report) {
    let provider = match &r.agent_provider {
        Part::Ok(a) => terminal_safe(&a.how),
        // The whole how-to is under errors.
        Part::Err { error } => format!(
            "ERROR {}",
            terminal_safe(error.lines().next().unwrap_or_default())
        ),
    };
    let _ = writeln!(o, "provider:  {provider}");
    let _ = writeln!(o, "autonomy:  {}", r.policy.autonomy);
    let _ = writeln!(
        o,
        "workspace: {}",
        part(&r.workspace, |w| format!(
            "{} (paths resolved with {})",
            w.path, w.resolution
        ))
    );
    let _ = writeln!(o, "sessions:  {}", part(&r.sessions, |n| n.to_string()));
    let _ = writeln!(
        o,
        "approvals: {}",
        part(&r.approvals_waiting, |n| format!("{n} waiting"))
    );
    let _ = writeln!(
        o,
        "audit:     {}",
        part(&r.audit, |a| match &a.defect {
            None if a.torn_tail_bytes > 0 => format!(
                "ok, {} entries; a torn tail of {} bytes the next append repairs",
                a.entries, a.torn_tail_bytes
            ),
            None => format!("ok, {} entries", a.entries),
            Some(d) => format!("DEFECT {}", terminal_safe(d)),
        })
    );
    let _ = writeln!(
        o,
        "memory:    {}",
        part(&r.memory, |m| format!(
            "{} pages ({} pinned{}); search: {}",
            m.pages,
            m.pinned,
            if m.unreadable > 0 {
                format!(", {} unreadable", m.unreadable)
            } else {
                String::new()
            },
            m.search
        ))
    );
    let _ = writeln!(o, "sandbox:   {}", part(&r.sandbox, sandbox_line));
    let _ = writeln!(o, "mcp:       {}", mcp_line(&r.mcp));
    let _ = writeln!(
        o,
        "hardware:  {}",
        part(&r.hardware, |h| format!(
            "{} (from {}); agent hardware tools: {}",
            h.board,
            h.detected_from.replace('_', " "),
            if h.agent_tools { "on" } else { "off" }
        ))
    );
    let w = &r.web_fetch;
    let _ = writeln!(
        o,
        "web fetch: {}",
        if w.offered {
            format!(
                "on for {}{}",
                terminal_safe(&w.allow_domains.join(", ")),
                if w.allow_addresses.is_empty() {
                    String::new()
                } else {
                    format!("; also reaches {}", w.allow_addresses.join(", "))
                }
            )
        } else if cfg!(feature = "web") {
            "off: [web_fetch] allow_domains is empty, the agent is not offered web_fetch"
                .to_string()
        } else {
            "off: this pincer was built without web_fetch (cargo feature `web`)".to_string()
        }
    );
    for f in &r.front_ends {
        let _ = writeln!(
            o,
            "{:<10} {}",
            format!("{}:", f.name.replace('_', " ")),
            terminal_safe(&f.summary)
        );
    }
}

/// The MCP servers on one line: name (transport), and the state when
/// they were started.
fn mcp_line(servers: &[pincer_runtime::mcp::ServerStatus]) -> String {
    if servers.is_empty() {
        return "no servers configured".to_string();
    }
    let each: Vec<String> = servers
        .iter()
        .map(|s| match s.state {
            "ok" => format!(
                "{} ({}, ok, {} tools offered)",
                s.name,
                s.transport,
                s.offered.len()
            ),
            "error" => format!("{} ({}, DID NOT START)", s.name, s.transport),
            _ => format!("{} ({})", s.name, s.transport),
        })
        .collect();
    each.join(", ")
}

/// Each MCP server that was started: what it is, how it runs, what it
/// offers and what not (the errors are under errors).
fn mcp_servers(o: &mut String, servers: &[pincer_runtime::mcp::ServerStatus]) {
    if servers.is_empty() {
        return;
    }
    let _ = writeln!(o, "mcp servers:");
    for s in servers {
        let how = match (s.network, s.workspace) {
            (Some(net), Some(ws)) => format!(
                ", sandboxed, network {}, workspace {ws}",
                if net { "ON" } else { "off" }
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            o,
            "  {} ({} {}{how}), risk {}, tools {}",
            s.name,
            s.transport,
            terminal_safe(&s.target),
            s.risk,
            list(&s.tools)
        );
        if s.state == "ok" {
            let _ = writeln!(
                o,
                "    {} ({}), started in {} ms; offered: {}",
                terminal_safe(s.server.as_deref().unwrap_or("")),
                terminal_safe(s.protocol.as_deref().unwrap_or("")),
                s.start_ms.unwrap_or(0),
                list(&s.offered)
            );
            for n in &s.not_offered {
                let _ = writeln!(
                    o,
                    "    not offered: {}: {}",
                    terminal_safe(&n.tool),
                    terminal_safe(&n.why)
                );
            }
        }
    }
}

fn sandbox_line(s: &status::Sandbox) -> String {
    let shell = if s.offered {
        format!("shell {} offered", s.program)
    } else {
        format!("shell {} NOT offered (see warnings)", s.program)
    };
    match s.mode {
        SandboxMode::Off => format!("OFF: commands run without the OS sandbox; {shell}"),
        SandboxMode::On => format!(
            "on (Landlock ABI {}, cgroup {}{}); {shell}; network {}",
            s.landlock_abi
                .map_or_else(|| "none".to_string(), |a| a.to_string()),
            s.cgroup,
            if s.root { ", as root" } else { "" },
            s.network.as_str()
        ),
    }
}

/// Each layer: offered by the machine, allowed to degrade, and what the
/// live run of `true` applied.
fn sandbox_layers(o: &mut String, s: &status::Sandbox) {
    if s.mode == SandboxMode::Off {
        return;
    }
    let _ = writeln!(o, "sandbox layers (machine / live run):");
    for l in &s.layers {
        let live = match &s.live {
            Some(Part::Ok(layers)) => {
                layers
                    .iter()
                    .find(|x| x.layer == l.layer)
                    .map_or("-", |x| match x.state {
                        pincer_sandbox::State::Enforced => "enforced",
                        pincer_sandbox::State::Degraded => "DEGRADED",
                        pincer_sandbox::State::NotApplied => "not applied",
                    })
            }
            Some(Part::Err { .. }) => "failed",
            None => "-",
        };
        let _ = writeln!(
            o,
            "  {:<18} {:<13} {:<11} {}",
            l.layer.as_str(),
            match (l.available, l.may_degrade) {
                (true, _) => "available",
                (false, true) => "MISSING, may",
                (false, false) => "MISSING",
            },
            live,
            terminal_safe(&l.detail)
        );
    }
    if let Some(Part::Err { error }) = &s.live {
        let _ = writeln!(o, "  live run: {}", terminal_safe(error));
    }
}

/// `- item`, its further lines indented under it.
fn item(o: &mut String, text: &str) {
    for (i, line) in terminal_safe(text).lines().enumerate() {
        let _ = writeln!(
            o,
            "{}{}",
            if i == 0 { "  - " } else { "      " },
            line.trim_start()
        );
    }
}

fn problems(o: &mut String, r: &Report) {
    for (title, items) in [("errors:", &r.errors), ("warnings:", &r.warnings)] {
        if !items.is_empty() {
            let _ = writeln!(o, "{title}");
            for e in items {
                item(o, e);
            }
        }
    }
    let _ = writeln!(
        o,
        "{}",
        if r.ok {
            "no errors".to_string()
        } else {
            format!("{} error(s)", r.errors.len())
        }
    );
}

fn render_status(r: &Report) -> String {
    let mut o = format!("pincer {}\n", r.version);
    summary(&mut o, r);
    problems(&mut o, r);
    o
}

fn render_doctor(r: &Report) -> String {
    let mut o = format!("pincer {}\n", r.version);
    let _ = writeln!(o, "home:      {}", r.home);
    let _ = writeln!(
        o,
        "config:    {} ({})",
        r.config.path,
        if r.config.found {
            "loaded"
        } else {
            "not found; defaults"
        }
    );
    summary(&mut o, r);
    let p = &r.policy;
    let _ = writeln!(
        o,
        "policy:    fsync {}, approvals time out after {} s",
        p.fsync, p.approval_timeout_secs
    );
    let _ = writeln!(
        o,
        "deny:      tools {}; shell programs: built-in list + {}",
        list(&p.deny_tools),
        list(&p.deny_commands)
    );
    let hooks: Vec<String> = p
        .hooks
        .iter()
        .map(|h| {
            format!(
                "{} ({}, {}{})",
                h.name,
                h.kind,
                h.program,
                if h.runnable { "" } else { ": NOT FOUND" }
            )
        })
        .collect();
    let _ = writeln!(o, "hooks:     {}", list(&hooks));
    let _ = writeln!(o, "providers:");
    if r.providers.is_empty() {
        let _ = writeln!(o, "  none configured");
    }
    for p in &r.providers {
        let key = match (&p.api_key_env, p.api_key_set) {
            (Some(k), Some(true)) => format!(", key from ${k} (set)"),
            (Some(k), _) => format!(", key from ${k} (NOT SET)"),
            _ => String::new(),
        };
        let _ = writeln!(
            o,
            "  {} ({}) {} model {}{key}",
            p.name, p.kind, p.base_url, p.model
        );
        if let Some(pr) = &p.probe {
            render_checks(&mut o, &[&pr.health, &pr.models], &pr.model_ids);
        }
        if let Some(c) = &p.reach {
            render_checks(&mut o, &[c], &[]);
        }
    }
    if let Part::Ok(a) = &r.agent_provider
        && let Some(pr) = &a.detected
    {
        let _ = writeln!(o, "detected:");
        render_checks(&mut o, &[&pr.health, &pr.models], &pr.model_ids);
    }
    let _ = writeln!(o, "skills:    {}", list(&r.skills));
    mcp_servers(&mut o, &r.mcp);
    if let Part::Ok(sb) = &r.sandbox {
        sandbox_layers(&mut o, sb);
    }
    problems(&mut o, r);
    o
}

fn render_checks(o: &mut String, checks: &[&pincer_providers::Check], models: &[String]) {
    for c in checks {
        let state = if c.ok {
            "ok".to_string()
        } else {
            terminal_safe(c.error.as_deref().unwrap_or("failed"))
        };
        let _ = writeln!(o, "    GET {}: {state}", c.url);
    }
    if !models.is_empty() {
        let _ = writeln!(o, "    models: {}", terminal_safe(&models.join(", ")));
    }
}
