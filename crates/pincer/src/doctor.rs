//! `pincer doctor`: what pincer would use, and what is degraded, in one
//! report; the text and `--json` renderings read the same struct.

use crate::Ctx;
use crate::wiring::{self, Env};
use anyhow::{Context, Result};
use pincer_core::config::ProviderKind;
use pincer_providers::{ProbeReport, probe};
use serde::Serialize;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Serialize)]
struct ProviderStatus {
    name: String,
    kind: ProviderKind,
    base_url: String,
    model: String,
    /// The variable named by `api_key_env`, and whether it is set (never
    /// its value).
    api_key_env: Option<String>,
    api_key_set: Option<bool>,
    /// PR3: `/health` and `/models` of an OpenAI-compatible server on this
    /// machine.
    probe: Option<ProbeReport>,
}

#[derive(Debug, Serialize)]
struct Report {
    version: &'static str,
    home: String,
    config: String,
    config_found: bool,
    workspace: Option<String>,
    workspace_error: Option<String>,
    path_resolution: Option<String>,
    autonomy: &'static str,
    fsync: &'static str,
    /// `[policy]` deny lists and `[[hooks]]` names, as configured.
    deny_tools: Vec<String>,
    deny_commands: Vec<String>,
    hooks: Vec<String>,
    /// AU3, the same walk as `pincer audit verify`.
    audit: Result<pincer_core::audit::VerifyReport, String>,
    /// Calls waiting for a person (`pincer approvals list`).
    approvals_waiting: Result<usize, String>,
    /// ME3: which search memory uses (`fts5`, or `scan` without it).
    memory_search: &'static str,
    /// Memory pages, pinned pages, and pages that could not be read.
    memory_pages: Result<(usize, usize, usize), String>,
    /// HW3: the board, how it was chosen, and whether the agent gets the
    /// hardware tools; or the `[hardware]` / `PINCER_BOARD` error.
    hardware: Result<String, String>,
    providers: Vec<ProviderStatus>,
    /// What `pincer agent` would use now, or why it cannot start.
    agent_provider: Result<String, String>,
    /// PR3: what zero-config detection found on this machine, if it probed.
    detected_local: Option<ProbeReport>,
    skills: Vec<String>,
    skill_problems: Vec<String>,
    /// Things that work, but less well than they could, said plainly.
    degraded: Vec<String>,
}

fn is_local(url: &str) -> bool {
    url.starts_with("http://127.")
        || url.starts_with("http://localhost")
        || url.starts_with("http://[::1]")
}

