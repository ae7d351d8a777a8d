//! One configured server, connected: started once (stdio in the sandbox,
//! or HTTP), its tool list read and pinned, its calls made with a timeout,
//! restarted (a few times) when it died, and watched for a tool list that
//! changes under pincer's feet.
//!
//! What the agent may use is decided at start: the tools the server listed
//! then, that the allowlist names and whose name and schema are usable.
//! The definitions offered then are the ones held to: a server that later
//! adds tools, removes them or changes a description or a schema (after
//! `notifications/tools/list_changed`, or after a restart) is reported —
//! an `mcp.change` audit entry and a warning — its new tools are not
//! offered in this run, and a tool whose definition changed is refused
//! until pincer starts again with the new definition in front of a person.

use crate::McpError;
use crate::config::{ServerConfig, Transport};
use crate::schema::ArgSchema;
use crate::stdio::{Child, Diag, Launch};
use crate::untrusted::{self, MAX_PAGES, MAX_TOOLS};
use pincer_core::audit::Audit;
use pincer_core::audit::schema::McpChange;
use pincer_core::canonical::{sha256_hex, to_canonical_string};
use pincer_core::policy::Risk;
use pincer_core::text::one_line;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How many times a server that died is started again in one run.
pub const MAX_RESTARTS: u32 = 3;

/// One tool as the server listed it when pincer started, and what pincer
/// made of it.
#[derive(Debug, Clone, Serialize)]
pub struct ListedTool {
    /// The server's name for it (untrusted: shown through
    /// [`pincer_core::text::one_line`]).
    pub name: String,
    /// The name the model sees (`SERVER__TOOL`), when it can carry one.
    pub exposed: Option<String>,
    /// One bounded, terminal-safe line marked with the server.
    pub description: String,
    /// The input schema as the server sent it.
    pub schema: Value,
    pub risk: Risk,
    /// Offered to the agent.
    pub offered: bool,
    /// Why not, when not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_offered: Option<String>,
    /// Hash of what the server said about the tool (name, title,
    /// description, schemas, annotations): a change is a different hash.
    pub fingerprint: String,
}

/// What is known about a started server.
#[derive(Debug, Clone, Serialize)]
pub struct ServerFacts {
    pub name: String,
    pub transport: &'static str,
    /// The protocol version agreed on.
    pub protocol: String,
    /// The server's own name and version (untrusted, one line).
    pub server: String,
    /// From spawning to a tool list, milliseconds.
    pub start_ms: u64,
    /// What every call's audit entry notes (network on, degraded layers).
    pub notes: Vec<String>,
    /// The tool list was longer than pincer reads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<String>,
}

/// A live connection.
struct Connection {
    service: RunningService<RoleClient, Handler>,
    /// The process, for a stdio server.
    child: Option<Child>,
}

impl Connection {
    fn peer(&self) -> Peer<RoleClient> {
        self.service.peer().clone()
    }

    fn closed(&self) -> bool {
        self.service.is_transport_closed()
            || self.child.as_ref().is_some_and(|c| c.diag.exit().is_some())
    }

    fn diag(&self) -> Option<Arc<Diag>> {
        self.child.as_ref().map(|c| c.diag.clone())
    }
}

/// What changed since start, shared with the notification handler.
struct Watch {
    name: String,
    audit: Option<Arc<Audit>>,
    /// Fingerprints of every tool listed at start, by the server's name
    /// (`None` until the start completes).
    pinned: Mutex<Option<BTreeMap<String, String>>>,
    /// A change was announced before the list was pinned: list again once
    /// it is.
    early: std::sync::atomic::AtomicBool,
    /// Tools refused from now on (changed or gone), with why.
    refused: Refusals,
    /// Changes already reported (so one change is one entry).
    reported: Mutex<BTreeSet<String>>,
    timeout: Duration,
}

