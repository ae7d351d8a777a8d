//! The SQLite FTS5 backend of [`crate::index`]: schema, sync, query. The
//! module doc of `index` describes the algorithm; this is its code.

use crate::error::MemoryError;
use crate::index::{Hit, RACY_NS, SyncReport};
use crate::page::{PageStore, Problem, check_file_meta, parse_page};
use crate::query::Query;
use crate::scan::excluded;
use pincer_core::canonical::sha256_hex;
use rusqlite::{Connection, OptionalExtension, params};
use std::cell::Cell;
use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Bump when the schema changes: an index with another version is deleted
/// and rebuilt.
pub(crate) const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE pages(
    rowid INTEGER PRIMARY KEY,
    file TEXT NOT NULL UNIQUE,      -- file name in pages/
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    checked_ns INTEGER NOT NULL,    -- start of the sync that last read or stat-matched it
    sha256 TEXT NOT NULL,           -- '' when the file was refused unread
    error TEXT,                     -- why the page is not indexed; NULL when it is
    id TEXT UNIQUE,
    title TEXT,
    tags TEXT,                      -- space-separated
    pinned INTEGER,
    created INTEGER,                -- ms since the epoch
    updated INTEGER
);
CREATE VIRTUAL TABLE pages_fts USING fts5(
    title, tags, body,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
";

/// bm25 column weights: title, tags, body.
const RANK: &str = "bm25(pages_fts, 10.0, 5.0, 1.0)";

#[derive(Debug)]
pub(crate) struct FtsIndex {
    path: PathBuf,
    conn: Connection,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    size: i64,
    mtime_ns: i64,
    ino: i64,
}

struct Row {
    rowid: i64,
    stat: Stat,
    checked_ns: i64,
    sha256: String,
    error: Option<String>,
}

fn db_err(path: &Path) -> impl Fn(rusqlite::Error) -> MemoryError + '_ {
    move |e| MemoryError::Index {
        path: path.to_path_buf(),
        reason: e.to_string(),
    }
}

impl FtsIndex {
    /// Opens (or creates) the index; a mismatched or unreadable one is
    /// deleted and recreated, with a warning.
    pub(crate) fn open(path: &Path) -> Result<(Self, Vec<String>), MemoryError> {
        match try_open(path) {
            Ok(conn) => Ok((
                Self {
                    path: path.to_path_buf(),
                    conn,
                },
                Vec::new(),
            )),
            Err(why) => {
                delete_files(path)?;
                let conn = try_open(path).map_err(|reason| MemoryError::Index {
                    path: path.to_path_buf(),
                    reason,
                })?;
                Ok((
                    Self {
                        path: path.to_path_buf(),
                        conn,
                    },
                    vec![format!(
                        "memory index {} {why}; deleted it, rebuilding from the pages",
                        path.display()
                    )],
                ))
            }
        }
    }

    pub(crate) fn rebuild(&mut self, store: &PageStore) -> Result<SyncReport, MemoryError> {
        // Swap in a throwaway in-memory connection so the file is closed
        // before it is deleted.
        let mem = Connection::open_in_memory().map_err(db_err(&self.path))?;
        drop(std::mem::replace(&mut self.conn, mem));
        delete_files(&self.path)?;
        self.conn = try_open(&self.path).map_err(|reason| MemoryError::Index {
            path: self.path.clone(),
            reason,
        })?;
        self.sync_once(store, &Cell::new(false))
    }

    /// Syncs; an index found damaged on the way (corrupt file, missing
    /// table) is deleted and rebuilt from the pages, with a warning. Other
    /// SQLite errors (a lock held too long by another process) are returned:
    /// deleting an index someone else is writing would not fix them.
    pub(crate) fn sync(&mut self, store: &PageStore) -> Result<SyncReport, MemoryError> {
        let damaged = Cell::new(false);
        match self.sync_once(store, &damaged) {
            Err(MemoryError::Index { reason, .. }) if damaged.get() => {
                let mut r = self.rebuild(store)?;
                r.warnings.insert(
                    0,
                    format!(
                        "memory index {} is damaged ({reason}); deleted it and rebuilt it from the pages",
                        self.path.display()
                    ),
                );
                Ok(r)
            }
            r => r,
        }
    }

