//! How many of the five hook points are active, for `pincer doctor` and
//! `pincer status` (a part of the runtime's report). A hook point is active
//! when a `settings.json` Claude Code reads for this directory — the
//! user's, the project's, the project's `settings.local.json` — has a
//! pincer entry on that event whose binary can run.

use crate::hook::{ClaudeEnv, Event};
use crate::install::{Scope, hook_home, hook_program, is_pincer_hook, runnable, settings_path};
use crate::json::Json;
use pincer_runtime::status::FrontEnd;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One settings file as the report sees it.
#[derive(Debug, Clone, Serialize)]
pub struct FileState {
    pub path: PathBuf,
    pub exists: bool,
    /// Why it could not be read, if it exists and could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Events with a pincer entry whose binary can run.
    pub active: Vec<String>,
    /// pincer entries whose binary is missing.
    pub missing_binary: usize,
    /// pincer homes other than this one that entries name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub other_homes: Vec<String>,
}

/// The part of the report.
#[derive(Debug, Clone, Serialize)]
pub struct HookPoints {
    pub active: usize,
    pub total: usize,
    pub missing: Vec<&'static str>,
    pub files: Vec<FileState>,
}

fn file_state(path: PathBuf, home: &Path) -> FileState {
    let mut st = FileState {
        exists: false,
        error: None,
        active: Vec::new(),
        missing_binary: 0,
        other_homes: Vec::new(),
        path,
    };
    let text = match std::fs::read_to_string(&st.path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return st,
        Err(e) => {
            st.exists = true;
            st.error = Some(e.to_string());
            return st;
        }
    };
    st.exists = true;
    let doc: Json = match serde_json::from_str(&text) {
        Ok(d) => d,
        Err(e) => {
            st.error = Some(format!("not valid JSON: {e}"));
            return st;
        }
    };
    let Some(Json::Object(events)) = doc.get("hooks") else {
        return st;
    };
    for (event, groups) in events {
        let Json::Array(groups) = groups else {
            continue;
        };
        for g in groups {
            let Some(Json::Array(hooks)) = g.get("hooks") else {
                continue;
            };
            for h in hooks.iter().filter(|h| is_pincer_hook(h)) {
                if !hook_program(h).is_some_and(|p| runnable(&p)) {
                    st.missing_binary += 1;
                    continue;
                }
                if let Some(other) = hook_home(h).filter(|o| Path::new(o) != home)
                    && !st.other_homes.iter().any(|x| x == other)
                {
                    st.other_homes.push(other.to_string());
                }
                if Event::parse(event).is_some() && !st.active.contains(event) {
                    st.active.push(event.clone());
                }
            }
        }
    }
    st
}

/// The hook points for a Claude Code started in `project` (the current
/// directory), checked against the pincer home `home`: the report's part,
/// its errors and its warnings.
pub fn hook_points(
    project: Option<&Path>,
    env: &ClaudeEnv,
    home: &Path,
) -> (FrontEnd, Vec<String>, Vec<String>) {
    let mut paths = Vec::new();
    if let Ok(p) = settings_path(&Scope::User, env) {
        paths.push(p);
    }
    if let Some(dir) = project {
        paths.push(dir.join(".claude").join("settings.json"));
        paths.push(dir.join(".claude").join("settings.local.json"));
    }
    let files: Vec<FileState> = paths.into_iter().map(|p| file_state(p, home)).collect();
    let missing: Vec<&'static str> = Event::ALL
        .iter()
        .filter(|e| {
            !files
                .iter()
                .any(|f| f.active.iter().any(|a| a == e.as_str()))
        })
        .map(|e| e.as_str())
        .collect();
    let points = HookPoints {
        active: Event::ALL.len() - missing.len(),
        total: Event::ALL.len(),
        missing: missing.clone(),
        files,
    };
    let mut warnings = Vec::new();
    for f in &points.files {
        if let Some(e) = &f.error {
            warnings.push(format!(
                "claude code: {} cannot be read: {e}",
                f.path.display()
            ));
        }
        if f.missing_binary > 0 {
            warnings.push(format!(
                "claude code: {} has {} pincer hook(s) whose binary is missing; run `pincer hook claude-code install` again",
                f.path.display(),
                f.missing_binary
            ));
        }
        for h in &f.other_homes {
            warnings.push(format!(
                "claude code: {} sends hooks to another pincer home, {h}",
                f.path.display()
            ));
        }
    }
    let where_ = points
        .files
        .iter()
        .filter(|f| !f.active.is_empty())
        .map(|f| f.path.display().to_string())
        .collect::<Vec<_>>();
    let summary = match points.active {
        0 => "not installed (`pincer hook claude-code install` in a project)".to_string(),
        n if n == points.total => format!(
            "{n} of {} hook points active ({})",
            points.total,
            where_.join(", ")
        ),
        n => {
            warnings.push(format!(
                "claude code: only {n} of {} hook points are active; missing {}: run `pincer hook claude-code install`",
                points.total,
                missing.join(", ")
            ));
            format!(
                "{n} of {} hook points active ({}); missing {}",
                points.total,
                where_.join(", "),
                missing.join(", ")
            )
        }
    };
    let detail = serde_json::to_value(&points).unwrap_or_default();
    (
        FrontEnd {
            name: "claude_code",
            summary,
            detail,
        },
        Vec::new(),
        warnings,
    )
}