impl Watch {
    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Compares a fresh listing with the pinned one; records and reports
    /// what is new.
    fn compare(&self, fresh: &[Value], when: &str) {
        let Some(pinned) = Self::lock(&self.pinned).clone() else {
            self.early.store(true, std::sync::atomic::Ordering::SeqCst);
            return;
        };
        let now: BTreeMap<String, String> = fresh
            .iter()
            .filter_map(|t| Some((t.get("name")?.as_str()?.to_string(), fingerprint(t))))
            .collect();
        let mut added = Vec::new();
        let mut removed = Vec::new();
        let mut changed = Vec::new();
        for (name, fp) in &now {
            match pinned.get(name) {
                None => added.push(name.clone()),
                Some(old) if old != fp => changed.push(name.clone()),
                Some(_) => {}
            }
        }
        for name in pinned.keys() {
            if !now.contains_key(name) {
                removed.push(name.clone());
            }
        }
        let mut reported = Self::lock(&self.reported);
        let key = |kind: &str, n: &str| format!("{kind}:{n}");
        added.retain(|n| reported.insert(key("added", n)));
        removed.retain(|n| reported.insert(key("removed", n)));
        changed.retain(|n| reported.insert(key("changed", n)));
        drop(reported);
        if added.is_empty() && removed.is_empty() && changed.is_empty() {
            return;
        }
        {
            let mut refused = Self::lock(&self.refused.0);
            for n in &changed {
                refused.insert(
                    n.clone(),
                    format!(
                        "mcp server `{}` changed the definition of `{}` after pincer started ({when}); it is not used again until pincer restarts with the new definition",
                        self.name,
                        one_line(n, 80)
                    ),
                );
            }
            for n in &removed {
                refused.insert(
                    n.clone(),
                    format!(
                        "mcp server `{}` no longer lists `{}` ({when})",
                        self.name,
                        one_line(n, 80)
                    ),
                );
            }
        }
        let show = |v: &[String]| {
            v.iter()
                .map(|n| format!("`{}`", one_line(n, 80)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut said = Vec::new();
        if !added.is_empty() {
            said.push(format!("added {} (not offered in this run)", show(&added)));
        }
        if !changed.is_empty() {
            said.push(format!("changed {} (refused from now on)", show(&changed)));
        }
        if !removed.is_empty() {
            said.push(format!("removed {}", show(&removed)));
        }
        tracing::warn!(
            "mcp server `{}` changed its tool list {when}: {}",
            self.name,
            said.join("; ")
        );
        if let Some(audit) = &self.audit {
            let entry = McpChange {
                server: self.name.clone(),
                when: when.to_string(),
                added,
                removed,
                changed,
            };
            if let Err(e) = audit.record(pincer_core::actor::SYSTEM, &entry) {
                tracing::warn!("the audit trail refused the mcp.change entry: {e}");
            }
        }
    }
}

/// The tools of one server refused since start (changed or gone), with
/// why: what a tool's assessment reads, without reaching the server.
#[derive(Debug, Clone, Default)]
pub struct Refusals(Arc<Mutex<BTreeMap<String, String>>>);

impl Refusals {
    /// Why calls to `tool` are refused now, if they are.
    pub fn get(&self, tool: &str) -> Option<String> {
        Watch::lock(&self.0).get(tool).cloned()
    }
}

/// The client side's handler: identifies pincer, offers no capability
/// (no sampling, no roots, no elicitation: a server cannot ask pincer's
/// model or person anything), and watches for tool list changes.
struct Handler {
    watch: Arc<Watch>,
}

impl rmcp::ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        // The newest version with the initialize handshake, which every
        // server we test against (the reference servers, the conformance
        // suite) speaks; a server that knows only older ones says so and
        // the handshake settles on its version.
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        info.capabilities = ClientCapabilities::default();
        info.client_info = Implementation::new("pincer", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let watch = self.watch.clone();
        let peer = context.peer.clone();
        // Not inline: the listing's answer arrives on the connection this
        // handler is called from.
        tokio::spawn(relist(watch, peer));
    }
}

/// Lists the tools again after a change was announced, and compares.
async fn relist(watch: Arc<Watch>, peer: Peer<RoleClient>) {
    match tokio::time::timeout(watch.timeout, list_tools(&peer)).await {
        Ok(Ok((tools, _))) => watch.compare(&tools, "during the session"),
        // Going away (pincer stops it): nothing to report.
        Ok(Err(rmcp::ServiceError::TransportClosed)) => {}
        Ok(Err(e)) => tracing::warn!(
            "mcp server `{}` said its tool list changed, and listing it failed: {e}",
            watch.name
        ),
        Err(_) => tracing::warn!(
            "mcp server `{}` said its tool list changed, and did not list it in time",
            watch.name
        ),
    }
}

/// Hash of what a server said about one tool.
fn fingerprint(tool: &Value) -> String {
    sha256_hex(to_canonical_string(tool).as_bytes())
}

/// Every tool the server lists (bounded: [`MAX_PAGES`] pages,
/// [`MAX_TOOLS`] tools), as JSON; the note says when the list was cut.
async fn list_tools(
    peer: &Peer<RoleClient>,
) -> Result<(Vec<Value>, Option<String>), rmcp::ServiceError> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = rmcp::model::PaginatedRequestParams::default().with_cursor(cursor.take());
        let page = peer.list_tools(Some(params)).await?;
        let page = serde_json::to_value(&page).unwrap_or(Value::Null);
        for t in page
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if out.len() == MAX_TOOLS {
                return Ok((
                    out,
                    Some(format!(
                        "the server lists more than {MAX_TOOLS} tools; only the first {MAX_TOOLS} are read"
                    )),
                ));
            }
            out.push(t.clone());
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) if !c.is_empty() => cursor = Some(c.to_string()),
            _ => return Ok((out, None)),
        }
    }
    Ok((
        out,
        Some(format!(
            "the server's tool list has more than {MAX_PAGES} pages; only those are read"
        )),
    ))
}

