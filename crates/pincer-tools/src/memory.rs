//! The memory tools (ME1, PO2): `memory_search` (low risk: it only
//! reads pages) and `memory_write` (medium: it adds a page). Both reach the
//! memory store only through the gate's permit, like every tool; the store
//! validates ids, so a write can never land outside `memory/pages/`.

use crate::args::{Args, object_schema, respond};
use pincer_core::gate::{Gated, Permit};
use pincer_core::policy::Risk;
use pincer_core::provider::BoxFuture;
use pincer_core::tool::{Assessment, Tool, ToolError};
use pincer_memory::{MemoryIndex, NewPage};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The memory directory, its index opened on first use (a session that
/// never touches memory never opens SQLite), shared by the memory tools.
#[derive(Debug)]
pub struct LazyMemory {
    dir: PathBuf,
    index: Mutex<Option<MemoryIndex>>,
}

impl LazyMemory {
    pub fn new(memory_dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: memory_dir.into(),
            index: Mutex::new(None),
        }
    }
}

pub type SharedMemory = Arc<LazyMemory>;

async fn with_memory<T, F>(mem: SharedMemory, f: F) -> Result<T, ToolError>
where
    F: FnOnce(&mut MemoryIndex) -> Result<T, ToolError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        let mut guard = mem
            .index
            .lock()
            .map_err(|_| ToolError::Fatal("the memory index lock is poisoned".into()))?;
        if guard.is_none() {
            // Not fatal: the index is disposable, and the turn goes on.
            let index = MemoryIndex::open(&mem.dir)
                .map_err(|e| respond(format!("the memory index cannot be opened: {e}")))?;
            *guard = Some(index);
        }
        match guard.as_mut() {
            Some(index) => f(index),
            None => Err(ToolError::Fatal("memory did not open".into())),
        }
    })
    .await
    .map_err(|e| ToolError::Fatal(format!("memory tool task failed: {e}")))?
}

const SEARCH_PARAMS: &[&str] = &["query", "limit"];
const SEARCH_MAX: u64 = 20;

/// `memory_search {query, limit?}`.
#[derive(Debug)]
pub struct MemorySearch {
    mem: Gated<SharedMemory>,
}

impl MemorySearch {
    pub fn new(mem: SharedMemory) -> Self {
        Self {
            mem: Gated::new(mem),
        }
    }
}

impl Tool for MemorySearch {
    fn name(&self) -> &str {
        "memory_search"
    }

    fn description(&self) -> &str {
        "Search your long-term memory (markdown pages) by words. Returns the best matching pages \
         with their id, title and a snippet. Pinned facts are already in your instructions."
    }

    fn parameters_schema(&self) -> Value {
        object_schema(
            &[
                (
                    "query",
                    json!({"type": "string", "description": "Words to look for"}),
                ),
                (
                    "limit",
                    json!({"type": "integer", "minimum": 1, "maximum": SEARCH_MAX, "description": "Most pages to return (default 5)"}),
                ),
            ],
            &["query"],
        )
    }

    fn assess(&self, _args: &Value) -> Assessment {
        Assessment::new(
            Risk::Low,
            "searching memory only reads pages (low risk, PO2)",
        )
    }

    fn execute<'a>(&'a self, permit: Permit<'a>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let a = Args::parse("memory_search", permit.args(), SEARCH_PARAMS)?;
            let query = a.req_str("query")?.to_string();
            let limit = match a.opt_u64("limit")? {
                None => 5,
                Some(n @ 1..=SEARCH_MAX) => n,
                Some(_) => {
                    return Err(a.error(format!("argument `limit` must be 1 to {SEARCH_MAX}")));
                }
            };
            let mem = permit.open(&self.mem).clone();
            with_memory(mem, move |m| {
                let r = m
                    .search(&query, usize::try_from(limit).unwrap_or(5))
                    .map_err(|e| respond(format!("memory_search: {e}")))?;
                let mut out = format!(
                    "{} page(s) found ({} examined, {} search)\n",
                    r.hits.len(),
                    r.examined,
                    r.backend
                );
                for h in &r.hits {
                    out.push_str(&format!("- `{}` {}: {}\n", h.id, h.title, h.snippet));
                }
                for w in &r.warnings {
                    out.push_str(&format!("(warning: {w})\n"));
                }
                Ok(out)
            })
            .await
        })
    }
}

const WRITE_PARAMS: &[&str] = &["title", "body", "tags"];

/// `memory_write {title, body, tags?}`: a new page, never pinned (pinning a
/// fact into every future prompt is for a person: `pincer remember`).
#[derive(Debug)]
pub struct MemoryWrite {
    mem: Gated<SharedMemory>,
    source: String,
}

impl MemoryWrite {
    /// `agent_id` becomes the page's `source` (`agent:<id>`).
    pub fn new(mem: SharedMemory, agent_id: &str) -> Self {
        Self {
            mem: Gated::new(mem),
            source: format!("agent:{agent_id}"),
        }
    }
}

impl Tool for MemoryWrite {
    fn name(&self) -> &str {
        "memory_write"
    }

    fn description(&self) -> &str {
        "Save something worth remembering across sessions as a new memory page (markdown). \
         `tags` are lowercase words. Pages are plain files a person can read and edit."
    }

    fn parameters_schema(&self) -> Value {
        object_schema(
            &[
                (
                    "title",
                    json!({"type": "string", "description": "One line"}),
                ),
                ("body", json!({"type": "string", "description": "Markdown"})),
                (
                    "tags",
                    json!({"type": "array", "items": {"type": "string"}, "description": "Lowercase words"}),
                ),
            ],
            &["title", "body"],
        )
    }

    fn assess(&self, _args: &Value) -> Assessment {
        Assessment::new(
            Risk::Medium,
            "writing memory changes what future sessions see (medium risk, PO2)",
        )
    }

    fn execute<'a>(&'a self, permit: Permit<'a>) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let a = Args::parse("memory_write", permit.args(), WRITE_PARAMS)?;
            let new = NewPage {
                id: None,
                title: a.req_str("title")?.to_string(),
                body: a.req_str("body")?.to_string(),
                tags: a
                    .opt_str_array("tags")?
                    .unwrap_or_default()
                    .into_iter()
                    .map(str::to_string)
                    .collect(),
                source: self.source.clone(),
                pinned: false,
            };
            // Only the page files: a write never waits on (or fails with)
            // the disposable index.
            let dir = permit.open(&self.mem).dir.clone();
            tokio::task::spawn_blocking(move || {
                let page = pincer_memory::PageStore::open(dir)
                    .and_then(|store| store.write(new))
                    .map_err(|e| respond(format!("memory_write: {e}")))?;
                Ok(format!("saved memory page `{}`", page.meta.id))
            })
            .await
            .map_err(|e| ToolError::Fatal(format!("memory tool task failed: {e}")))?
        })
    }
}
