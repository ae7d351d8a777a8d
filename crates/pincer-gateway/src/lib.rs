//! pincer-gateway: the agent over HTTP and WebSocket, for a browser (the
//! embedded web UI) or any client holding a token.
//!
//! It owns the network edge and nothing behind it: every turn runs through
//! [`pincer_runtime::Runtime`] (the same gate, tools, trail and session
//! store as `pincer agent`), every action a person takes goes through
//! [`pincer_runtime::person`], and the status route is
//! [`pincer_runtime::status::report`]. It must not assemble an agent, open
//! a tool's handles, or decide a tool call.
//!
//! What it adds, and where:
//!
//! - [`tokens`]: paired devices' tokens, hashed, each with a role
//!   (`approver` or `chat`); [`pairing`]: six-digit codes that expire and
//!   pair once, and the lockout after 5 failures from an address (20 from
//!   all);
//! - `http`: the checks every request passes — `Host` and `Origin` (no
//!   DNS rebinding, no cross-site WebSocket), the bearer token for `/api/*`,
//!   `/metrics` and `/ws` (loopback clients get no exemption), rate limits,
//!   body limits, security headers;
//! - `api` and `ws`: the routes (`docs/gateway.md` lists them); `chat`: the
//!   open sessions, one writer each, shared by HTTP and WebSocket turns;
//! - approvals: gateway sessions ask a [`pincer_runtime::inbox::ApprovalInbox`],
//!   which only a token with the approver role can answer, recorded as
//!   `token:ID`;
//! - [`metrics`]: `/metrics` in the Prometheus text format;
//! - [`manifest`], [`jcs`], [`keys`]: the agent manifest, signed with
//!   Ed25519 over its RFC 8785 canonical form, with a key kept 0600 in
//!   `PINCER_HOME/keys/`;
//! - `ui`: the web UI, plain HTML, CSS and JavaScript compiled into the
//!   binary.
//!
//! The threat model is in `docs/gateway.md`.

mod api;
mod chat;
pub mod config;
mod http;
pub mod jcs;
pub mod keys;
mod limit;
pub mod manifest;
pub mod metrics;
pub mod pairing;
mod private;
pub mod tokens;
mod ui;
mod ws;

use pincer_core::audit::schema::{GatewayCode, GatewayRevoke};
use pincer_core::home::Home;
use pincer_runtime::Runtime;
use pincer_runtime::inbox::ApprovalInbox;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

pub use pairing::{CODE_TTL, CodeBook, IssuedCode};
pub use tokens::{Role, TokenRecord, TokenStore};

/// The default address: loopback only.
pub const DEFAULT_BIND: &str = "127.0.0.1:18789";

/// The limits the gateway enforces; the defaults are the documented ones.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Pairing attempts per peer address per minute (a burst of this many,
    /// then this rate).
    pub pair_per_minute: u32,
    /// Failed pairing attempts from one address that lock it out.
    pub lockout_after: u32,
    /// Failed pairing attempts from all addresses that lock everyone out.
    pub lockout_overall_after: u32,
    /// How long pairing stays locked.
    pub lockout_for: Duration,
    /// Authenticated requests (and WebSocket turns) per token per minute.
    pub api_per_minute: u32,
    /// The largest request body.
    pub max_body_bytes: usize,
    /// The largest WebSocket message.
    pub max_ws_message_bytes: usize,
    /// The longest chat message, in characters.
    pub max_message_chars: usize,
    /// Sessions held open at once (idle ones are closed first).
    pub max_open_sessions: usize,
    /// How long a pairing code is valid.
    pub code_ttl: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            pair_per_minute: 10,
            lockout_after: 5,
            lockout_overall_after: 20,
            lockout_for: Duration::from_secs(5 * 60),
            api_per_minute: 600,
            max_body_bytes: 64 * 1024,
            max_ws_message_bytes: 64 * 1024,
            max_message_chars: 32 * 1024,
            max_open_sessions: 64,
            code_ttl: CODE_TTL,
        }
    }
}