/// What a call produced.
#[derive(Debug, Clone)]
pub struct CallOutput {
    /// The result as the model reads it (bounded).
    pub text: String,
    /// The server said the call failed (`isError`).
    pub is_error: bool,
    /// For the audit entry: how the call ran (network, a restart...).
    pub notes: Vec<String>,
}

/// A configured server, started.
pub struct Server {
    cfg: ServerConfig,
    launch: Arc<Launch>,
    watch: Arc<Watch>,
    conn: tokio::sync::Mutex<Option<Arc<Connection>>>,
    restarts: std::sync::atomic::AtomicU32,
    tools: Vec<ListedTool>,
    schemas: BTreeMap<String, Arc<ArgSchema>>,
    facts: ServerFacts,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.cfg.name)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Starts `cfg` (within its startup timeout), reads and pins its tool
    /// list. `audit` receives the `mcp.change` entries.
    pub async fn start(
        cfg: ServerConfig,
        launch: Arc<Launch>,
        audit: Option<Arc<Audit>>,
    ) -> Result<Arc<Server>, McpError> {
        let watch = Arc::new(Watch {
            name: cfg.name.clone(),
            audit,
            pinned: Mutex::new(None),
            early: std::sync::atomic::AtomicBool::new(false),
            refused: Refusals::default(),
            reported: Mutex::new(BTreeSet::new()),
            timeout: cfg.timeout,
        });
        let t0 = Instant::now();
        let (conn, listed, truncated) = connect(&cfg, &launch, &watch).await?;
        let start_ms = u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX);
        *Watch::lock(&watch.pinned) = Some(
            listed
                .iter()
                .filter_map(|t| Some((t.get("name")?.as_str()?.to_string(), fingerprint(t))))
                .collect(),
        );
        if watch.early.swap(false, std::sync::atomic::Ordering::SeqCst) {
            tokio::spawn(relist(watch.clone(), conn.peer()));
        }
        let peer_info = conn
            .service
            .peer()
            .peer_info()
            .and_then(|i| serde_json::to_value(&*i).ok())
            .unwrap_or(Value::Null);
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let server_info = peer_info.get("serverInfo").cloned().unwrap_or(Value::Null);
        let facts = ServerFacts {
            name: cfg.name.clone(),
            transport: cfg.transport.as_str(),
            protocol: one_line(&text(&peer_info, "protocolVersion"), 40),
            server: one_line(
                &format!(
                    "{} {}",
                    text(&server_info, "name"),
                    text(&server_info, "version")
                ),
                120,
            ),
            start_ms,
            notes: conn
                .child
                .as_ref()
                .map(|c| c.notes.clone())
                .unwrap_or_default(),
            truncated,
        };
        let (tools, schemas) = judge(&cfg, &listed);
        Ok(Arc::new(Server {
            cfg,
            launch,
            watch,
            conn: tokio::sync::Mutex::new(Some(Arc::new(conn))),
            restarts: std::sync::atomic::AtomicU32::new(0),
            tools,
            schemas,
            facts,
        }))
    }

    pub fn name(&self) -> &str {
        &self.cfg.name
    }

    pub fn config(&self) -> &ServerConfig {
        &self.cfg
    }

    pub fn facts(&self) -> &ServerFacts {
        &self.facts
    }

    /// Every tool the server listed at start.
    pub fn listed(&self) -> &[ListedTool] {
        &self.tools
    }

    /// The listed tool `name` (the server's name for it).
    pub fn tool(&self, name: &str) -> Option<&ListedTool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The compiled input schema of listed tool `name`.
    pub fn schema(&self, name: &str) -> Option<&Arc<ArgSchema>> {
        self.schemas.get(name)
    }

    /// Why calls to `tool` are refused now (it changed or went away since
    /// start), if they are.
    pub fn refused(&self, tool: &str) -> Option<String> {
        self.watch.refused.get(tool)
    }

    /// The live view of the refused tools.
    pub fn refusals(&self) -> Refusals {
        self.watch.refused.clone()
    }

    /// Calls `tool` with `args` (already checked against its schema),
    /// within the configured timeout; a server that died since the last
    /// call is started again first (at most [`MAX_RESTARTS`] times a run).
    /// Dropping the future cancels the call (the server is told).
    pub async fn call(&self, tool: &str, args: Value) -> Result<CallOutput, McpError> {
        let name = &self.cfg.name;
        let mut notes = self.facts.notes.clone();
        let conn = self.connection(&mut notes).await?;
        let arguments = match args {
            Value::Object(m) => m,
            _ => {
                return Err(McpError::Call {
                    server: name.clone(),
                    tool: tool.to_string(),
                    message: "the arguments must be a JSON object".into(),
                });
            }
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let peer = conn.peer();
        let answer = tokio::time::timeout(self.cfg.timeout, peer.call_tool(params)).await;
        let result = match answer {
            Err(_) => {
                return Err(McpError::Timeout {
                    server: name.clone(),
                    tool: tool.to_string(),
                    secs: self.cfg.timeout.as_secs(),
                });
            }
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return Err(self.failed(&conn, tool, e).await),
        };
        let json = serde_json::to_value(&result).unwrap_or(Value::Null);
        let (text, is_error) = untrusted::result(&json);
        Ok(CallOutput {
            text,
            is_error,
            notes,
        })
    }

    /// The live connection, restarting a dead one (and comparing the new
    /// tool list with the pinned one).
    async fn connection(&self, notes: &mut Vec<String>) -> Result<Arc<Connection>, McpError> {
        let mut slot = self.conn.lock().await;
        if let Some(c) = slot.as_ref()
            && !c.closed()
        {
            return Ok(c.clone());
        }
        let why = slot
            .as_ref()
            .and_then(|c| c.diag())
            .map(|d| d.describe())
            .unwrap_or_else(|| "its connection closed".into());
        let n = self.restarts.load(std::sync::atomic::Ordering::Relaxed);
        if n >= MAX_RESTARTS {
            return Err(McpError::Gone {
                server: self.cfg.name.clone(),
                message: format!(
                    "it stopped ({why}) and was already started again {MAX_RESTARTS} times in this run; restart pincer"
                ),
            });
        }
        self.restarts
            .store(n + 1, std::sync::atomic::Ordering::Relaxed);
        *slot = None;
        let (conn, listed, _) = connect(&self.cfg, &self.launch, &self.watch).await?;
        self.watch.compare(&listed, "when it was started again");
        notes.push(format!(
            "mcp server `{}` had stopped ({why}); pincer started it again for this call (restart {} of {MAX_RESTARTS})",
            self.cfg.name,
            n + 1
        ));
        let conn = Arc::new(conn);
        *slot = Some(conn.clone());
        Ok(conn)
    }

    /// A call that failed on the connection: the reason in words.
    async fn failed(&self, conn: &Connection, tool: &str, e: rmcp::ServiceError) -> McpError {
        let name = self.cfg.name.clone();
        let tool = tool.to_string();
        match e {
            rmcp::ServiceError::McpError(data) => McpError::Call {
                server: name,
                tool,
                message: format!(
                    "the server answered with error {}: {}",
                    data.code.0,
                    untrusted::excerpt(&data.message, 400)
                ),
            },
            other => {
                let message = match conn.diag() {
                    Some(d) => {
                        d.wait_exit(Duration::from_secs(1)).await;
                        d.describe()
                    }
                    None => untrusted::excerpt(&other.to_string(), 400),
                };
                McpError::Died {
                    server: name,
                    tool,
                    message: format!(
                        "{message}; the next call starts it again (at most {MAX_RESTARTS} times a run)"
                    ),
                }
            }
        }
    }

    /// Ends the connection: stdin closed (or the HTTP session ended), then
    /// the process is stopped.
    pub async fn shutdown(&self) {
        let conn = self.conn.lock().await.take();
        if let Some(conn) = conn
            && let Ok(mut conn) = Arc::try_unwrap(conn)
        {
            let _ = conn
                .service
                .close_with_timeout(Duration::from_secs(2))
                .await;
            if let Some(child) = &conn.child {
                child.diag.wait_exit(Duration::from_secs(2)).await;
            }
        }
    }
}

