//! One benchmark run: every selected strategy over every question of every
//! conversation, in a temporary directory that is deleted afterwards.
//!
//! Conversations are independent, so `jobs` worker threads take them in
//! turn; the Seahorse databases are built first, once, over all
//! conversations (their bm25 statistics span the whole table, as in
//! PicoClaw). Results come back in conversation order whatever the
//! threads did, so a report and a context dump are the same for any
//! `jobs`.

use crate::data::Conversation;
use crate::error::BenchError;
use crate::metrics::{self, Evidence, Score, TurnIndex};
use crate::picoclaw::{self, Keep, Seahorse, Tokenizer};
use crate::pincer::Prepared;
use crate::report::{Accumulator, Report};
use crate::strategy::Strategy;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Context budget in tokens (`bytes / 4`).
    pub budget: usize,
    /// In report order; no repeats.
    pub strategies: Vec<Strategy>,
    /// Where the run's temporary directory is made.
    pub work_dir: PathBuf,
    /// Worker threads (at least 1).
    pub jobs: usize,
    /// Names the data in the report (`locomo10 (…)`, `synthetic seed 7`).
    pub source: String,
}

impl Options {
    /// Checks the options before anything runs.
    pub fn validate(&self) -> Result<(), BenchError> {
        if self.budget == 0 {
            return Err(BenchError::Invalid {
                field: "budget",
                reason: "must be at least 1 token".into(),
            });
        }
        if self.jobs == 0 {
            return Err(BenchError::Invalid {
                field: "jobs",
                reason: "must be at least 1".into(),
            });
        }
        if self.strategies.is_empty() {
            return Err(BenchError::Invalid {
                field: "strategy",
                reason: "no strategy selected".into(),
            });
        }
        for (i, s) in self.strategies.iter().enumerate() {
            if self.strategies[..i].contains(s) {
                return Err(BenchError::Invalid {
                    field: "strategy",
                    reason: format!("`{s}` is given twice"),
                });
            }
        }
        Ok(())
    }
}

/// Told how far a run is; called from the worker threads.
pub trait Progress: Sync {
    /// `total` contexts (questions × strategies) will be built.
    fn start(&self, total: usize);
    /// `n` more are done.
    fn advance(&self, n: usize);
    fn finish(&self);
}

/// A [`Progress`] that shows nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl Progress for Quiet {
    fn start(&self, _total: usize) {}
    fn advance(&self, _n: usize) {}
    fn finish(&self) {}
}

/// One line of a context dump: enough to recompute the HitRate from the
/// context alone.
#[derive(Debug, Clone, Serialize)]
pub struct ContextLine<'a> {
    pub strategy: &'a str,
    pub sample: &'a str,
    pub question: &'a str,
    pub evidence: &'a [String],
    pub category: u8,
    pub context: &'a str,
    pub hit_rate: f64,
    pub id_recall: f64,
    pub tokens: usize,
}

/// What one strategy did on one question.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub strategy: Strategy,
    pub category: u8,
    pub score: Score,
    pub tokens: usize,
    pub micros: u64,
    /// Turn position / conversation length of each resolvable evidence id.
    pub positions: Vec<(f64, bool)>,
}

struct ConvResult {
    outcomes: Vec<Outcome>,
    setup: BTreeMap<Strategy, Duration>,
    notes: BTreeMap<Strategy, BTreeMap<String, usize>>,
    dump: Vec<String>,
}

