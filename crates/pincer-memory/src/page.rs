//! Memory pages: one markdown file per page, the canonical copy of what
//! pincer remembers (ME1, ME2).
//!
//! # File format
//!
//! `<memory>/pages/<id>.md`, UTF-8, LF line ends:
//!
//! ```text
//! ---
//! id: greenhouse-notes-3f2a1c
//! title: Greenhouse notes
//! tags: [garden, sensors]
//! source: chat with Ana
//! pinned: false
//! created: 2026-11-30T10:00:00.000Z
//! updated: 2026-11-30T11:30:00.000Z
//! ---
//! The body, in markdown, exactly as written.
//! ```
//!
//! The front matter is one `key: value` line per key between two `---`
//! lines (`source:` may have an empty value). It is *not* YAML: the parser
//! is strict on purpose, so a hand edit that pincer would misread is an
//! error naming the key and the file rather than a silent guess.
//!
//! - Keys: `id, title, tags, source, pinned, created` are required,
//!   `updated` is optional; unknown or repeated keys are errors. Any order is
//!   read; pincer writes them in the order above.
//! - `id`: `[a-z0-9][a-z0-9-]{0,63}` and equal to the file name's stem. Ids
//!   are validated, never joined as paths, so no write can leave `pages/`.
//! - `title`: 1..=200 chars, no control characters (so no newline), no
//!   leading/trailing whitespace.
//! - `source`: 0..=500 chars, same character rules as the title.
//! - `tags`: `[]` or `[a, b]`; each tag is `[a-z0-9_-]{1,32}` (lowercase, so
//!   no comma, space or empty tag), at most 32, no duplicates.
//! - `pinned`: `true` or `false`.
//! - `created`, `updated`: RFC 3339 UTC, stored to the millisecond.
//! - The body is everything after the closing `---` line, at most 1 MiB.
//!
//! # Writes
//!
//! Every write goes through [`pincer_core::fsutil::write_atomic`] (temp,
//! fsync, rename, dir fsync) while holding an exclusive `flock` on
//! `<memory>/.pages.lock`. The lock serialises writers across threads and
//! processes: they would otherwise share `write_atomic`'s temp file, and it
//! makes "create only if absent" and "update keeps `created`" atomic. Readers
//! take no lock: a rename is atomic, so they see a whole old or a whole new
//! page, never a torn one.

use crate::error::MemoryError;
use pincer_core::canonical::sha256_hex;
use pincer_core::fsutil::{create_private_dir, sync_dir, write_atomic};
use pincer_core::message::Timestamp;
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// Longest id: `[a-z0-9][a-z0-9-]{0,63}`.
pub const MAX_ID_LEN: usize = 64;
pub const MAX_TITLE_CHARS: usize = 200;
pub const MAX_SOURCE_CHARS: usize = 500;
pub const MAX_TAG_LEN: usize = 32;
pub const MAX_TAGS: usize = 32;
/// Largest body a write accepts.
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// Largest page file a read accepts (front matter plus body, with room for
/// hand edits); bigger files are reported as corrupt rather than loaded.
pub const MAX_FILE_BYTES: u64 = 2 << 20;

/// Everything about a page except its body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageMeta {
    pub id: String,
    pub title: String,
    pub tags: Vec<String>,
    pub source: String,
    pub pinned: bool,
    pub created: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated: Option<Timestamp>,
}

/// A whole page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page {
    #[serde(flatten)]
    pub meta: PageMeta,
    pub body: String,
}

/// What a caller asks to write. `id: None` on [`PageStore::write`] derives
/// one from the title; [`PageStore::update`] and [`PageStore::upsert`]
/// require it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewPage {
    pub id: Option<String>,
    pub title: String,
    pub tags: Vec<String>,
    pub source: String,
    pub pinned: bool,
    pub body: String,
}

/// A page file that could not be read, reported instead of dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub file: PathBuf,
    /// The front-matter key (or `front matter`, `body`, `file`) at fault.
    pub field: String,
    pub reason: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: invalid {}: {}",
            self.file.display(),
            self.field,
            self.reason
        )
    }
}

impl Problem {
    pub(crate) fn from_error(file: &Path, e: &MemoryError) -> Self {
        match e {
            MemoryError::Corrupt {
                file,
                field,
                reason,
                ..
            } => Self {
                file: file.clone(),
                field: field.clone(),
                reason: reason.clone(),
            },
            other => Self {
                file: file.to_path_buf(),
                field: "file".into(),
                reason: other.to_string(),
            },
        }
    }
}

