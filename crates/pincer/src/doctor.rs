//! `pincer doctor`: what pincer would use, and what is degraded, in one
//! report built by the runtime; the text and `--json` renderings read the
//! same struct.

use crate::Ctx;
use anyhow::{Context, Result};
use pincer_providers::ProbeReport;
use pincer_runtime::status::{self, Report};
use std::process::ExitCode;

pub fn run(ctx: &Ctx, json: bool) -> Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let report = rt.block_on(status::report(&ctx.home, &ctx.settings, &ctx.env));
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
    }
    Ok(ExitCode::SUCCESS)
}

fn render(r: &Report) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(o, "pincer {}", r.version);
    let _ = writeln!(o, "home:      {}", r.home);
    let _ = writeln!(
        o,
        "config:    {} ({})",
        r.config,
        if r.config_found {
            "loaded"
        } else {
            "not found; defaults"
        }
    );
    match (&r.workspace, &r.workspace_error) {
        (Some(w), _) => {
            let _ = writeln!(
                o,
                "workspace: {w} (paths resolved with {})",
                r.path_resolution.as_deref().unwrap_or("?")
            );
        }
        (_, Some(e)) => {
            let _ = writeln!(o, "workspace: ERROR {e}");
        }
        _ => {}
    }
    let _ = writeln!(o, "autonomy:  {}    fsync: {}", r.autonomy, r.fsync);
    let list = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    let _ = writeln!(
        o,
        "deny:      tools {}; shell programs: built-in list + {}",
        list(&r.deny_tools),
        list(&r.deny_commands)
    );
    let _ = writeln!(o, "hooks:     {}", list(&r.hooks));
    match &r.audit {
        Ok(a) => match &a.defect {
            None => {
                let _ = writeln!(o, "audit:     ok, {} entries", a.entries);
            }
            Some(d) => {
                let _ = writeln!(
                    o,
                    "audit:     DEFECT at seq {} ({}): run `pincer audit verify`",
                    d.seq, d.detail
                );
            }
        },
        Err(e) => {
            let _ = writeln!(o, "audit:     ERROR {e}");
        }
    }
    match &r.memory_pages {
        Ok((n, pinned, bad)) => {
            let _ = writeln!(
                o,
                "memory:    {n} pages ({pinned} pinned{}); search: {}",
                if *bad > 0 {
                    format!(", {bad} UNREADABLE: see `pincer memory list`")
                } else {
                    String::new()
                },
                r.memory_search
            );
        }
        Err(e) => {
            let _ = writeln!(o, "memory:    ERROR {e}");
        }
    }
    match &r.hardware {
        Ok(h) => {
            let _ = writeln!(o, "hardware:  {h}");
        }
        Err(e) => {
            let _ = writeln!(o, "hardware:  ERROR {e}");
        }
    }
    match &r.approvals_waiting {
        Ok(n) => {
            let _ = writeln!(o, "approvals: {n} waiting");
        }
        Err(e) => {
            let _ = writeln!(o, "approvals: ERROR {e}");
        }
    }
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
            "  {} ({:?}) {} model {}{key}",
            p.name, p.kind, p.base_url, p.model
        );
        if let Some(pr) = &p.probe {
            render_probe(&mut o, pr);
        }
    }
    match &r.agent_provider {
        Ok(how) => {
            let _ = writeln!(o, "agent uses: {how}");
            if let Some(pr) = &r.detected_local {
                render_probe(&mut o, pr);
            }
        }
        Err(e) => {
            let _ = writeln!(o, "agent cannot start: {e}");
        }
    }
    let _ = writeln!(
        o,
        "skills:    {}",
        if r.skills.is_empty() {
            "none".into()
        } else {
            r.skills.join(", ")
        }
    );
    for p in &r.skill_problems {
        let _ = writeln!(o, "  not loaded: {p}");
    }
    let _ = writeln!(o, "degraded:");
    for d in &r.degraded {
        let _ = writeln!(o, "  - {d}");
    }
    o
}

fn render_probe(o: &mut String, pr: &ProbeReport) {
    use std::fmt::Write as _;
    for c in [&pr.health, &pr.models] {
        let state = if c.ok {
            "ok".to_string()
        } else {
            c.error.clone().unwrap_or_default()
        };
        let _ = writeln!(o, "    GET {}: {state}", c.url);
    }
    if !pr.model_ids.is_empty() {
        let _ = writeln!(o, "    models: {}", pr.model_ids.join(", "));
    }
}
