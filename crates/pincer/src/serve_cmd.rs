//! `pincer serve`: one long-running process over one runtime. The binary's
//! share is what a library must not do: read the environment (the bot
//! token), handle signals, and build the list of services from the config
//! and the features this binary was built with. Supervision, drain, the
//! status file and cron live in `pincer-serve`; the channels in
//! `pincer-channels`.
//!
//! - SIGTERM / SIGINT: drain (turns in flight get `[serve] drain_secs` to
//!   finish, then are cancelled; their sessions stay valid), `serve.stop`.
//! - SIGHUP: re-read `config.toml`. A file that does not load is refused
//!   (`serve.reload` with `applied: false` and the error) and the running
//!   services go on untouched. A file that loads drains the running
//!   generation and starts a new runtime over it — which records
//!   `config.load`, and `policy.change` when the policy differs — then the
//!   services it enables (`serve.reload`, `applied: true`).
//!
//! The HTTP gateway (`[gateway]`, feature `gateway`) is one of them, in
//! `gateway_cmd::service`. Adding a service is one entry in [`services`]: any
//! `Arc<dyn Service>`, or `pincer_serve::service::from_fn(name, f)` over an
//! async function of a `ServiceCtx`.

use crate::{Ctx, front_end_sections};
use anyhow::{Context, Result};
use pincer_core::actor;
use pincer_core::audit::schema::{ServeReload, ServeStart, ServeStop};
use pincer_core::text::terminal_safe;
use pincer_runtime::{Env, Runtime, RuntimeOptions, Settings};
use pincer_serve::cron::CronService;
use pincer_serve::heartbeat::HeartbeatService;
use pincer_serve::{HeartbeatConfig, ServeConfig, Service, StateFile, Supervisor};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{SignalKind, signal};

/// The services `settings` enables, in start order.
pub fn services(settings: &Settings, env: &Env) -> Vec<Arc<dyn Service>> {
    let mut list: Vec<Arc<dyn Service>> = Vec::new();
    #[cfg(feature = "telegram")]
    if let Some(cfg) = pincer_channels::ChannelsConfig::of(settings).telegram {
        let token = env
            .var(&cfg.token_env)
            .and_then(|t| pincer_channels::Token::new(t.to_string()));
        list.push(Arc::new(pincer_channels::telegram::TelegramService {
            config: cfg,
            token,
        }));
    }
    #[cfg(feature = "discord")]
    if let Some(cfg) = pincer_channels::ChannelsConfig::of(settings).discord {
        let token = env
            .var(&cfg.token_env)
            .and_then(|t| pincer_channels::Token::new(t.to_string()));
        list.push(Arc::new(pincer_channels::discord::DiscordService {
            config: cfg,
            token,
        }));
    }
    #[cfg(not(any(feature = "telegram", feature = "discord", feature = "camera")))]
    let _ = env;
    #[cfg(feature = "camera")]
    if let Some(cfg) = pincer_channels::ChannelsConfig::of(settings).camera {
        if !cfg.bind.ip().is_loopback() {
            eprintln!(
                "warning: the camera channel listens on {} (allow_remote): the shared secret travels unencrypted, so only a network you trust protects it",
                cfg.bind
            );
        }
        let token = env
            .var(&cfg.token_env)
            .and_then(|t| pincer_channels::Token::new(t.to_string()));
        list.push(Arc::new(pincer_channels::camera::CameraService {
            config: cfg,
            token,
        }));
    }
    list.push(Arc::new(CronService));
    let hb = HeartbeatConfig::of(settings);
    if hb.every_secs > 0 {
        list.push(Arc::new(HeartbeatService {
            every: Duration::from_secs(hb.every_secs),
            notify: hb.notify,
        }));
    }
    // Last, so the session key spaces of every other service are known.
    #[cfg(feature = "gateway")]
    if let Some(cfg) = pincer_gateway::config::GatewayConfig::of(settings) {
        if let Ok(Some(w)) = pincer_gateway::check_bind(cfg.bind, cfg.allow_public) {
            eprintln!("warning: {w}");
        }
        let reserved = names(&list);
        list.push(crate::gateway_cmd::service(cfg, reserved));
    }
    list
}

fn names(list: &[Arc<dyn Service>]) -> Vec<String> {
    list.iter().map(|s| s.name().to_string()).collect()
}