/// Checks an id: `[a-z0-9][a-z0-9-]{0,63}`.
pub fn validate_id(id: &str) -> Result<(), MemoryError> {
    let bad = |why: &str| MemoryError::invalid("id", format!("`{}`: {why}", id.escape_debug()));
    let first = id.bytes().next().ok_or_else(|| bad("is empty"))?;
    if id.len() > MAX_ID_LEN {
        return Err(bad("is longer than 64 characters"));
    }
    if !(first.is_ascii_lowercase() || first.is_ascii_digit()) {
        return Err(bad("must start with a-z or 0-9"));
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(bad("may only hold a-z, 0-9 and `-`"));
    }
    Ok(())
}

/// A control character by its name and code point (`a newline (U+000A)`,
/// `an escape (ESC, U+001B)`), for a message a person reads.
fn control_name(c: char) -> String {
    let code = format!("U+{:04X}", u32::from(c));
    match c {
        '\n' => format!("a newline ({code})"),
        '\r' => format!("a carriage return ({code})"),
        '\t' => format!("a tab ({code})"),
        '\0' => format!("a NUL ({code})"),
        '\u{1b}' => format!("an escape (ESC, {code})"),
        '\u{7f}' => format!("a delete (DEL, {code})"),
        _ => format!("the control character {code}"),
    }
}

fn check_line(v: &str, max: usize, required: bool) -> Result<(), String> {
    if required && v.is_empty() {
        return Err("is empty".into());
    }
    if let Some(c) = v.chars().find(|c| c.is_control()) {
        return Err(format!(
            "contains {}; a single line of text without control characters is required",
            control_name(c)
        ));
    }
    if v.trim() != v {
        return Err("has leading or trailing whitespace".into());
    }
    let n = v.chars().count();
    if n > max {
        return Err(format!("is {n} characters long, at most {max} allowed"));
    }
    Ok(())
}

fn check_tag(t: &str) -> Result<(), String> {
    if t.is_empty() {
        return Err("an empty tag is not allowed".into());
    }
    if t.contains(',') {
        return Err(format!("`{}` contains a comma", t.escape_debug()));
    }
    if t.len() > MAX_TAG_LEN {
        return Err(format!("`{t}` is longer than {MAX_TAG_LEN} bytes"));
    }
    if !t
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
    {
        return Err(format!(
            "`{}` may only hold a-z, 0-9, `-` and `_`",
            t.escape_debug()
        ));
    }
    Ok(())
}

fn check_tags(tags: &[String]) -> Result<(), String> {
    if tags.len() > MAX_TAGS {
        return Err(format!("{} tags, at most {MAX_TAGS} allowed", tags.len()));
    }
    for (i, t) in tags.iter().enumerate() {
        check_tag(t)?;
        if tags[..i].contains(t) {
            return Err(format!("`{t}` appears twice"));
        }
    }
    Ok(())
}

/// Checks every field a caller controls, naming the first bad one.
fn validate_fields(p: &NewPage) -> Result<(), MemoryError> {
    if let Some(id) = &p.id {
        validate_id(id)?;
    }
    check_line(&p.title, MAX_TITLE_CHARS, true).map_err(|r| MemoryError::invalid("title", r))?;
    check_tags(&p.tags).map_err(|r| MemoryError::invalid("tags", r))?;
    check_line(&p.source, MAX_SOURCE_CHARS, false)
        .map_err(|r| MemoryError::invalid("source", r))?;
    if p.body.len() > MAX_BODY_BYTES {
        return Err(MemoryError::invalid(
            "body",
            format!(
                "is {} bytes, at most {MAX_BODY_BYTES} allowed",
                p.body.len()
            ),
        ));
    }
    Ok(())
}

impl Page {
    /// The page file's exact bytes (see the module doc for the format).
    pub fn to_markdown(&self) -> String {
        let m = &self.meta;
        let mut s = String::with_capacity(self.body.len() + 256);
        s.push_str("---\nid: ");
        s.push_str(&m.id);
        s.push_str("\ntitle: ");
        s.push_str(&m.title);
        s.push_str("\ntags: [");
        s.push_str(&m.tags.join(", "));
        s.push_str("]\nsource:");
        if !m.source.is_empty() {
            s.push(' ');
            s.push_str(&m.source);
        }
        s.push_str("\npinned: ");
        s.push_str(if m.pinned { "true" } else { "false" });
        s.push_str("\ncreated: ");
        s.push_str(&m.created.to_string());
        if let Some(u) = m.updated {
            s.push_str("\nupdated: ");
            s.push_str(&u.to_string());
        }
        s.push_str("\n---\n");
        s.push_str(&self.body);
        s
    }
}