/// How the gateway is started.
#[derive(Debug, Clone)]
pub struct Options {
    pub bind: SocketAddr,
    /// A non-loopback bind is refused without it.
    pub allow_public: bool,
    /// Origins (`https://host[:port]`) a browser may come from besides the
    /// bind address itself, e.g. a reverse proxy's public address. The
    /// first one is the address the manifest advertises.
    pub origins: Vec<String>,
    /// Session key spaces that belong to other front-ends of the same
    /// process (`pincer serve`'s `telegram`, `cron`…): a turn on `NAME` or
    /// `NAME-…` is refused, so the gateway never competes with them for a
    /// session's one writer. Reading those sessions stays allowed.
    pub reserved_sessions: Vec<String>,
    /// Called as each turn starts; what it returns is held until the turn
    /// ends (`pincer serve` counts the turns a drain cancels this way).
    pub on_turn: Option<TurnHook>,
    pub limits: Limits,
}

/// See [`Options::on_turn`].
#[derive(Clone)]
pub struct TurnHook(pub Arc<dyn Fn() -> Box<dyn std::any::Any + Send> + Send + Sync>);

impl std::fmt::Debug for TurnHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TurnHook")
    }
}

impl Options {
    pub fn new(bind: SocketAddr) -> Options {
        Options {
            bind,
            allow_public: false,
            origins: Vec::new(),
            reserved_sessions: Vec::new(),
            on_turn: None,
            limits: Limits::default(),
        }
    }
}