pub fn run(ctx: &Ctx, json: bool) -> Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let env = Env::read(ctx);
    let cfg = &ctx.config;
    let mut providers = Vec::new();
    for p in &cfg.providers {
        let probe = if p.kind == ProviderKind::Openai && is_local(&p.base_url) {
            Some(rt.block_on(probe(&p.base_url, Duration::from_secs(2))))
        } else {
            None
        };
        providers.push(ProviderStatus {
            name: p.name.clone(),
            kind: p.kind,
            base_url: p.base_url.clone(),
            model: p.model.clone(),
            api_key_env: p.api_key_env.clone(),
            api_key_set: p
                .api_key_env
                .as_ref()
                .map(|k| env.keys.iter().any(|(name, _)| name == k)),
            probe,
        });
    }
    // The same choice `pincer agent` makes, built the same way, so a missing
    // key shows here as it would there.
    let choice = rt.block_on(wiring::choose_provider(ctx, &env, None));
    let detected = choice.as_ref().ok().and_then(|c| c.probe.clone());
    let agent_provider = choice
        .and_then(|c| wiring::build_provider(&c, &env).map(|_| c.how))
        .map_err(|e| format!("{e:#}"));
    let mut degraded = vec![
        "shell: runs without an OS sandbox (namespaces, Landlock, cgroups are not built yet); \
         commands the classifier calls read-only run unapproved under supervised autonomy"
            .to_string(),
    ];
    let (workspace, workspace_error, path_resolution) = match wiring::workspace_dir(ctx, &env, None)
        .and_then(|d| wiring::open_workspace(ctx, &d))
    {
        Ok(ws) => {
            if ws.resolution_mode() != pincer_tools::ResolutionMode::Openat2 {
                degraded.push(format!("file tools: {}", ws.resolution_mode().as_str()));
            }
            (
                Some(ws.root().display().to_string()),
                None,
                Some(ws.resolution_mode().as_str().to_string()),
            )
        }
        Err(e) => (None, Some(e.to_string()), None),
    };
    // A deny pattern that matches no tool is most likely a typo that
    // protects nothing.
    if let Ok(tools) = wiring::assess_only_tools(ctx, &env) {
        for p in &cfg.policy.deny_tools {
            if !tools
                .iter()
                .any(|t| pincer_core::gate::glob_match(p, t.name()))
            {
                degraded.push(format!(
                    "policy: deny_tools pattern `{p}` matches no tool (a typo protects nothing)"
                ));
            }
        }
    }
    let (skills, problems) = pincer_core::skills::load(&ctx.home.root().join("skills"))?;
    let audit = pincer_core::audit::Audit::open(&ctx.home.audit_dir())
        .and_then(|a| a.verify())
        .map_err(|e| e.to_string());
    let approvals_waiting = pincer_core::approvals::ApprovalQueue::open(&ctx.home.approvals_dir())
        .and_then(|q| q.list())
        .map(|l| l.pending.len())
        .map_err(|e| e.to_string());
    if !pincer_memory::fts5_available() {
        degraded.push(
            "memory: built without the SQLite FTS5 index (feature `fts5`); every search scans the page files"
                .to_string(),
        );
    }
    let memory_pages = pincer_memory::PageStore::open(ctx.home.root().join("memory"))
        .and_then(|s| s.list())
        .map(|(pages, problems)| {
            let pinned = pages.iter().filter(|p| p.pinned).count();
            (pages.len(), pinned, problems.len())
        })
        .map_err(|e| e.to_string());
    let hardware = crate::wiring::hardware(ctx, &env)
        .map(|hw| {
            let d = hw.detection();
            if let Some(w) = &d.warning {
                degraded.push(format!("hardware: {w}"));
            }
            let fallback = matches!(
                d.source,
                pincer_hw::DetectSource::NoDeviceTree
                    | pincer_hw::DetectSource::UnknownDeviceTree { .. }
            );
            format!(
                "{} (from {}); agent hardware tools: {}",
                d.board.name,
                serde_json::to_value(&d.source)
                    .ok()
                    .and_then(|v| v["source"].as_str().map(str::to_string))
                    .unwrap_or_default(),
                if fallback {
                    "off (no board detected; set PINCER_BOARD=sim to try the simulated one)"
                } else {
                    "on"
                }
            )
        })
        .map_err(|e| format!("{e:#}"));
    let report = Report {
        hardware,
        memory_search: if pincer_memory::fts5_available() {
            "fts5"
        } else {
            "scan"
        },
        memory_pages,
        deny_tools: cfg.policy.deny_tools.clone(),
        deny_commands: cfg.policy.deny_commands.clone(),
        hooks: cfg
            .hooks
            .iter()
            .map(|h| format!("{} ({})", h.name, h.kind.as_str()))
            .collect(),
        audit,
        approvals_waiting,
        version: env!("CARGO_PKG_VERSION"),
        home: ctx.home.root().display().to_string(),
        config: ctx.home.config_path().display().to_string(),
        config_found: ctx.config_found,
        workspace,
        workspace_error,
        path_resolution,
        autonomy: cfg.policy.autonomy.as_str(),
        fsync: cfg.session.fsync.as_str(),
        providers,
        agent_provider,
        detected_local: detected,
        skills: skills.iter().map(|s| s.name.clone()).collect(),
        skill_problems: problems
            .iter()
            .map(|p| format!("{}: {}", p.path.display(), p.reason))
            .collect(),
        degraded,
    };
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
