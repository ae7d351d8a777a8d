//! `pincer hook claude-code install|uninstall`: pincer's five hook points in
//! a Claude Code `settings.json`, in exec form.
//!
//! Claude Code's command hooks take `"command"` plus `"args"`: with `args`
//! present, `command` is spawned directly with those arguments and no shell
//! (checked against the installed client by `scripts/claude-code-contract.sh`).
//! So the absolute path of the pincer binary is written as it is, and a
//! path with quotes, `$`, backticks or spaces never reaches a shell parser.
//! Each entry:
//!
//! ```json
//! {"type": "command", "command": "/abs/pincer",
//!  "args": ["--home", "/abs/home", "hook", "claude-code", "PreToolUse"],
//!  "timeout": 30, "onFailure": "block"}
//! ```
//!
//! in a group with `"matcher": "*"` for the tool events and none for the
//! others. `--home` pins the pincer home the entry was installed for, so a
//! Claude Code started without `PINCER_HOME` in its environment still uses
//! it. `onFailure: "block"` on PreToolUse makes Claude Code block the call
//! when pincer cannot run at all (a removed binary, a crash, a timeout), so
//! a broken install never lets calls through silently.
//!
//! Editing keeps everything else: unknown keys and their order, third-party
//! hooks on the same events (also inside a group pincer shares), every other
//! event. A pincer entry is any command hook whose `args` hold `hook`,
//! `claude-code`, or whose shell-string `command` does; install removes all
//! of them first (stale ones from an older binary or another home
//! included) and counts those that pointed at a missing binary. The file is
//! replaced atomically (temp file, fsync, rename, directory fsync), keeping
//! its mode; a symlinked `settings.json` is written through to its target.
//! A file that is not valid JSON, or whose `hooks` is not shaped as Claude
//! Code reads it, is never touched: the error names the key.

use crate::hook::{ClaudeEnv, Event};
use crate::json::Json;
use serde::Serialize;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Seconds Claude Code waits for a pincer hook before its own timeout.
pub const HOOK_TIMEOUT_SECS: u64 = 30;

/// Which `settings.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// `DIR/.claude/settings.json`.
    Project(PathBuf),
    /// `$CLAUDE_CONFIG_DIR/settings.json`, else `~/.claude/settings.json`.
    User,
}

/// Why the settings could not be edited; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not valid JSON ({message}); pincer changes nothing in it: fix it or move it away", path.display())]
    NotJson { path: PathBuf, message: String },
    #[error("{}: `{key}` is {found}; Claude Code reads it as {expected}, so pincer changes nothing", path.display())]
    Shape {
        path: PathBuf,
        key: String,
        found: &'static str,
        expected: &'static str,
    },
    #[error("{what} {} is not an absolute path", path.display())]
    NotAbsolute { what: &'static str, path: PathBuf },
    #[error(
        "neither CLAUDE_CONFIG_DIR nor HOME is set, so the user's Claude Code settings cannot be found"
    )]
    NoUserDir,
}

/// What an install or uninstall did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub path: PathBuf,
    /// The events pincer's entries now cover.
    pub installed: Vec<&'static str>,
    /// pincer entries removed (all of them on uninstall; stale ones and the
    /// ones being replaced on install).
    pub removed: usize,
    /// Of those, the ones whose binary no longer exists.
    pub removed_missing_binary: usize,
    /// Other hooks left as they were on the events pincer uses.
    pub kept_third_party: usize,
    /// False when the file did not change (nothing to uninstall).
    pub wrote: bool,
}

/// The `settings.json` of `scope`.
pub fn settings_path(scope: &Scope, env: &ClaudeEnv) -> Result<PathBuf, InstallError> {
    match scope {
        Scope::Project(dir) => Ok(dir.join(".claude").join("settings.json")),
        Scope::User => env
            .config_dir
            .clone()
            .or_else(|| env.user_home.as_ref().map(|h| h.join(".claude")))
            .map(|d| d.join("settings.json"))
            .ok_or(InstallError::NoUserDir),
    }
}

