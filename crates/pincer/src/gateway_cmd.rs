//! `pincer gateway`, `pincer pair`, `pincer tokens list|revoke`, `pincer
//! keys generate|show`: flags in, `pincer-gateway` does the work, text or
//! JSON out; and [`service`], the same gateway as a service of `pincer
//! serve` (`[gateway]` in the config). Behind the `gateway` feature.

use crate::Ctx;
use anyhow::{Context, Result};
use pincer_core::actor::HUMAN_CLI;
use pincer_core::text::terminal_safe;
use pincer_gateway::config::GatewayConfig;
use pincer_gateway::{CODE_TTL, Gateway, IssuedCode, Options, Role, TokenStore, keys};
use pincer_runtime::{Runtime, RuntimeOptions};
use pincer_serve::{Service, ServiceCtx, ServiceError};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(clap::Args, Debug)]
pub struct GatewayArgs {
    /// Where to listen. Anything but loopback needs --allow-public.
    #[arg(long, value_name = "ADDR:PORT", default_value = pincer_gateway::DEFAULT_BIND)]
    bind: SocketAddr,
    /// Allow a non-loopback --bind (the gateway speaks plain HTTP: put a
    /// TLS reverse proxy in front).
    #[arg(long)]
    allow_public: bool,
    /// An origin browsers reach the gateway at besides --bind (a reverse
    /// proxy's https://host); repeatable. The first is the address the
    /// manifest advertises.
    #[arg(long, value_name = "URL")]
    origin: Vec<String>,
    /// Use only this configured provider.
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
    /// The directory the tools may touch.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
}

#[derive(clap::Subcommand, Debug)]
pub enum TokensCmd {
    /// The paired devices' tokens (ids and roles; secrets are never stored).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token: the device must pair again.
    Revoke {
        /// The id `tokens list` shows.
        id: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(clap::Subcommand, Debug)]
pub enum KeysCmd {
    /// Create the agent's Ed25519 signing key (never over an existing one).
    Generate {
        #[arg(long)]
        json: bool,
    },
    /// The public key, the agent URN it gives, and the key file.
    Show {
        #[arg(long)]
        json: bool,
    },
}

fn code_lines(code: &IssuedCode) -> (String, String) {
    (
        format!("pairing code: {}", code.code),
        format!(
            "  ({} role; single use; expires {} (in {} min); `pincer pair` makes another)",
            code.role.as_str(),
            code.expires,
            CODE_TTL.as_secs() / 60
        ),
    )
}

pub fn gateway(ctx: &Ctx, args: GatewayArgs) -> Result<ExitCode> {
    // Refuse a public bind before anything starts.
    if let Some(w) = pincer_gateway::check_bind(args.bind, args.allow_public)? {
        eprintln!("warning: {w}");
    }
    if let Err(e) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        eprintln!(
            "warning: cannot make pincer non-dumpable ({e}); other processes of this user can read its environment, API keys included"
        );
    }
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 4);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = rt.block_on(async {
        let runtime = Runtime::start(
            ctx.home.clone(),
            ctx.settings.clone(),
            ctx.env.clone(),
            RuntimeOptions {
                provider: args.provider.clone(),
                workspace: args.workspace.clone(),
            },
        )
        .await?;
        if !crate::quiet() {
            eprintln!("provider: {}", runtime.provider_choice().how);
        }
        for w in runtime.warnings() {
            eprintln!("warning: {}", terminal_safe(w));
        }
        let listener = tokio::net::TcpListener::bind(args.bind)
            .await
            .with_context(|| format!("cannot listen on {}", args.bind))?;
        // The address actually bound (port 0 picks one): the Host checks
        // and the manifest name it.
        let addr = listener.local_addr()?;
        let mut opts = Options::new(addr);
        opts.allow_public = args.allow_public;
        opts.origins = args.origin.clone();
        let gw = Gateway::new(runtime, opts)?;
        announce(&gw, &ctx.home, addr, true)?;
        gw.serve(listener, shutdown_signal())
            .await
            .context("the gateway stopped")?;
        eprintln!("gateway stopped");
        anyhow::Ok(())
    });
    // A turn may still be waiting on a blocking task: do not wait for it.
    rt.shutdown_background();
    result.map(|()| ExitCode::SUCCESS)
}

/// Prints the address, and with `code` a fresh approver pairing code, as
/// `pincer gateway` does on its owner's terminal. Under `pincer serve`
/// stdout is the journal, which other people may read (the `adm` group, a
/// log shipper): there no code is printed, and `pincer pair` gives one to
/// whoever runs it.
fn announce(
    gw: &Gateway,
    home: &pincer_core::home::Home,
    addr: SocketAddr,
    code: bool,
) -> Result<()> {
    if gw.key_generated() {
        eprintln!(
            "generated the agent's signing key in {} (public key {})",
            home.keys_dir().display(),
            gw.public_key()
        );
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "pincer gateway on http://{addr} (web UI, /api, /ws)")?;
    if !code {
        writeln!(
            out,
            "  pair a device with `pincer pair` (`--approver` for one that answers approvals)"
        )?;
        out.flush()?;
        return Ok(());
    }
    let code = gw.startup_code()?;
    let (line, note) = code_lines(&code);
    writeln!(out, "{line}")?;
    out.flush()?;
    drop(out);
    eprintln!("{note}");
    Ok(())
}

