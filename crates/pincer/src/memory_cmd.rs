//! `pincer memory write|search|show|list|rebuild|consolidate` and
//! `pincer remember`. People at the terminal are not gated, but every page
//! they write is a `memory.write` audit entry (actor `human:cli`).

use crate::Ctx;
use anyhow::{Context, Result, bail};
use pincer_core::actor::HUMAN_CLI;
use pincer_core::text::terminal_safe;
use pincer_memory::{MemoryIndex, NewPage, PageStore};
use pincer_runtime::person;
use std::io::Read;
use std::process::ExitCode;

#[derive(clap::Subcommand, Debug)]
pub enum MemoryCmd {
    /// Write a new page (body from --body, else stdin).
    Write {
        #[arg(long, value_name = "TEXT")]
        title: String,
        /// Comma-separated lowercase tags, e.g. `garden,sensors`.
        #[arg(long, value_name = "A,B")]
        tags: Option<String>,
        /// Where the fact came from (one line).
        #[arg(long, value_name = "TEXT", default_value = "human:cli")]
        source: String,
        /// Pin it: pinned pages are in every system prompt.
        #[arg(long)]
        pin: bool,
        #[arg(long, value_name = "TEXT")]
        body: Option<String>,
        /// The page id (default: derived from the title).
        #[arg(long, value_name = "ID")]
        id: Option<String>,
        /// Print `{"id": …}`.
        #[arg(long)]
        json: bool,
    },
    /// Search the pages (the index is synced first).
    Search {
        query: String,
        /// 1 to 100 (default 10).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100))]
        limit: Option<u64>,
        #[arg(long)]
        json: bool,
    },
    /// Print one page, front matter included.
    Show {
        id: String,
        /// The page as one JSON object (its fields and body).
        #[arg(long)]
        json: bool,
    },
    /// Delete a page (recorded in the audit trail as `memory.forget`).
    Forget {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Pin a page: it is in every system prompt.
    Pin {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Unpin a page: it stays, but leaves the system prompt.
    Unpin {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// List the pages.
    List {
        /// Only the pinned ones.
        #[arg(long)]
        pinned: bool,
        #[arg(long)]
        json: bool,
    },
    /// Delete the index and build it again from the pages.
    Rebuild {
        #[arg(long)]
        json: bool,
    },
    /// Turn the audit trail since the last run into a session page whose
    /// lines cite their audit seq (refuses a broken chain).
    Consolidate {
        #[arg(long)]
        json: bool,
    },
}

fn memory_dir(ctx: &Ctx) -> std::path::PathBuf {
    ctx.home.memory_dir()
}

fn parse_tags(tags: Option<&str>) -> Vec<String> {
    tags.map(|t| t.split(',').map(|s| s.trim().to_string()).collect())
        .unwrap_or_default()
}

pub fn remember(ctx: &Ctx, fact: &str, json: bool) -> Result<ExitCode> {
    if fact.trim().is_empty() {
        bail!("the fact is empty; say what to remember");
    }
    let r = person::remember(&ctx.home, HUMAN_CLI, fact)?;
    if json {
        println!("{}", serde_json::to_string(&r)?);
    } else if r.new {
        println!(
            "pinned `{}`: it is in every system prompt from now on",
            r.id
        );
    } else {
        println!("already pinned as `{}`; nothing changed", r.id);
    }
    Ok(ExitCode::SUCCESS)
}

/// A page's change, said once.
fn changed(json: bool, id: &str, what: &str) -> Result<ExitCode> {
    if json {
        println!("{}", serde_json::json!({ "id": id, "change": what }));
    } else {
        println!("{what} `{id}`");
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run(ctx: &Ctx, cmd: MemoryCmd) -> Result<ExitCode> {
    match cmd {
        MemoryCmd::Write {
            title,
            tags,
            source,
            pin,
            body,
            id,
            json,
        } => {
            let body = match body {
                Some(b) => b,
                None => {
                    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                        eprintln!("reading the page body from stdin; end it with Ctrl-D");
                    }
                    let mut b = String::new();
                    std::io::stdin()
                        .read_to_string(&mut b)
                        .context("stdin: the body must be UTF-8 text")?;
                    b
                }
            };
            // `audit:` marks consolidation's own pages, `agent:` the agent's.
            if source.starts_with("audit:") || source.starts_with("agent:") {
                bail!(
                    "--source `{source}`: the prefixes `audit:` and `agent:` are reserved for pincer's own writes"
                );
            }
            let page = person::write_memory(
                &ctx.home,
                HUMAN_CLI,
                NewPage {
                    id,
                    title,
                    tags: parse_tags(tags.as_deref()),
                    source,
                    pinned: pin,
                    body,
                },
            )?;
            if json {
                println!("{}", serde_json::json!({ "id": page.meta.id }));
            } else {
                println!("wrote `{}`", page.meta.id);
            }
            Ok(ExitCode::SUCCESS)
        }
        MemoryCmd::Search { query, limit, json } => {
            let mut index = MemoryIndex::open(memory_dir(ctx))?;
            let limit = usize::try_from(limit.unwrap_or(10)).unwrap_or(10);
            let r = index.search(&query, limit)?;
            if json {
                println!("{}", serde_json::to_string(&r)?);
            } else {
                for h in &r.hits {
                    println!(
                        "{:<28} {}{}\n    {}",
                        h.id,
                        terminal_safe(&h.title),
                        if h.pinned { "  (pinned)" } else { "" },
                        terminal_safe(&h.snippet)
                    );
                }
                println!(
                    "{} hit(s); {} page(s) examined, {} re-indexed; search: {}",
                    r.hits.len(),
                    r.examined,
                    r.reindexed,
                    r.backend
                );
                for w in &r.warnings {
                    eprintln!("warning: {}", terminal_safe(w));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        MemoryCmd::Show { id, json } => {
            let store = PageStore::open(memory_dir(ctx))?;
            let page = store.read(&id)?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({ "meta": page.meta, "body": page.body })
                );
            } else {
                print!("{}", terminal_safe(&page.to_markdown()));
            }
            Ok(ExitCode::SUCCESS)
        }
        MemoryCmd::Forget { id, json } => {
            let page = person::forget(&ctx.home, HUMAN_CLI, &id)?;
            changed(json, &page.meta.id, "forgot")
        }
        MemoryCmd::Pin { id, json } => {
            let page = person::set_pinned(&ctx.home, HUMAN_CLI, &id, true)?;
            changed(json, &page.meta.id, "pinned")
        }
        MemoryCmd::Unpin { id, json } => {
            let page = person::set_pinned(&ctx.home, HUMAN_CLI, &id, false)?;
            changed(json, &page.meta.id, "unpinned")
        }
        MemoryCmd::List { pinned, json } => {
            let store = PageStore::open(memory_dir(ctx))?;
            let (pages, problems) = store.list()?;
            let pages: Vec<_> = pages.into_iter().filter(|p| !pinned || p.pinned).collect();
            if json {
                println!(
                    "{}",
                    serde_json::json!({ "pages": pages, "problems": problems })
                );
            } else {
                for p in &pages {
                    println!(
                        "{:<28} {}{}  [{}]",
                        p.id,
                        terminal_safe(&p.title),
                        if p.pinned { "  (pinned)" } else { "" },
                        p.tags.join(",")
                    );
                }
                if pages.is_empty() {
                    println!("no pages");
                }
                for pr in &problems {
                    eprintln!("warning: {}", terminal_safe(&pr.to_string()));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        MemoryCmd::Rebuild { json } => {
            let mut index = MemoryIndex::open(memory_dir(ctx))?;
            let r = index.rebuild()?;
            if json {
                println!("{}", serde_json::to_string(&r)?);
            } else {
                println!(
                    "rebuilt the index: {} page(s) indexed; search: {}",
                    r.reindexed,
                    index.backend()
                );
                for w in &r.warnings {
                    eprintln!("warning: {}", terminal_safe(w));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        MemoryCmd::Consolidate { json } => {
            let done = person::consolidate(&ctx.home, HUMAN_CLI, usize::MAX)?;
            if json {
                println!("{}", serde_json::to_string(&done)?);
            } else {
                for p in &done.pages {
                    println!(
                        "wrote `{}`: audit seq {}–{}, {} line(s); watermark at seq {}",
                        p.page.as_deref().unwrap_or_default(),
                        p.from_seq,
                        p.to_seq,
                        p.summarised,
                        p.watermark.seq
                    );
                }
                if done.pages.is_empty() {
                    let w = pincer_memory::consolidate::read_watermark(
                        &ctx.home.memory_dir().join("consolidation.json"),
                    )?;
                    println!("nothing new since audit seq {}", w.seq);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