/// Whether `p` is a file this user may execute.
pub fn runnable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether the hook object `h` is one of pincer's (any version, any path).
pub fn is_pincer_hook(h: &Json) -> bool {
    if h.get("type").and_then(Json::as_str) != Some("command") {
        return false;
    }
    if let Some(Json::Array(args)) = h.get("args") {
        return args
            .windows(2)
            .any(|w| w[0].as_str() == Some("hook") && w[1].as_str() == Some("claude-code"));
    }
    h.get("command").and_then(Json::as_str).is_some_and(|c| {
        c.split_whitespace()
            .collect::<Vec<_>>()
            .windows(2)
            .any(|w| w == ["hook", "claude-code"])
    })
}

/// The program a pincer hook object runs: `command` in exec form, the first
/// word of a shell string (quotes removed) otherwise.
pub fn hook_program(h: &Json) -> Option<PathBuf> {
    let command = h.get("command").and_then(Json::as_str)?;
    if h.get("args").is_some() {
        return Some(PathBuf::from(command));
    }
    let first = command.split_whitespace().next()?;
    Some(PathBuf::from(first.trim_matches(|c| c == '\'' || c == '"')))
}

/// The home an exec-form pincer entry was installed for (`--home DIR`).
pub fn hook_home(h: &Json) -> Option<&str> {
    let Some(Json::Array(args)) = h.get("args") else {
        return None;
    };
    args.windows(2)
        .find(|w| w[0].as_str() == Some("--home"))
        .and_then(|w| w[1].as_str())
}

/// pincer's entry group for `event`.
fn group(event: Event, exe: &Path, home: &Path) -> Json {
    let mut hook = vec![
        ("type".to_string(), Json::str("command")),
        ("command".to_string(), Json::str(&exe.to_string_lossy())),
        (
            "args".to_string(),
            Json::Array(
                [
                    "--home",
                    &home.to_string_lossy(),
                    "hook",
                    "claude-code",
                    event.as_str(),
                ]
                .iter()
                .map(|s| Json::str(s))
                .collect(),
            ),
        ),
        (
            "timeout".to_string(),
            Json::Number(HOOK_TIMEOUT_SECS.into()),
        ),
    ];
    if event == Event::PreToolUse {
        hook.push(("onFailure".to_string(), Json::str("block")));
    }
    let mut g = Vec::new();
    if event.takes_matcher() {
        g.push(("matcher".to_string(), Json::str("*")));
    }
    g.push(("hooks".to_string(), Json::Array(vec![Json::Object(hook)])));
    Json::Object(g)
}