/// The gateway as a service of `pincer serve`, over the daemon's runtime
/// (so a reload gives its turns the new policy). Turns on the session key
/// spaces `reserved` (the other services' names: `telegram-…`, `cron-…`)
/// are refused, so no session ever has two front-ends competing to write
/// it. A bind that fails (the port in use) is a failure of this service
/// alone, retried with backoff; SIGTERM drains it like `pincer gateway`.
pub fn service(cfg: GatewayConfig, reserved: Vec<String>) -> Arc<dyn Service> {
    let cfg = Arc::new(cfg);
    let reserved = Arc::new(reserved);
    pincer_serve::service::from_fn("gateway", move |ctx: ServiceCtx| {
        let cfg = cfg.clone();
        let reserved = reserved.clone();
        async move { run_service(ctx, &cfg, &reserved).await }
    })
}

async fn run_service(
    ctx: ServiceCtx,
    cfg: &GatewayConfig,
    reserved: &[String],
) -> Result<(), ServiceError> {
    let fail = |e: &dyn std::fmt::Display| ServiceError::new(e.to_string());
    let listener = tokio::net::TcpListener::bind(cfg.bind)
        .await
        .map_err(|e| ServiceError::new(format!("cannot listen on {}: {e}", cfg.bind)))?;
    let addr = listener.local_addr().map_err(|e| fail(&e))?;
    let mut opts = Options::new(addr);
    opts.allow_public = cfg.allow_public;
    opts.origins = cfg.origins.clone();
    opts.reserved_sessions = reserved.to_vec();
    let turns = ctx.turns.clone();
    opts.on_turn = Some(pincer_gateway::TurnHook(Arc::new(move || {
        Box::new(turns.enter())
    })));
    let gw = Gateway::new(ctx.runtime.clone(), opts).map_err(|e| fail(&e))?;
    announce(&gw, ctx.runtime.home(), addr, false).map_err(|e| fail(&format!("{e:#}")))?;
    ctx.status.running(format!("on http://{addr}"));
    let mut shutdown = ctx.shutdown.clone();
    gw.serve(listener, async move { shutdown.wait().await })
        .await
        .map_err(|e| ServiceError::new(format!("the gateway on {addr} stopped: {e}")))?;
    if ctx.shutdown.is_set() {
        Ok(())
    } else {
        Err(ServiceError::new(format!(
            "the gateway on {addr} stopped by itself"
        )))
    }
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
}

pub fn pair(ctx: &Ctx, approver: bool, json: bool) -> Result<ExitCode> {
    let role = if approver { Role::Approver } else { Role::Chat };
    let code = pincer_gateway::issue_code(&ctx.home, role, CODE_TTL, "pincer pair")?;
    if json {
        println!(
            "{}",
            serde_json::json!({
                "code": code.code,
                "role": role.as_str(),
                "expires": code.expires,
            })
        );
    } else {
        let (line, note) = code_lines(&code);
        println!("{line}");
        eprintln!("{note}");
    }
    Ok(ExitCode::SUCCESS)
}

pub fn tokens(ctx: &Ctx, cmd: TokensCmd) -> Result<ExitCode> {
    match cmd {
        TokensCmd::List { json } => {
            let store = TokenStore::open(&ctx.home.gateway_dir())?;
            let list = store.list()?;
            if json {
                let rows: Vec<_> = list
                    .iter()
                    .map(|t| {
                        serde_json::json!({
                            "id": t.id,
                            "role": t.role.as_str(),
                            "created": t.created,
                            "paired_from": t.paired_from,
                        })
                    })
                    .collect();
                println!("{}", serde_json::json!({ "tokens": rows }));
            } else if list.is_empty() {
                println!("no paired devices");
            } else {
                for t in &list {
                    println!(
                        "{}  {:<8}  paired {} from {}",
                        t.id,
                        t.role.as_str(),
                        t.created,
                        terminal_safe(&t.paired_from)
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        TokensCmd::Revoke { id, json } => {
            let t = pincer_gateway::revoke_token(&ctx.home, HUMAN_CLI, &id)?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({"revoked": t.id, "role": t.role.as_str()})
                );
            } else {
                println!("revoked {} ({})", t.id, t.role.as_str());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

pub fn keys(ctx: &Ctx, cmd: KeysCmd) -> Result<ExitCode> {
    let dir = ctx.home.keys_dir();
    let (key, json) = match cmd {
        KeysCmd::Generate { json } => (keys::generate(&dir)?, json),
        KeysCmd::Show { json } => (keys::load(&dir)?, json),
    };
    let public = key.verifying_key();
    let urn = pincer_gateway::manifest::urn(&public);
    let path = keys::key_path(&dir);
    let hex = keys::public_hex(&key);
    drop(key);
    if json {
        println!(
            "{}",
            serde_json::json!({"public_key": hex, "urn": urn, "file": path, "alg": "ed25519"})
        );
    } else {
        println!("public key: {hex} (ed25519)");
        println!("urn:        {urn}");
        println!("file:       {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
