//! What pincer would use and what is degraded, as one report: `pincer
//! doctor` renders it, and every other front-end that reports status reads
//! the same function.

use crate::{Env, Settings};
use pincer_core::home::Home;
use pincer_providers::config::ProviderKind;
use pincer_providers::{ProbeReport, probe};
use serde::Serialize;
use std::time::Duration;

#[derive(Debug, Serialize)]
pub struct ProviderStatus {
    pub name: String,
    pub kind: ProviderKind,
    pub base_url: String,
    pub model: String,
    /// The variable named by `api_key_env`, and whether it is set (never
    /// its value).
    pub api_key_env: Option<String>,
    pub api_key_set: Option<bool>,
    /// PR3: `/health` and `/models` of an OpenAI-compatible server on this
    /// machine.
    pub probe: Option<ProbeReport>,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub version: &'static str,
    pub home: String,
    pub config: String,
    pub config_found: bool,
    pub workspace: Option<String>,
    pub workspace_error: Option<String>,
    pub path_resolution: Option<String>,
    pub autonomy: &'static str,
    pub fsync: &'static str,
    /// `[policy]` deny lists and `[[hooks]]` names, as configured.
    pub deny_tools: Vec<String>,
    pub deny_commands: Vec<String>,
    pub hooks: Vec<String>,
    /// AU3, the same walk as `pincer audit verify`.
    pub audit: Result<pincer_core::audit::VerifyReport, String>,
    /// Calls waiting for a person (`pincer approvals list`).
    pub approvals_waiting: Result<usize, String>,
    /// ME3: which search memory uses (`fts5`, or `scan` without it).
    pub memory_search: &'static str,
    /// Memory pages, pinned pages, and pages that could not be read.
    pub memory_pages: Result<(usize, usize, usize), String>,
    /// HW3: the board, how it was chosen, and whether the agent gets the
    /// hardware tools; or the `[hardware]` / `PINCER_BOARD` error.
    pub hardware: Result<String, String>,
    pub providers: Vec<ProviderStatus>,
    /// What `pincer agent` would use now, or why it cannot start.
    pub agent_provider: Result<String, String>,
    /// PR3: what zero-config detection found on this machine, if it probed.
    pub detected_local: Option<ProbeReport>,
    pub skills: Vec<String>,
    pub skill_problems: Vec<String>,
    /// Things that work, but less well than they could, said plainly.
    pub degraded: Vec<String>,
}

fn is_local(url: &str) -> bool {
    url.starts_with("http://127.")
        || url.starts_with("http://localhost")
        || url.starts_with("http://[::1]")
}

pub async fn report(home: &Home, settings: &Settings, env: &Env) -> Report {
    let cfg = settings;
    let mut providers = Vec::new();
    for p in &settings.providers {
        let probe = if p.kind == ProviderKind::Openai && is_local(&p.base_url) {
            Some(probe(&p.base_url, Duration::from_secs(2)).await)
        } else {
            None
        };
        providers.push(ProviderStatus {
            name: p.name.clone(),
            kind: p.kind,
            base_url: p.base_url.clone(),
            model: p.model.clone(),
            api_key_env: p.api_key_env.clone(),
            api_key_set: p.api_key_env.as_ref().map(|k| env.var(k).is_some()),
            probe,
        });
    }
    // The same choice `pincer agent` makes, built the same way, so a missing
    // key shows here as it would there.
    let choice = crate::providers::choose(settings, env, None).await;
    let detected = choice.as_ref().ok().and_then(|c| c.probe.clone());
    let agent_provider = choice
        .and_then(|c| crate::providers::build(&c, env).map(|_| c.how))
        .map_err(|e| e.to_string());
    let mut degraded = vec![
        "shell: runs without an OS sandbox (namespaces, Landlock, cgroups are not built yet); \
         commands the classifier calls read-only run unapproved under supervised autonomy"
            .to_string(),
    ];
    let (workspace, workspace_error, path_resolution) =
        match crate::tools::workspace_dir(home, settings, env, None)
            .and_then(|d| crate::tools::open_workspace(home, &d))
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
    if let Ok(tools) = crate::tools::assessment_tools(home, settings, env) {
        for p in &cfg.core.policy.deny_tools {
            if !tools
                .iter()
                .any(|t| pincer_core::glob::glob_match(p, t.name()))
            {
                degraded.push(format!(
                    "policy: deny_tools pattern `{p}` matches no tool (a typo protects nothing)"
                ));
            }
        }
    }
    let (skills, problems) = pincer_core::skills::load(&home.skills_dir()).unwrap_or_else(|e| {
        (
            Vec::new(),
            vec![pincer_core::skills::SkillProblem {
                path: home.skills_dir(),
                reason: e.to_string(),
            }],
        )
    });
    let audit = pincer_core::audit::Audit::open(&home.audit_dir())
        .and_then(|a| a.verify())
        .map_err(|e| e.to_string());
    let approvals_waiting = pincer_core::approvals::ApprovalQueue::open(&home.approvals_dir())
        .and_then(|q| q.list())
        .map(|l| l.pending.len())
        .map_err(|e| e.to_string());
    if !pincer_memory::fts5_available() {
        degraded.push(
            "memory: built without the SQLite FTS5 index (feature `fts5`); every search scans the page files"
                .to_string(),
        );
    }
    let memory_pages = pincer_memory::PageStore::open(home.memory_dir())
        .and_then(|s| s.list())
        .map(|(pages, problems)| {
            let pinned = pages.iter().filter(|p| p.pinned).count();
            (pages.len(), pinned, problems.len())
        })
        .map_err(|e| e.to_string());
    let hardware = crate::tools::hardware(settings, env)
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
        .map_err(|e| e.to_string());
    Report {
        hardware,
        memory_search: if pincer_memory::fts5_available() {
            "fts5"
        } else {
            "scan"
        },
        memory_pages,
        deny_tools: cfg.core.policy.deny_tools.clone(),
        deny_commands: cfg.core.policy.deny_commands.clone(),
        hooks: cfg
            .core
            .hooks
            .iter()
            .map(|h| format!("{} ({})", h.name, h.kind.as_str()))
            .collect(),
        audit,
        approvals_waiting,
        version: env!("CARGO_PKG_VERSION"),
        home: home.root().display().to_string(),
        config: settings.path.display().to_string(),
        config_found: settings.found,
        workspace,
        workspace_error,
        path_resolution,
        autonomy: cfg.core.policy.autonomy.as_str(),
        fsync: cfg.core.session.fsync.as_str(),
        providers,
        agent_provider,
        detected_local: detected,
        skills: skills.iter().map(|s| s.name.clone()).collect(),
        skill_problems: problems
            .iter()
            .map(|p| format!("{}: {}", p.path.display(), p.reason))
            .collect(),
        degraded,
    }
}