/// Parses a page file. `file` names the file in errors and its stem must
/// equal the `id` key.
pub fn parse_page(file: &Path, bytes: &[u8]) -> Result<Page, MemoryError> {
    let corrupt = |field: &str, reason: String| MemoryError::Corrupt {
        file: file.to_path_buf(),
        field: field.to_string(),
        reason,
    };
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let field = match bytes.windows(5).position(|w| w == b"\n---\n") {
            Some(end) if e.valid_up_to() > end => "body",
            _ => "front matter",
        };
        corrupt(
            field,
            format!("not UTF-8 (bad byte at offset {})", e.valid_up_to()),
        )
    })?;
    let rest = text.strip_prefix("---\n").ok_or_else(|| {
        corrupt(
            "front matter",
            "the file must start with a `---` line".into(),
        )
    })?;
    let (head, body) = if let Some(head) = rest.strip_prefix("---\n") {
        ("", head)
    } else if let Some(end) = rest.find("\n---\n") {
        (&rest[..end], &rest[end + 5..])
    } else if let Some(head) = rest.strip_suffix("\n---") {
        (head, "")
    } else {
        return Err(corrupt("front matter", "no closing `---` line".to_string()));
    };

    let mut id = None;
    let mut title = None;
    let mut tags = None;
    let mut source = None;
    let mut pinned = None;
    let mut created = None;
    let mut updated = None;
    for (n, line) in head.split('\n').enumerate() {
        let (key, value) = match line.split_once(':') {
            Some((k, v)) => (k, v.strip_prefix(' ').unwrap_or(v)),
            None => {
                return Err(corrupt(
                    "front matter",
                    format!("line {} is not `key: value`", n + 2),
                ));
            }
        };
        let slot: &mut Option<String> = match key {
            "id" => &mut id,
            "title" => &mut title,
            "tags" => &mut tags,
            "source" => &mut source,
            "pinned" => &mut pinned,
            "created" => &mut created,
            "updated" => &mut updated,
            other => {
                return Err(corrupt(
                    &other.escape_debug().to_string(),
                    "unknown key (known: id, title, tags, source, pinned, created, updated)".into(),
                ));
            }
        };
        if slot.is_some() {
            return Err(corrupt(key, "the key appears twice".into()));
        }
        *slot = Some(value.to_string());
    }
    let need = |v: Option<String>, key: &str| v.ok_or_else(|| corrupt(key, "missing".into()));
    let id = need(id, "id")?;
    let title = need(title, "title")?;
    let tags = need(tags, "tags")?;
    let source = need(source, "source")?;
    let pinned = need(pinned, "pinned")?;
    let created = need(created, "created")?;

    validate_id(&id).map_err(|e| corrupt("id", e.to_string()))?;
    let stem = file
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".md"));
    if stem != Some(id.as_str()) {
        return Err(corrupt(
            "id",
            format!("`{id}` does not match the file name (expected {id}.md)"),
        ));
    }
    check_line(&title, MAX_TITLE_CHARS, true).map_err(|r| corrupt("title", r))?;
    check_line(&source, MAX_SOURCE_CHARS, false).map_err(|r| corrupt("source", r))?;
    let tags = parse_tags(&tags).map_err(|r| corrupt("tags", r))?;
    let pinned = match pinned.as_str() {
        "true" => true,
        "false" => false,
        other => {
            return Err(corrupt(
                "pinned",
                format!("`{}` is not `true` or `false`", other.escape_debug()),
            ));
        }
    };
    let ts = |v: &str, key: &str| {
        Timestamp::parse(v).map_err(|_| {
            corrupt(
                key,
                format!("`{}` is not an RFC 3339 UTC timestamp", v.escape_debug()),
            )
        })
    };
    let created = ts(&created, "created")?;
    let updated = updated.map(|u| ts(&u, "updated")).transpose()?;
    Ok(Page {
        meta: PageMeta {
            id,
            title,
            tags,
            source,
            pinned,
            created,
            updated,
        },
        body: body.to_string(),
    })
}

