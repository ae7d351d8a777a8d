//! `pincer demo`: pincer's main job on embedded defaults, in a throwaway
//! state directory, with no key and no server. Every tool result, decision
//! and number printed is what the real components did; only the model's
//! words are scripted. The agents run through the same runtime as
//! `pincer agent`.
//!
//! 1. [`injection`]: a prompt injection reaches for the sensors;
//! 2. [`session`]: an agent session with the file and shell tools;
//! 3. [`store`]: the session store under crashes, and trimming.
//!
//! Each part has a home of its own, so the numbers it prints are its own.

mod injection;
mod session;
mod store;

use anyhow::{Context, Result};
use pincer_core::agent::AgentEvent;
use pincer_core::approvals::Approver;
use pincer_core::home::Home;
use pincer_core::policy::Autonomy;
use pincer_providers::config::{ProviderConfig, ProviderKind};
use pincer_runtime::{AgentSession, Env, Runtime, RuntimeOptions, Settings};
use serde::Serialize;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

#[derive(Serialize)]
struct Report {
    home: String,
    kept: bool,
    hardware: injection::HwStory,
    agent: session::AgentStory,
    steps: Vec<store::Step>,
}

/// A removable temp directory of our own (tempfile is a dev-only dependency).
struct TempHome(PathBuf);

impl TempHome {
    fn new() -> Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let p = std::env::temp_dir().join(format!("pincer-demo-{}-{nanos}", std::process::id()));
        // Exclusive: an existing directory (or a symlink planted in the
        // shared temp dir) is an error, never reused.
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&p)
            .with_context(|| format!("cannot create {}", p.display()))?;
        Ok(Self(p))
    }
}

/// The home of one part: `root/name`, created.
fn part_home(root: &Path, name: &str) -> Result<Home> {
    let home = Home::new(root.join(name));
    home.ensure()
        .with_context(|| format!("cannot create {}", home.root().display()))?;
    Ok(home)
}

/// A runtime on `home` whose model replays `script`, under `autonomy`, on
/// the simulated board (the demo never touches real hardware), with the
/// tools `pincer agent` gets.
fn runtime(
    rt: &tokio::runtime::Runtime,
    home: &Home,
    autonomy: Autonomy,
    script: &str,
) -> Result<Runtime> {
    let script_path = home.root().join("demo-script.json");
    std::fs::write(&script_path, script)
        .with_context(|| format!("cannot write {}", script_path.display()))?;
    let mut settings = Settings::defaults(&home.config_path());
    settings.core.policy.autonomy = autonomy;
    settings.core.policy.approval_timeout_secs = 5;
    let mut provider = ProviderConfig::with_defaults(
        "scripted",
        ProviderKind::Scripted,
        "scripted",
        settings.core.context.context_window,
    );
    provider.script = Some(script_path);
    settings.providers = vec![provider];
    let env = Env::default().with_board("sim");
    let runtime = rt.block_on(Runtime::start(
        home.clone(),
        settings,
        env,
        RuntimeOptions::default(),
    ))?;
    for w in runtime.warnings() {
        eprintln!("warning: {}", pincer_core::text::terminal_safe(w));
    }
    Ok(runtime)
}

/// Opens `key` on `runtime` with `approver`.
fn open(runtime: &Runtime, key: &str, approver: Arc<dyn Approver>) -> Result<AgentSession> {
    Ok(runtime.open_session(key, approver)?)
}

/// One user turn; returns the reply and the events worth showing (every
/// event but the streamed text).
fn run_turn(
    rt: &tokio::runtime::Runtime,
    session: &mut AgentSession,
    user: &str,
) -> Result<(String, Vec<AgentEvent>)> {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let events = events.clone();
        move |e: AgentEvent| {
            if !matches!(e, AgentEvent::TextDelta { .. })
                && let Ok(mut v) = events.lock()
            {
                v.push(e);
            }
        }
    };
    let outcome = rt.block_on(session.run_turn(user, &sink))?;
    let events = events.lock().map(|v| v.clone()).unwrap_or_default();
    Ok((outcome.reply, events))
}

pub fn run(json_out: bool, keep: bool) -> Result<ExitCode> {
    let home = TempHome::new()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = injection::story(&rt, &home.0).and_then(|hw| {
        Ok((
            hw,
            session::story(&rt, &home.0)?,
            store::story(&part_home(&home.0, "store")?)?,
        ))
    });
    let kept = keep || result.is_err();
    if !kept {
        // Best effort: a leftover temp dir is harmless and named in the output.
        let _ = std::fs::remove_dir_all(&home.0);
    }
    let (hardware, agent, steps) = result?;
    let report = Report {
        home: home.0.display().to_string(),
        kept,
        hardware,
        agent,
        steps,
    };
    if json_out {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
    }
    Ok(ExitCode::SUCCESS)
}

fn render(r: &Report) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "pincer demo: on real files in a throwaway PINCER_HOME ({}{}).\n",
        r.home,
        if r.kept {
            ", kept"
        } else {
            ", removed afterwards"
        }
    );
    injection::render(&r.hardware, &mut out);
    session::render(&r.agent, &mut out);
    store::render(&r.steps, &mut out);
    out.push_str(NEXT);
    out
}

/// What a new user does next.
const NEXT: &str = "Next: your own agent.
   pincer init                 write a commented config.toml (every key, at its default)
   then one of: export OPENAI_API_KEY=… | export ANTHROPIC_API_KEY=… | run llama-server or Ollama locally
   pincer agent                talk to it (pincer doctor says what it would use)
";