/// Why the gateway cannot start (or a command cannot run).
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error(
        "--bind {addr} is not a loopback address: the gateway would be reachable from the network. Pass --allow-public if you mean it (and put TLS in front: the gateway speaks plain HTTP)"
    )]
    PublicBind { addr: SocketAddr },
    #[error("--origin `{origin}`: {reason} (e.g. https://pincer.example.org)")]
    BadOrigin {
        origin: String,
        reason: &'static str,
    },
    #[error(transparent)]
    Key(#[from] keys::KeyError),
    #[error(transparent)]
    Tokens(#[from] tokens::TokenError),
    #[error(transparent)]
    Audit(#[from] pincer_core::audit::AuditError),
    #[error(transparent)]
    Runtime(#[from] pincer_runtime::RuntimeError),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// Checks the bind address: loopback is fine; anything else needs
/// `allow_public` and comes back with a warning to print.
pub fn check_bind(addr: SocketAddr, allow_public: bool) -> Result<Option<String>, GatewayError> {
    if addr.ip().is_loopback() {
        return Ok(None);
    }
    if !allow_public {
        return Err(GatewayError::PublicBind { addr });
    }
    Ok(Some(format!(
        "the gateway listens on {addr}, reachable from the network: every request still needs a paired token, \
         but the traffic is plain HTTP — put a TLS reverse proxy in front and pass its address with --origin"
    )))
}

/// `scheme://host[:port]`, lowercased, no path.
pub(crate) fn parse_origin(o: &str) -> Result<String, GatewayError> {
    let bad = |reason| GatewayError::BadOrigin {
        origin: o.to_string(),
        reason,
    };
    let lower = o.trim_end_matches('/').to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"))
        .ok_or_else(|| bad("an origin starts with https:// or http://"))?;
    if rest.is_empty() || rest.contains(['/', '?', '#', '@', ' ']) {
        return Err(bad("an origin is a scheme and a host[:port], with no path"));
    }
    Ok(lower)
}

/// The host part (`host[:port]`) of a parsed origin.
fn origin_host(o: &str) -> &str {
    o.split_once("://").map_or(o, |(_, h)| h)
}

/// Everything the handlers share.
pub(crate) struct State {
    runtime: Arc<Runtime>,
    inbox: Arc<ApprovalInbox>,
    tokens: TokenStore,
    codes: CodeBook,
    lockout: pairing::Lockout,
    pair_limit: limit::RateLimiter<IpAddr>,
    api_limit: limit::RateLimiter<String>,
    sessions: chat::Sessions,
    metrics: metrics::Metrics,
    /// The signed manifest, serialised once.
    manifest: String,
    /// `Host` values accepted; None: any (an unspecified bind address).
    hosts: Option<Vec<String>>,
    /// Origins accepted besides `http://` + the request's own host.
    origins: Vec<String>,
    /// See [`Options::reserved_sessions`].
    reserved_sessions: Vec<String>,
    on_turn: Option<TurnHook>,
    limits: Limits,
    /// Where the gateway is in its life; see [`Phase`].
    phase: tokio::sync::watch::Sender<Phase>,
    /// WebSocket connections open now (a stop waits for them to close).
    ws_live: tokio::sync::watch::Sender<usize>,
}

/// Where a gateway is in its life, as every turn and WebSocket sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Serving,
    /// Asked to stop: no new turn starts; a turn in flight finishes, then
    /// its WebSocket is closed (1001).
    Draining,
    /// The stop was cut short (the serve future was dropped): turns in
    /// flight are cancelled, their sessions stay valid.
    Cut,
}

/// Cuts whatever is still running when the serve future is dropped.
struct CutOnDrop(Arc<State>);

impl Drop for CutOnDrop {
    fn drop(&mut self) {
        self.0.phase.send_replace(Phase::Cut);
    }
}

/// A gateway ready to serve.
pub struct Gateway {
    state: Arc<State>,
    key_generated: bool,
    public_key: String,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("public_key", &self.public_key)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// Builds the gateway over `runtime`: checks the bind, opens the token
    /// store and the pairing codes, loads (or first generates) the signing
    /// key — refusing loose permissions — and signs the manifest.
    pub fn new(runtime: impl Into<Arc<Runtime>>, opts: Options) -> Result<Gateway, GatewayError> {
        let runtime: Arc<Runtime> = runtime.into();
        check_bind(opts.bind, opts.allow_public)?;
        let origins = opts
            .origins
            .iter()
            .map(|o| parse_origin(o))
            .collect::<Result<Vec<_>, _>>()?;
        let home = runtime.home().clone();
        let tokens = TokenStore::open(&home.gateway_dir())?;
        let codes = CodeBook::open(&home.gateway_dir())?;
        let (key, key_generated) = keys::load_or_generate(&home.keys_dir())?;
        let base_url = origins
            .first()
            .cloned()
            .unwrap_or_else(|| format!("http://{}", opts.bind));
        let manifest = manifest::signed(
            &key,
            &manifest::ManifestInfo {
                name: runtime.settings().core.agent.agent_id.clone(),
                base_url,
            },
        );
        let public_key = keys::public_hex(&key);
        drop(key);
        let port = opts.bind.port();
        let ip = opts.bind.ip();
        let mut hosts = if ip.is_unspecified() {
            None
        } else if ip.is_loopback() {
            Some(vec![
                format!("127.0.0.1:{port}"),
                format!("localhost:{port}"),
                format!("[::1]:{port}"),
            ])
        } else {
            Some(vec![opts.bind.to_string()])
        };
        if let Some(h) = hosts.as_mut() {
            h.push(opts.bind.to_string());
            h.extend(origins.iter().map(|o| origin_host(o).to_string()));
        }
        let l = &opts.limits;
        let state = State {
            inbox: runtime.inbox(),
            tokens,
            codes,
            lockout: pairing::Lockout::new(l.lockout_after, l.lockout_overall_after, l.lockout_for),
            pair_limit: limit::RateLimiter::new(l.pair_per_minute, 4096),
            api_limit: limit::RateLimiter::new(l.api_per_minute, 4096),
            sessions: chat::Sessions::new(l.max_open_sessions),
            metrics: metrics::Metrics::default(),
            manifest: manifest.to_string(),
            hosts,
            origins,
            reserved_sessions: opts.reserved_sessions.clone(),
            on_turn: opts.on_turn.clone(),
            limits: opts.limits.clone(),
            runtime,
            phase: tokio::sync::watch::Sender::new(Phase::Serving),
            ws_live: tokio::sync::watch::Sender::new(0),
        };
        Ok(Gateway {
            state: Arc::new(state),
            key_generated,
            public_key,
        })
    }

    /// True when the signing key was generated by this start.
    pub fn key_generated(&self) -> bool {
        self.key_generated
    }

    /// The manifest's public key, hex.
    pub fn public_key(&self) -> &str {
        &self.public_key
    }

    /// Issues a pairing code for an approver (the person at the gateway's
    /// terminal), recorded as `gateway.code`.
    pub fn startup_code(&self) -> Result<IssuedCode, GatewayError> {
        issue_code(
            self.state.runtime.home(),
            Role::Approver,
            self.state.limits.code_ttl,
            "gateway start",
        )
    }

    /// The routes, with every check in front of them.
    pub fn router(&self) -> axum::Router {
        http::router(self.state.clone())
    }

    /// Serves on `listener` until `shutdown` completes, then drains: the
    /// listener closes, no new turn starts, HTTP requests in flight are
    /// answered, and each WebSocket is closed (1001) once its turn in
    /// flight has finished; this returns when all of them are done.
    /// Dropping the future before that cancels the turns still running
    /// (their sessions stay valid, as when a client goes away).
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        use axum::serve::ListenerExt as _;
        let _cut = CutOnDrop(self.state.clone());
        let state = self.state.clone();
        let draining = async move {
            shutdown.await;
            state.phase.send_replace(Phase::Draining);
        };
        let app = self
            .router()
            .into_make_service_with_connect_info::<SocketAddr>();
        // A turn streams as many small WebSocket messages: with Nagle's
        // algorithm each one after the first waits for the client's
        // delayed ACK (40 ms on Linux), most of a turn's latency.
        let listener = listener.tap_io(|tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::warn!(error = %e, "cannot set TCP_NODELAY: streamed events may be delayed");
            }
        });
        axum::serve(listener, app)
            .with_graceful_shutdown(draining)
            .await?;
        // Upgraded connections are not the server's any more: wait for
        // them (each closes once its turn in flight is done).
        let mut live = self.state.ws_live.subscribe();
        let _ = live.wait_for(|n| *n == 0).await;
        Ok(())
    }
}