async fn start_runtime(
    ctx_env: &Env,
    home: &pincer_core::home::Home,
    settings: Settings,
) -> Result<Runtime> {
    let rt = Runtime::start(
        home.clone(),
        settings,
        ctx_env.clone(),
        RuntimeOptions::default(),
    )
    .await
    .context("cannot start the runtime")?;
    for w in rt.warnings() {
        eprintln!("warning: {}", terminal_safe(w));
    }
    Ok(rt)
}

pub fn run(ctx: &Ctx) -> Result<ExitCode> {
    // As `pincer agent`: other processes of this user must not read the
    // environment (the bot token, API keys) through /proc or ptrace.
    if let Err(e) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        eprintln!(
            "warning: cannot make pincer non-dumpable ({e}); other processes of this user can read its environment, tokens included"
        );
    }
    let state = StateFile::take(&ctx.home.serve_dir())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = rt.block_on(serve(ctx, state.clone()));
    state.stopped();
    // A chat approval or a provider call cut by the drain may hold a
    // blocking task: do not wait for it on the way out.
    rt.shutdown_background();
    result
}

async fn serve(ctx: &Ctx, state: StateFile) -> Result<ExitCode> {
    let mut term = signal(SignalKind::terminate()).context("cannot watch SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot watch SIGINT")?;
    let mut hup = signal(SignalKind::hangup()).context("cannot watch SIGHUP")?;
    let supervisor = Supervisor::new(state);
    let mut settings = ctx.settings.clone();
    let runtime = Arc::new(start_runtime(&ctx.env, &ctx.home, settings.clone()).await?);
    let audit = runtime.audit().clone();
    let list = services(&settings, &ctx.env);
    audit.record(
        actor::SYSTEM,
        &ServeStart {
            pid: std::process::id(),
            services: names(&list),
        },
    )?;
    eprintln!(
        "pincer serve: pid {}, provider {}, services: {}",
        std::process::id(),
        runtime.provider_choice().how,
        names(&list).join(", ")
    );
    let mut generation = supervisor.start(runtime, list);
    let reason = loop {
        tokio::select! {
            _ = term.recv() => break "SIGTERM",
            _ = int.recv() => break "SIGINT",
            _ = hup.recv() => {}
        }
        let drain = Duration::from_secs(ServeConfig::of(&settings).drain_secs);
        let fresh = match Settings::load_with(&ctx.home.config_path(), &front_end_sections()) {
            Ok(s) => s,
            Err(e) => {
                let error = e.to_string();
                eprintln!(
                    "reload refused, the running config stays: {}",
                    terminal_safe(&error)
                );
                audit.record(
                    actor::SYSTEM,
                    &ServeReload {
                        applied: false,
                        error: Some(error),
                        services: Vec::new(),
                    },
                )?;
                continue;
            }
        };
        let drained = generation.drain(drain).await;
        if drained.cancelled_turns > 0 {
            eprintln!(
                "reload: {} turn(s) cancelled by the drain",
                drained.cancelled_turns
            );
        }
        // The new runtime records config.load (and policy.change when the
        // policy differs). Should it not start (a provider removed), the
        // old config runs again and the reload is said to have failed.
        let (runtime, error) = match start_runtime(&ctx.env, &ctx.home, fresh.clone()).await {
            Ok(rt) => {
                settings = fresh;
                (rt, None)
            }
            Err(e) => {
                let error = format!("{e:#}");
                eprintln!(
                    "reload refused, the running config stays: {}",
                    terminal_safe(&error)
                );
                (
                    start_runtime(&ctx.env, &ctx.home, settings.clone()).await?,
                    Some(error),
                )
            }
        };
        let list = services(&settings, &ctx.env);
        audit.record(
            actor::SYSTEM,
            &ServeReload {
                applied: error.is_none(),
                error,
                services: names(&list),
            },
        )?;
        generation = supervisor.start(Arc::new(runtime), list);
    };
    eprintln!("pincer serve: {reason}; draining");
    let drain = Duration::from_secs(ServeConfig::of(&settings).drain_secs);
    let drained = generation.drain(drain).await;
    audit.record(
        actor::SYSTEM,
        &ServeStop {
            reason: reason.to_string(),
            cancelled_turns: drained.cancelled_turns,
        },
    )?;
    if !drained.cut.is_empty() {
        eprintln!(
            "pincer serve: stopped; cut by the drain: {} ({} turn(s) cancelled, their sessions stay valid)",
            drained.cut.join(", "),
            drained.cancelled_turns
        );
    }
    Ok(ExitCode::SUCCESS)
}