    fn sync_once(
        &mut self,
        store: &PageStore,
        damaged: &Cell<bool>,
    ) -> Result<SyncReport, MemoryError> {
        let files = store.page_entries(true)?;
        let now_ns = now_ns();
        let path = self.path.clone();
        let err = |e: rusqlite::Error| {
            if is_damage(&e) {
                damaged.set(true);
            }
            db_err(&path)(e)
        };
        let tx = self.conn.transaction().map_err(&err)?;
        let mut known: HashMap<String, Row> = HashMap::new();
        {
            let mut st = tx
                .prepare_cached(
                    "SELECT rowid, file, size, mtime_ns, ino, checked_ns, sha256, error FROM pages",
                )
                .map_err(&err)?;
            let rows = st
                .query_map([], |r| {
                    Ok((
                        r.get::<_, String>(1)?,
                        Row {
                            rowid: r.get(0)?,
                            stat: Stat {
                                size: r.get(2)?,
                                mtime_ns: r.get(3)?,
                                ino: r.get(4)?,
                            },
                            checked_ns: r.get(5)?,
                            sha256: r.get(6)?,
                            error: r.get(7)?,
                        },
                    ))
                })
                .map_err(&err)?;
            for row in rows {
                let (file, row) = row.map_err(&err)?;
                known.insert(file, row);
            }
        }

        let mut report = SyncReport::default();
        for (file_path, md) in files {
            let file_path = &file_path;
            let name = file_path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let row = known.remove(&name);
            let md = match md.unwrap_or_else(|| fs::symlink_metadata(file_path)) {
                Ok(md) => md,
                // Deleted since the listing: treat as gone.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if let Some(r) = row {
                        delete_row(&tx, r.rowid).map_err(&err)?;
                        report.removed += 1;
                    }
                    continue;
                }
                Err(e) => return Err(MemoryError::io(file_path, e)),
            };
            report.examined += 1;
            let stat = Stat {
                size: i64::try_from(md.len()).unwrap_or(i64::MAX),
                mtime_ns: md
                    .mtime()
                    .saturating_mul(1_000_000_000)
                    .saturating_add(md.mtime_nsec()),
                ino: i64::try_from(md.ino()).unwrap_or(i64::MAX),
            };
            if let Some(r) = &row
                && r.stat == stat
                && r.stat.mtime_ns.saturating_add(RACY_NS) <= r.checked_ns
            {
                if let Some(e) = &r.error {
                    report.warnings.push(e.clone());
                }
                continue;
            }

            // Changed (or racy): read and hash.
            let (sha, parsed) = match check_file_meta(file_path, &md) {
                Err(e) => (String::new(), Err(e)),
                Ok(()) => match fs::read(file_path) {
                    Ok(bytes) => {
                        let sha = sha256_hex(&bytes);
                        if let Some(r) = &row
                            && r.sha256 == sha
                        {
                            tx.execute(
                                "UPDATE pages SET size = ?2, mtime_ns = ?3, ino = ?4, checked_ns = ?5 WHERE rowid = ?1",
                                params![r.rowid, stat.size, stat.mtime_ns, stat.ino, now_ns],
                            )
                            .map_err(&err)?;
                            if let Some(e) = &r.error {
                                report.warnings.push(e.clone());
                            }
                            continue;
                        }
                        (sha, parse_page(file_path, &bytes))
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        if let Some(r) = row {
                            delete_row(&tx, r.rowid).map_err(&err)?;
                            report.removed += 1;
                        }
                        continue;
                    }
                    Err(e) => return Err(MemoryError::io(file_path, e)),
                },
            };
            if let Some(r) = &row {
                delete_row(&tx, r.rowid).map_err(&err)?;
            }
            match parsed {
                Ok(page) => {
                    let m = &page.meta;
                    let tags = m.tags.join(" ");
                    tx.execute(
                        "INSERT INTO pages(file, size, mtime_ns, ino, checked_ns, sha256, error, id, title, tags, pinned, created, updated)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, ?7, ?8, ?9, ?10, ?11, ?12)",
                        params![
                            name,
                            stat.size,
                            stat.mtime_ns,
                            stat.ino,
                            now_ns,
                            sha,
                            m.id,
                            m.title,
                            tags,
                            m.pinned,
                            ms(m.created.as_millis()),
                            m.updated.map(|u| ms(u.as_millis())),
                        ],
                    )
                    .map_err(&err)?;
                    let rowid = tx.last_insert_rowid();
                    tx.execute(
                        "INSERT INTO pages_fts(rowid, title, tags, body) VALUES (?1, ?2, ?3, ?4)",
                        params![rowid, m.title, tags, page.body],
                    )
                    .map_err(&err)?;
                }
                Err(e) => {
                    let warning = excluded(&Problem::from_error(file_path, &e));
                    tx.execute(
                        "INSERT INTO pages(file, size, mtime_ns, ino, checked_ns, sha256, error)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                        params![
                            name,
                            stat.size,
                            stat.mtime_ns,
                            stat.ino,
                            now_ns,
                            sha,
                            warning
                        ],
                    )
                    .map_err(&err)?;
                    report.warnings.push(warning);
                }
            }
            report.reindexed += 1;
        }
        for r in known.into_values() {
            delete_row(&tx, r.rowid).map_err(&err)?;
            report.removed += 1;
        }
        tx.commit().map_err(&err)?;
        Ok(report)
    }

    pub(crate) fn search(
        &self,
        q: &Query,
        all: bool,
        limit: usize,
    ) -> Result<Vec<Hit>, MemoryError> {
        let err = db_err(&self.path);
        let expr = q.fts5_expr(all);
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT pages_fts.rowid, p.id, p.title, p.pinned, {RANK} AS r
                 FROM pages_fts JOIN pages p ON p.rowid = pages_fts.rowid
                 WHERE pages_fts MATCH ?1
                 ORDER BY r, p.id
                 LIMIT ?2"
            ))
            .map_err(&err)?;
        let rows = st
            .query_map(params![expr, i64::try_from(limit).unwrap_or(100)], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    Hit {
                        id: r.get(1)?,
                        title: r.get(2)?,
                        pinned: r.get(3)?,
                        score: -r.get::<_, f64>(4)?,
                        snippet: String::new(),
                    },
                ))
            })
            .map_err(&err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&err)?;
        // Snippets only for the hits kept, not for every match.
        let mut snip = self
            .conn
            .prepare_cached(
                "SELECT snippet(pages_fts, -1, '[', ']', '…', 12) FROM pages_fts
                 WHERE pages_fts MATCH ?1 AND rowid = ?2",
            )
            .map_err(&err)?;
        let mut hits = Vec::with_capacity(rows.len());
        for (rowid, mut hit) in rows {
            hit.snippet = snip
                .query_row(params![expr, rowid], |r| r.get::<_, String>(0))
                .optional()
                .map_err(&err)?
                .unwrap_or_default()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            hits.push(hit);
        }
        Ok(hits)
    }
}