/// Starts a connection and reads the tool list, within the startup
/// timeout.
async fn connect(
    cfg: &ServerConfig,
    launch: &Launch,
    watch: &Arc<Watch>,
) -> Result<(Connection, Vec<Value>, Option<String>), McpError> {
    let fail = |message: String| McpError::Start {
        server: cfg.name.clone(),
        message,
    };
    let handler = Handler {
        watch: watch.clone(),
    };
    let started = async {
        match &cfg.transport {
            Transport::Stdio(s) => {
                let (child, transport) = crate::stdio::spawn(launch, cfg, s).await?;
                let diag = child.diag.clone();
                match handler.serve(transport).await {
                    Ok(service) => Ok(Connection {
                        service,
                        child: Some(child),
                    }),
                    Err(e) => {
                        diag.wait_exit(Duration::from_secs(2)).await;
                        Err(fail(format!(
                            "the handshake failed ({}): {}",
                            untrusted::excerpt(&e.to_string(), 200),
                            diag.describe()
                        )))
                    }
                }
            }
            Transport::Http(h) => {
                let transport = crate::http::transport(cfg, h, &launch.vars)?;
                handler
                    .serve(transport)
                    .await
                    .map(|service| Connection {
                        service,
                        child: None,
                    })
                    .map_err(|e| {
                        fail(format!(
                            "the handshake with {} failed: {}",
                            h.url,
                            untrusted::excerpt(&error_chain(&e), 400)
                        ))
                    })
            }
        }
    };
    let within = |what: &str| {
        fail(format!(
            "{what} within {} s (startup_timeout_secs)",
            cfg.startup_timeout.as_secs()
        ))
    };
    let deadline = Instant::now() + cfg.startup_timeout;
    let conn = tokio::time::timeout(cfg.startup_timeout, started)
        .await
        .map_err(|_| within("it did not finish the handshake"))??;
    let left = deadline.saturating_duration_since(Instant::now());
    let (listed, truncated) = match tokio::time::timeout(left, list_tools(&conn.peer())).await {
        Err(_) => return Err(within("it did not list its tools")),
        Ok(Err(e)) => {
            let why = match conn.diag() {
                Some(d) => {
                    d.wait_exit(Duration::from_secs(1)).await;
                    d.describe()
                }
                None => untrusted::excerpt(&error_chain(&e), 400),
            };
            return Err(fail(format!("listing its tools failed: {why}")));
        }
        Ok(Ok(l)) => l,
    };
    Ok((conn, listed, truncated))
}