/// The settings file as JSON (an empty object when it does not exist).
fn read(path: &Path) -> Result<(Json, bool), InstallError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((Json::Object(Vec::new()), false));
        }
        Err(source) => {
            return Err(InstallError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    if text.trim().is_empty() {
        return Ok((Json::Object(Vec::new()), true));
    }
    let doc: Json = serde_json::from_str(&text).map_err(|e| InstallError::NotJson {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    if !matches!(doc, Json::Object(_)) {
        return Err(InstallError::Shape {
            path: path.to_path_buf(),
            key: "(the whole file)".into(),
            found: doc.kind(),
            expected: "an object",
        });
    }
    Ok((doc, true))
}

/// Removes every pincer entry from `doc`'s `hooks`, and groups and events
/// left empty by that. Returns (removed, of which missing binary, third-party
/// hooks kept on pincer's events).
fn strip(path: &Path, doc: &mut Json) -> Result<(usize, usize, usize), InstallError> {
    let shape = |key: String, found: &'static str, expected: &'static str| InstallError::Shape {
        path: path.to_path_buf(),
        key,
        found,
        expected,
    };
    let Some(hooks) = doc.get_mut("hooks") else {
        return Ok((0, 0, 0));
    };
    let Json::Object(events) = hooks else {
        return Err(shape("hooks".into(), hooks.kind(), "an object of events"));
    };
    let (mut removed, mut missing, mut kept) = (0, 0, 0);
    for (event, groups) in events.iter_mut() {
        let Json::Array(list) = groups else {
            return Err(shape(
                format!("hooks.{event}"),
                groups.kind(),
                "an array of matcher groups",
            ));
        };
        let ours = Event::parse(event).is_some();
        for (i, g) in list.iter_mut().enumerate() {
            let Json::Object(_) = g else {
                return Err(shape(format!("hooks.{event}[{i}]"), g.kind(), "an object"));
            };
            let Some(Json::Array(inner)) = g.get_mut("hooks") else {
                continue;
            };
            inner.retain(|h| {
                if is_pincer_hook(h) {
                    removed += 1;
                    if !hook_program(h).is_some_and(|p| runnable(&p)) {
                        missing += 1;
                    }
                    false
                } else {
                    if ours {
                        kept += 1;
                    }
                    true
                }
            });
        }
        list.retain(|g| !matches!(g.get("hooks"), Some(Json::Array(inner)) if inner.is_empty()));
    }
    events.retain(|(_, groups)| !matches!(groups, Json::Array(l) if l.is_empty()));
    Ok((removed, missing, kept))
}

/// Installs pincer's five hook points into `path`, for the binary `exe`
/// and the pincer home `home` (both absolute).
pub fn install(path: &Path, exe: &Path, home: &Path) -> Result<Change, InstallError> {
    for (what, p) in [("the pincer binary", exe), ("the pincer home", home)] {
        if !p.is_absolute() {
            return Err(InstallError::NotAbsolute {
                what,
                path: p.to_path_buf(),
            });
        }
    }
    let (mut doc, _) = read(path)?;
    let (removed, removed_missing_binary, kept_third_party) = strip(path, &mut doc)?;
    if doc.get("hooks").is_none() {
        doc.set("hooks", Json::Object(Vec::new()));
    }
    if let Some(Json::Object(events)) = doc.get_mut("hooks") {
        for ev in Event::ALL {
            let g = group(ev, exe, home);
            match events.iter_mut().rev().find(|(k, _)| k == ev.as_str()) {
                Some((_, Json::Array(list))) => list.push(g),
                _ => events.push((ev.as_str().to_string(), Json::Array(vec![g]))),
            }
        }
    }
    write(path, &doc)?;
    Ok(Change {
        path: path.to_path_buf(),
        installed: Event::ALL.map(Event::as_str).to_vec(),
        removed,
        removed_missing_binary,
        kept_third_party,
        wrote: true,
    })
}

/// Removes every pincer entry from `path`; a missing file, or one without
/// pincer entries, is left as it is.
pub fn uninstall(path: &Path) -> Result<Change, InstallError> {
    let (mut doc, exists) = read(path)?;
    let (removed, removed_missing_binary, kept_third_party) = strip(path, &mut doc)?;
    if matches!(doc.get("hooks"), Some(Json::Object(e)) if e.is_empty()) {
        doc.remove("hooks");
    }
    let wrote = exists && removed > 0;
    if wrote {
        write(path, &doc)?;
    }
    Ok(Change {
        path: path.to_path_buf(),
        installed: Vec::new(),
        removed,
        removed_missing_binary,
        kept_third_party,
        wrote,
    })
}

/// Replaces `path` with `doc` atomically, keeping the file's mode; through
/// a symlink to its target.
fn write(path: &Path, doc: &Json) -> Result<(), InstallError> {
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| InstallError::Io { path: p, source }
    };
    let target = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path).map_err(io(path))?,
        _ => path.to_path_buf(),
    };
    let dir = target.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mode = std::fs::metadata(&target)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o644);
    let mut text = serde_json::to_string_pretty(doc).unwrap_or_else(|_| "{}".to_string());
    text.push('\n');
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "settings.json".into());
    let tmp = dir.join(format!(".{name}.pincer-{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        // create_new applies the umask; the file keeps the old mode.
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, &target)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io(&target))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(path: &Path) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
    }

    #[test]
    fn the_settings_names_are_the_contracts() {
        fn keys(v: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
            if let serde_json::Value::Object(m) = v {
                for (k, x) in m {
                    out.insert(k.clone());
                    keys(x, out);
                }
            }
            if let serde_json::Value::Array(a) = v {
                a.iter().for_each(|x| keys(x, out));
            }
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("settings.json");
        install(&p, Path::new("/bin/true"), Path::new("/h")).expect("install");
        let mut got = std::collections::BTreeSet::new();
        let d = doc(&p);
        keys(&d, &mut got);
        for ev in Event::ALL {
            got.remove(ev.as_str());
        }
        let c = crate::contract::contract();
        assert_eq!(got, c.settings_fields.iter().cloned().collect());
        let h = &d["hooks"]["PreToolUse"][0]["hooks"][0];
        assert_eq!(
            vec![
                h["type"].as_str().unwrap_or_default(),
                h["onFailure"].as_str().unwrap_or_default()
            ],
            c.settings_values
        );
    }

    #[test]
    fn the_entry_is_exec_form() {
        let g = group(
            Event::PreToolUse,
            Path::new("/a b/pin'cer"),
            Path::new("/h"),
        );
        let v: serde_json::Value = serde_json::to_value(&g).expect("value");
        assert_eq!(v["matcher"], "*");
        assert_eq!(v["hooks"][0]["command"], "/a b/pin'cer");
        assert_eq!(
            v["hooks"][0]["args"],
            serde_json::json!(["--home", "/h", "hook", "claude-code", "PreToolUse"])
        );
        assert_eq!(v["hooks"][0]["onFailure"], "block");
        let g = serde_json::to_value(group(Event::SessionEnd, Path::new("/p"), Path::new("/h")))
            .expect("value");
        assert!(g.get("matcher").is_none());
        assert!(g["hooks"][0].get("onFailure").is_none());
    }

    #[test]
    fn a_bad_file_is_named_and_left_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("settings.json");
        for (text, needle) in [
            ("{not json", "not valid JSON"),
            ("[]", "(the whole file)"),
            (r#"{"hooks": []}"#, "`hooks`"),
            (r#"{"hooks": {"PreToolUse": {}}}"#, "`hooks.PreToolUse`"),
            (r#"{"hooks": {"Stop": [3]}}"#, "`hooks.Stop[0]`"),
        ] {
            std::fs::write(&p, text).expect("write");
            let e = install(&p, Path::new("/bin/true"), Path::new("/h")).expect_err("refused");
            assert!(e.to_string().contains(needle), "{e}");
            assert_eq!(std::fs::read_to_string(&p).expect("read"), text);
        }
        let e = install(&p, Path::new("rel/pincer"), Path::new("/h")).expect_err("relative");
        assert!(e.to_string().contains("absolute"), "{e}");
    }

    #[test]
    fn mode_and_symlink_are_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("dotfiles-settings.json");
        std::fs::write(&real, "{\"model\": \"x\"}").expect("write");
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        let link = dir.path().join("settings.json");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        install(&link, Path::new("/bin/true"), Path::new("/h")).expect("install");
        assert!(
            std::fs::symlink_metadata(&link)
                .expect("meta")
                .file_type()
                .is_symlink()
        );
        let m = std::fs::metadata(&real).expect("meta").permissions().mode() & 0o777;
        assert_eq!(m, 0o640);
        assert_eq!(doc(&real)["model"], "x");
        assert_eq!(doc(&real)["hooks"].as_object().expect("hooks").len(), 5);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .expect("ls")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }
}