/// Errors that mean the file itself is bad, so a rebuild fixes them.
fn is_damage(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
    match e {
        rusqlite::Error::SqliteFailure(f, msg) => {
            matches!(f.code, DatabaseCorrupt | NotADatabase)
                || msg
                    .as_deref()
                    .is_some_and(|m| m.contains("no such table") || m.contains("no such column"))
        }
        // prepare() reports a missing table without a failure code.
        other => other.to_string().contains("no such table"),
    }
}

fn delete_row(tx: &rusqlite::Transaction<'_>, rowid: i64) -> rusqlite::Result<()> {
    tx.execute("DELETE FROM pages_fts WHERE rowid = ?1", [rowid])?;
    tx.execute("DELETE FROM pages WHERE rowid = ?1", [rowid])?;
    Ok(())
}

fn ms(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Opens the file and checks (or creates) the schema; `Err` says why the
/// file cannot be used as it is.
fn try_open(path: &Path) -> Result<Connection, String> {
    let conn = Connection::open(path).map_err(|e| format!("cannot be opened ({e})"))?;
    let setup = || -> rusqlite::Result<i64> {
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        // WAL: readers never block the one writer. NORMAL is enough: a lost
        // transaction only means the next sync re-indexes those pages.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_query_value(None, "user_version", |r| r.get(0))
    };
    let version = setup().map_err(|e| format!("is not a readable SQLite database ({e})"))?;
    if version == SCHEMA_VERSION {
        // Touch both tables so hidden damage shows now, not mid-search.
        conn.query_row(
            "SELECT (SELECT count(*) FROM pages) + (SELECT count(*) FROM pages_fts WHERE pages_fts MATCH 'x')",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(|e| format!("is damaged ({e})"))?;
        return Ok(conn);
    }
    let tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(|e| format!("is damaged ({e})"))?;
    if version != 0 || tables != 0 {
        return Err(format!(
            "has schema version {version}, this pincer uses {SCHEMA_VERSION}"
        ));
    }
    conn.execute_batch(&format!(
        "BEGIN; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
    ))
    .map_err(|e| format!("cannot be created ({e})"))?;
    Ok(conn)
}

fn delete_files(path: &Path) -> Result<(), MemoryError> {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let mut shm = path.as_os_str().to_owned();
    shm.push("-shm");
    for p in [path.to_path_buf(), PathBuf::from(wal), PathBuf::from(shm)] {
        match fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(MemoryError::io(p, e)),
        }
    }
    Ok(())
}