fn parse_tags(v: &str) -> Result<Vec<String>, String> {
    let inner = v
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .ok_or_else(|| format!("`{}` is not `[a, b]`", v.escape_debug()))?;
    let tags: Vec<String> = if inner.trim().is_empty() {
        Vec::new()
    } else {
        inner.split(',').map(|t| t.trim().to_string()).collect()
    };
    check_tags(&tags)?;
    Ok(tags)
}

/// `title` → `greenhouse-notes`: lowercase ASCII letters and digits, every
/// other run of characters one `-`, at most 40 bytes; `page` when nothing is
/// left.
pub fn slug(title: &str) -> String {
    let mut s = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.is_empty() && !s.ends_with('-') {
            s.push('-');
        }
        if s.len() >= 40 {
            break;
        }
    }
    let s = s.trim_end_matches('-');
    if s.is_empty() {
        "page".into()
    } else {
        s.into()
    }
}

/// The page files under `<memory>/pages/`.
#[derive(Debug, Clone)]
pub struct PageStore {
    memory_dir: PathBuf,
    pages_dir: PathBuf,
}

impl PageStore {
    /// Opens the store, creating `<memory_dir>/pages/` (mode 0700) if needed.
    pub fn open(memory_dir: impl Into<PathBuf>) -> Result<Self, MemoryError> {
        let memory_dir = memory_dir.into();
        let pages_dir = memory_dir.join("pages");
        create_private_dir(&pages_dir).map_err(|e| MemoryError::io(&pages_dir, e))?;
        Ok(Self {
            memory_dir,
            pages_dir,
        })
    }

    pub fn memory_dir(&self) -> &Path {
        &self.memory_dir
    }

    pub fn pages_dir(&self) -> &Path {
        &self.pages_dir
    }

    /// The file of page `id` (the id is validated first).
    pub fn path_of(&self, id: &str) -> Result<PathBuf, MemoryError> {
        validate_id(id)?;
        Ok(self.pages_dir.join(format!("{id}.md")))
    }

    /// Creates a new page. Never replaces an existing one: with an explicit
    /// id that exists this is [`MemoryError::Exists`]; without an id, one is
    /// derived as `<slug(title)>-<6 hex>` and a taken id is retried with a
    /// new suffix.
    pub fn write(&self, new: NewPage) -> Result<Page, MemoryError> {
        validate_fields(&new)?;
        let _lock = self.lock()?;
        let now = Timestamp::now();
        let id = match &new.id {
            Some(id) => {
                if self.exists(id)? {
                    return Err(MemoryError::Exists { id: id.clone() });
                }
                id.clone()
            }
            None => self.fresh_id(&new.title, now)?,
        };
        let page = Page {
            meta: PageMeta {
                id,
                title: new.title,
                tags: new.tags,
                source: new.source,
                pinned: new.pinned,
                created: now,
                updated: None,
            },
            body: new.body,
        };
        self.store(&page)?;
        Ok(page)
    }

    /// Replaces page `new.id` (required), keeping its `created` and setting
    /// `updated` to now. [`MemoryError::NotFound`] if it does not exist.
    pub fn update(&self, new: NewPage) -> Result<Page, MemoryError> {
        self.put(new, false)
    }

    /// [`update`](Self::update) if page `new.id` (required) exists, else
    /// create it with that id.
    pub fn upsert(&self, new: NewPage) -> Result<Page, MemoryError> {
        self.put(new, true)
    }

    fn put(&self, new: NewPage, create: bool) -> Result<Page, MemoryError> {
        validate_fields(&new)?;
        let id = new
            .id
            .clone()
            .ok_or_else(|| MemoryError::invalid("id", "is required to update a page"))?;
        let _lock = self.lock()?;
        let now = Timestamp::now();
        let (created, updated) = match self.read(&id) {
            Ok(old) => (old.meta.created, Some(now.max(old.meta.created))),
            Err(MemoryError::NotFound { .. }) if create => (now, None),
            // A corrupt old page is replaced by a whole new one: the caller
            // asked for this id, and the old bytes cannot be kept readable.
            Err(MemoryError::Corrupt { .. }) => (now, Some(now)),
            Err(e) => return Err(e),
        };
        let page = Page {
            meta: PageMeta {
                id,
                title: new.title,
                tags: new.tags,
                source: new.source,
                pinned: new.pinned,
                created,
                updated,
            },
            body: new.body,
        };
        self.store(&page)?;
        Ok(page)
    }