/// Runs `opts` over `convs`. With `dump`, one JSON line per question and
/// strategy is written to it ([`ContextLine`]), in conversation, strategy,
/// question order.
pub fn run(
    convs: &[Conversation],
    opts: &Options,
    progress: &dyn Progress,
    mut dump: Option<&mut dyn Write>,
) -> Result<Report, BenchError> {
    opts.validate()?;
    let started = Instant::now();
    let tmp = tempfile::Builder::new()
        .prefix("pincer-membench-")
        .tempdir_in(&opts.work_dir)
        .map_err(|e| BenchError::io(&opts.work_dir, e))?;

    let mut acc = Accumulator::new(opts);
    // The Seahorse databases: one per tokenizer, over every conversation.
    let mut seahorse: BTreeMap<Strategy, PathBuf> = BTreeMap::new();
    for (s, tok) in [
        (Strategy::Seahorse, Tokenizer::Trigram),
        (Strategy::SeahorsePorter, Tokenizer::Porter),
    ] {
        if opts.strategies.contains(&s) {
            let t = Instant::now();
            let path = tmp.path().join(format!("{s}.sqlite"));
            Seahorse::build(&path, convs, tok)?;
            acc.add_setup(s, t.elapsed());
            seahorse.insert(s, path);
        }
    }

    let total: usize =
        convs.iter().map(|c| c.questions.len()).sum::<usize>() * opts.strategies.len();
    progress.start(total);
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, Result<ConvResult, BenchError>)>();
    let want_dump = dump.is_some();
    let outcome = std::thread::scope(|scope| -> Result<(), BenchError> {
        for _ in 0..opts.jobs.min(convs.len().max(1)) {
            let tx = tx.clone();
            let (next, stop, seahorse, dir) = (&next, &stop, &seahorse, tmp.path());
            scope.spawn(move || {
                loop {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let ci = next.fetch_add(1, Ordering::Relaxed);
                    let Some(conv) = convs.get(ci) else { return };
                    let r = run_conversation(ci, conv, opts, seahorse, dir, progress, want_dump);
                    if r.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    if tx.send((ci, r)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        // Conversation order, whatever order they finish in.
        let mut pending: BTreeMap<usize, ConvResult> = BTreeMap::new();
        let mut expect = 0usize;
        let mut first_err = None;
        for (ci, r) in rx {
            match r {
                Ok(c) => {
                    pending.insert(ci, c);
                }
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
            while let Some(c) = pending.remove(&expect) {
                if first_err.is_none() {
                    if let Some(w) = dump.as_deref_mut() {
                        for line in &c.dump {
                            writeln!(w, "{line}").map_err(|e| BenchError::io("context dump", e))?;
                        }
                    }
                    acc.add_conversation(c.outcomes, c.setup, c.notes);
                }
                expect += 1;
            }
        }
        first_err.map_or(Ok(()), Err)
    });
    progress.finish();
    outcome?;
    if let Some(w) = dump {
        w.flush().map_err(|e| BenchError::io("context dump", e))?;
    }
    let questions = convs.iter().map(|c| c.questions.len()).sum();
    Ok(acc.finish(convs.len(), questions, started.elapsed()))
}

/// What a strategy builds for one question.
struct Ctx {
    text: String,
    turns: Vec<usize>,
    no_result: bool,
}

enum Builder<'c> {
    Fixed(Ctx),
    Seahorse(Seahorse),
    Pincer(Box<Prepared<'c>>),
}

/// What every strategy shares on one conversation.
struct Shared<'a> {
    ci: usize,
    conv: &'a Conversation,
    opts: &'a Options,
    seahorse: &'a BTreeMap<Strategy, PathBuf>,
    tmp: &'a Path,
    progress: &'a dyn Progress,
    want_dump: bool,
    index: TurnIndex,
    evidence: Vec<Evidence>,
    contents: Vec<String>,
}

fn run_conversation(
    ci: usize,
    conv: &Conversation,
    opts: &Options,
    seahorse: &BTreeMap<Strategy, PathBuf>,
    tmp: &Path,
    progress: &dyn Progress,
    want_dump: bool,
) -> Result<ConvResult, BenchError> {
    let index = TurnIndex::new(conv);
    let evidence = conv
        .questions
        .iter()
        .map(|q| Evidence::new(&q.evidence, &index))
        .collect();
    let shared = Shared {
        ci,
        conv,
        opts,
        seahorse,
        tmp,
        progress,
        want_dump,
        index,
        evidence,
        contents: conv.turns().map(|t| t.content()).collect(),
    };
    let mut out = ConvResult {
        outcomes: Vec::new(),
        setup: BTreeMap::new(),
        notes: BTreeMap::new(),
        dump: Vec::new(),
    };
    for &strategy in &opts.strategies {
        run_strategy(&shared, strategy, &mut out).map_err(|e| BenchError::Strategy {
            strategy: strategy.name(),
            sample: conv.sample.clone(),
            error: Box::new(e),
        })?;
    }
    Ok(out)
}

/// Prepares `strategy` on one conversation, then builds and scores every
/// question's context.
fn run_strategy(
    sh: &Shared<'_>,
    strategy: Strategy,
    out: &mut ConvResult,
) -> Result<(), BenchError> {
    let (conv, opts) = (sh.conv, sh.opts);
    let n_turns = sh.contents.len().max(1) as f64;
    let t = Instant::now();
    let dir = sh.tmp.join(format!("c{}-{strategy}", sh.ci));
    let mut builder = match strategy {
        Strategy::LegacyOldest | Strategy::LegacyNewest => {
            let keep = if strategy == Strategy::LegacyOldest {
                Keep::Oldest
            } else {
                Keep::Newest
            };
            let (range, text) = picoclaw::legacy(&sh.contents, opts.budget, keep);
            Builder::Fixed(Ctx {
                text,
                turns: range.collect(),
                no_result: false,
            })
        }
        Strategy::Seahorse | Strategy::SeahorsePorter => {
            let path = sh.seahorse.get(&strategy).ok_or_else(|| {
                BenchError::Inconsistent(format!("{strategy}: database not built"))
            })?;
            Builder::Seahorse(Seahorse::open(path)?)
        }
        _ => Builder::Pincer(Box::new(Prepared::new(&dir, conv, strategy, opts.budget)?)),
    };
    out.setup.insert(strategy, t.elapsed());

    for (qi, q) in conv.questions.iter().enumerate() {
        let t = Instant::now();
        let built = match &mut builder {
            Builder::Fixed(c) => Ctx {
                text: c.text.clone(),
                turns: c.turns.clone(),
                no_result: c.no_result,
            },
            Builder::Seahorse(db) => {
                let c = db.context(sh.ci, &q.question, opts.budget)?;
                Ctx {
                    text: c.text,
                    turns: c.turns,
                    no_result: c.no_result,
                }
            }
            Builder::Pincer(p) => {
                let b = p.context(&q.question)?;
                Ctx {
                    text: b.text,
                    turns: b.turns,
                    no_result: false,
                }
            }
        };
        let micros = u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX);
        let mut included = built.turns;
        included.sort_unstable();
        let score = metrics::score(
            &sh.evidence[qi],
            &sh.index,
            &built.text,
            &|p| included.binary_search(&p).is_ok(),
            built.no_result,
        );
        let tokens = metrics::tokens(&built.text);
        if sh.want_dump {
            let line = ContextLine {
                strategy: strategy.name(),
                sample: &conv.sample,
                question: &q.question,
                evidence: &q.evidence,
                category: q.category,
                context: &built.text,
                hit_rate: score.hit_rate,
                id_recall: score.id_recall,
                tokens,
            };
            out.dump.push(serde_json::to_string(&line).map_err(|e| {
                BenchError::Inconsistent(format!("cannot serialise a context line: {e}"))
            })?);
        }
        let positions = score
            .evidence_hits
            .iter()
            .map(|&(p, hit)| (p as f64 / n_turns, hit))
            .collect();
        out.outcomes.push(Outcome {
            strategy,
            category: q.category,
            score,
            tokens,
            micros,
            positions,
        });
        sh.progress.advance(1);
    }
    if let Builder::Pincer(p) = builder {
        out.notes.insert(strategy, p.notes.clone());
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| BenchError::io(&dir, e))?;
    }
    Ok(())
}