/// Issues a pairing code for `role` in `home` (for `pincer pair` beside a
/// running gateway, or the gateway's own start), recorded as
/// `gateway.code` by `human:cli` — never the code itself.
pub fn issue_code(
    home: &Home,
    role: Role,
    ttl: Duration,
    via: &str,
) -> Result<IssuedCode, GatewayError> {
    let audit = pincer_runtime::open_audit(home)?;
    let book = CodeBook::open(&home.gateway_dir())?;
    let code = book.issue(role, ttl)?;
    audit.record(
        pincer_core::actor::HUMAN_CLI,
        &GatewayCode {
            role: role.as_str().to_string(),
            expires: code.expires,
            via: via.to_string(),
        },
    )?;
    Ok(code)
}

/// Revokes token `id` of `home` as `principal`, recorded first.
pub fn revoke_token(home: &Home, principal: &str, id: &str) -> Result<TokenRecord, GatewayError> {
    tokens::validate_id(id)?;
    let store = TokenStore::open(&home.gateway_dir())?;
    let audit = pincer_runtime::open_audit(home)?;
    // Known first, so the entry records a revocation that happens.
    if !store.list()?.iter().any(|t| t.id == id) {
        return Err(tokens::TokenError::Unknown { id: id.to_string() }.into());
    }
    audit.record(
        principal,
        &GatewayRevoke {
            token: id.to_string(),
        },
    )?;
    Ok(store.revoke(id)?)
}