    /// Reads page `id`.
    pub fn read(&self, id: &str) -> Result<Page, MemoryError> {
        let path = self.path_of(id)?;
        match read_page_file(&path) {
            Err(MemoryError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                Err(MemoryError::NotFound { id: id.into() })
            }
            r => r,
        }
    }

    /// Deletes page `id`. [`MemoryError::NotFound`] if there is none.
    pub fn delete(&self, id: &str) -> Result<(), MemoryError> {
        let path = self.path_of(id)?;
        let _lock = self.lock()?;
        match fs::remove_file(&path) {
            Ok(()) => sync_dir(&self.pages_dir).map_err(|e| MemoryError::io(&self.pages_dir, e)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                Err(MemoryError::NotFound { id: id.into() })
            }
            Err(e) => Err(MemoryError::io(path, e)),
        }
    }

    /// Every readable page, sorted by id, and a [`Problem`] for every page
    /// file that is not.
    pub fn pages(&self) -> Result<(Vec<Page>, Vec<Problem>), MemoryError> {
        let mut pages = Vec::new();
        let mut problems = Vec::new();
        for path in self.page_files()? {
            match read_page_file(&path) {
                Ok(p) => pages.push(p),
                Err(e) => problems.push(Problem::from_error(&path, &e)),
            }
        }
        pages.sort_by(|a, b| a.meta.id.cmp(&b.meta.id));
        Ok((pages, problems))
    }

    /// [`pages`](Self::pages) without the bodies.
    pub fn list(&self) -> Result<(Vec<PageMeta>, Vec<Problem>), MemoryError> {
        let (pages, problems) = self.pages()?;
        Ok((pages.into_iter().map(|p| p.meta).collect(), problems))
    }

    /// The pinned pages (bodies included, for the system prompt), sorted by
    /// id, and the problems met on the way.
    pub fn pinned(&self) -> Result<(Vec<Page>, Vec<Problem>), MemoryError> {
        let (pages, problems) = self.pages()?;
        Ok((
            pages.into_iter().filter(|p| p.meta.pinned).collect(),
            problems,
        ))
    }

    /// Paths of every `*.md` entry in `pages/`, sorted (temp files and other
    /// names are not pages).
    pub(crate) fn page_files(&self) -> Result<Vec<PathBuf>, MemoryError> {
        Ok(self
            .page_entries(false)?
            .into_iter()
            .map(|(p, _)| p)
            .collect())
    }