use pincer_providers::error_chain;

/// What pincer makes of each listed tool: offered or not, and why.
fn judge(
    cfg: &ServerConfig,
    listed: &[Value],
) -> (Vec<ListedTool>, BTreeMap<String, Arc<ArgSchema>>) {
    let mut tools = Vec::new();
    let mut schemas = BTreeMap::new();
    let mut seen = BTreeSet::new();
    for t in listed {
        let Some(name) = t.get("name").and_then(Value::as_str) else {
            continue;
        };
        let schema = t.get("inputSchema").cloned().unwrap_or(Value::Null);
        let exposed = untrusted::exposed_name(&cfg.name, name);
        let compiled = ArgSchema::compile(&schema);
        let not_offered = if !seen.insert(name.to_string()) {
            Some("the server lists it twice".to_string())
        } else if !cfg.allows(name) {
            Some(format!("not in [mcp.servers.{}] tools", cfg.name))
        } else if let Err(e) = &exposed {
            Some(e.clone())
        } else if let Err(e) = &compiled {
            Some(e.clone())
        } else {
            None
        };
        if let Ok(s) = compiled {
            schemas
                .entry(name.to_string())
                .or_insert_with(|| Arc::new(s));
        }
        tools.push(ListedTool {
            name: name.to_string(),
            exposed: exposed.ok(),
            description: untrusted::description(
                &cfg.name,
                t.get("description").and_then(Value::as_str),
            ),
            schema,
            risk: cfg.risk_of(name),
            offered: not_offered.is_none(),
            not_offered,
            fingerprint: fingerprint(t),
        });
    }
    (tools, schemas)
}