    /// Like [`page_files`](Self::page_files), with each entry's `lstat` when
    /// `stat` is set (taken through the directory handle, which is cheaper
    /// than a path lookup per file).
    pub(crate) fn page_entries(&self, stat: bool) -> Result<Vec<PageEntry>, MemoryError> {
        let dir = &self.pages_dir;
        let mut out = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| MemoryError::io(dir, e))? {
            let entry = entry.map_err(|e| MemoryError::io(dir, e))?;
            let name = entry.file_name();
            if name.to_str().is_some_and(|n| n.ends_with(".md")) || is_md_non_utf8(&name) {
                // DirEntry::metadata does not follow symlinks.
                let md = stat.then(|| entry.metadata());
                out.push((entry.path(), md));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    fn exists(&self, id: &str) -> Result<bool, MemoryError> {
        let path = self.path_of(id)?;
        match fs::symlink_metadata(&path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(MemoryError::io(path, e)),
        }
    }

    fn fresh_id(&self, title: &str, now: Timestamp) -> Result<String, MemoryError> {
        let base = slug(title);
        for attempt in 0u32.. {
            let h = sha256_hex(format!("{title}\n{}\n{attempt}", now.as_millis()).as_bytes());
            let id = format!("{base}-{}", &h[..6]);
            if !self.exists(&id)? {
                return Ok(id);
            }
        }
        // `0u32..` has four billion suffixes; a directory cannot hold them.
        Err(MemoryError::invalid("id", "no free id left for this title"))
    }

    fn store(&self, page: &Page) -> Result<(), MemoryError> {
        let path = self.path_of(&page.meta.id)?;
        write_atomic(&path, page.to_markdown().as_bytes()).map_err(|e| MemoryError::io(path, e))
    }

    fn lock(&self) -> Result<File, MemoryError> {
        let path = self.memory_dir.join(".pages.lock");
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| MemoryError::io(&path, e))?;
        f.lock().map_err(|e| MemoryError::io(&path, e))?;
        Ok(f)
    }
}

/// A page file and, when asked for, its `lstat`.
pub(crate) type PageEntry = (PathBuf, Option<io::Result<fs::Metadata>>);

fn is_md_non_utf8(name: &std::ffi::OsStr) -> bool {
    use std::os::unix::ffi::OsStrExt;
    name.to_str().is_none() && name.as_bytes().ends_with(b".md")
}

/// Reads and parses one page file; a symlink or a file over
/// [`MAX_FILE_BYTES`] is corrupt (a page must live in `pages/`).
pub(crate) fn read_page_file(path: &Path) -> Result<Page, MemoryError> {
    let bytes = read_page_bytes(path)?;
    parse_page(path, &bytes)
}

pub(crate) fn read_page_bytes(path: &Path) -> Result<Vec<u8>, MemoryError> {
    let md = fs::symlink_metadata(path).map_err(|e| MemoryError::io(path, e))?;
    check_file_meta(path, &md)?;
    fs::read(path).map_err(|e| MemoryError::io(path, e))
}

pub(crate) fn check_file_meta(path: &Path, md: &fs::Metadata) -> Result<(), MemoryError> {
    let corrupt = |reason: String| MemoryError::Corrupt {
        file: path.to_path_buf(),
        field: "file".into(),
        reason,
    };
    if !md.file_type().is_file() {
        return Err(corrupt(
            "not a regular file (symlinks and directories are not pages)".into(),
        ));
    }
    if md.len() > MAX_FILE_BYTES {
        return Err(corrupt(format!(
            "{} bytes, at most {MAX_FILE_BYTES} allowed",
            md.len()
        )));
    }
    if path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".md"))
        .is_none_or(|stem| validate_id(stem).is_err())
    {
        return Err(MemoryError::Corrupt {
            file: path.to_path_buf(),
            field: "id".into(),
            reason: "the file name is not `<id>.md` with a valid id".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_character_is_named_for_what_it_is() {
        let why = |v: &str| check_line(v, 200, true).expect_err("refused");
        let esc = why("title \u{1b}[31mred");
        assert!(esc.contains("an escape (ESC, U+001B)"), "{esc}");
        assert!(!esc.contains("newline"), "{esc}");
        assert!(why("two\nlines").contains("a newline (U+000A)"));
        assert!(why("a\tb").contains("a tab (U+0009)"));
        assert!(why("bell\u{7}").contains("the control character U+0007"));
        // Through the page check, the field is named too.
        let mut p = Page {
            meta: PageMeta {
                id: "a-1".into(),
                title: "ok".into(),
                tags: vec![],
                source: "web\u{1b}".into(),
                pinned: false,
                created: Timestamp::parse("2026-11-30T10:00:00.000Z").expect("ts"),
                updated: None,
            },
            body: String::new(),
        };
        let text = p.to_markdown();
        let err = parse_page(Path::new("a-1.md"), text.as_bytes()).expect_err("corrupt");
        let msg = err.to_string();
        assert!(msg.contains("source") && msg.contains("U+001B"), "{msg}");
        p.meta.source = String::new();
        assert!(parse_page(Path::new("a-1.md"), p.to_markdown().as_bytes()).is_ok());
    }

    #[test]
    fn slug_is_a_valid_id_prefix() {
        assert_eq!(slug("Greenhouse notes!"), "greenhouse-notes");
        assert_eq!(slug("  ¡¡ "), "page");
        assert_eq!(slug("Ünïcode Tëst"), "n-code-t-st");
        assert!(slug(&"x".repeat(100)).len() <= 40);
    }

    #[test]
    fn render_then_parse_is_identity() {
        let p = Page {
            meta: PageMeta {
                id: "a-1".into(),
                title: "A: title".into(),
                tags: vec!["x".into(), "y_z".into()],
                source: String::new(),
                pinned: true,
                created: Timestamp::parse("2026-11-30T10:00:00.000Z").expect("ts"),
                updated: None,
            },
            body: "---\nnot front matter\n---\n".into(),
        };
        let text = p.to_markdown();
        let back = parse_page(Path::new("a-1.md"), text.as_bytes()).expect("parse");
        assert_eq!(back, p);
    }
}
