//! `pincer membench`: memory quality on LoCoMo (or the synthetic set),
//! PicoClaw's baselines and pincer's strategies side by side. The work is
//! in `pincer-membench`; this parses the flags, draws the progress bar on
//! stderr and prints the report.

use anyhow::{Context, Result};
use pincer_membench::{Options, Progress, Strategy, SynthSpec};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct MembenchArgs {
    /// A directory of LoCoMo JSON files; without it, a synthetic set.
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// Context budget in tokens (bytes / 4).
    #[arg(long, default_value_t = 4000)]
    budget: usize,
    /// Strategies to run, comma-separated or repeated (default: all;
    /// `--list` names them).
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    strategy: Vec<String>,
    /// Print the report as one JSON object.
    #[arg(long)]
    json: bool,
    /// Write a plot of HitRate by evidence position.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Write every context, one JSON line per question and strategy.
    #[arg(long, value_name = "FILE")]
    dump_contexts: Option<PathBuf>,
    /// Seed of the synthetic set (without --data).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Worker threads (default: the available cores).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Where the run's temporary directory goes (default: the system's).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// List the strategies and exit.
    #[arg(long)]
    list: bool,
}

pub fn run(args: MembenchArgs) -> Result<ExitCode> {
    if args.list {
        for s in Strategy::ALL {
            println!("{:<26} {}", s.name(), s.description());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let strategies = if args.strategy.is_empty() {
        Strategy::ALL.to_vec()
    } else {
        args.strategy
            .iter()
            .map(|s| Strategy::parse(s.trim()))
            .collect::<Result<Vec<_>, _>>()?
    };
    let (convs, source) = match &args.data {
        Some(dir) => {
            let convs = pincer_membench::load_dir(dir)?;
            let name = dir.file_name().map_or_else(
                || dir.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            (convs, format!("LoCoMo files of `{name}`"))
        }
        None => {
            let spec = SynthSpec {
                seed: args.seed,
                ..SynthSpec::default()
            };
            (
                pincer_membench::generate(&spec),
                format!("synthetic set, seed {}", args.seed),
            )
        }
    };
    let opts = Options {
        budget: args.budget,
        strategies,
        work_dir: args.work_dir.unwrap_or_else(std::env::temp_dir),
        jobs: args.jobs.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        }),
        source,
    };
    let mut dump = match &args.dump_contexts {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        )),
        None => None,
    };
    let bar = Bar::new(std::io::stderr().is_terminal());
    let report = pincer_membench::run(
        &convs,
        &opts,
        &bar,
        dump.as_mut().map(|w| w as &mut dyn Write),
    )?;
    if let Some(p) = &args.svg {
        std::fs::write(p, report.svg()).with_context(|| format!("cannot write {}", p.display()))?;
    }
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", report.markdown());
        if let Some(best) = report.best_pincer() {
            println!(
                "\nBest of pincer's: `{}` at {:.4} ({} questions, {:.1} s in all).",
                best.name,
                best.hit_rate,
                report.questions,
                report.wall_ms as f64 / 1000.0
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A one-line progress bar on stderr, redrawn at most ten times a second;
/// nothing when stderr is not a terminal.
struct Bar {
    on: bool,
    total: AtomicUsize,
    done: AtomicUsize,
    started: Instant,
    last: Mutex<Option<Instant>>,
}

impl Bar {
    fn new(on: bool) -> Self {
        Self {
            on,
            total: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            started: Instant::now(),
            last: Mutex::new(None),
        }
    }

    fn draw(&self, force: bool) {
        if !self.on {
            return;
        }
        let Ok(mut last) = self.last.lock() else {
            return;
        };
        let now = Instant::now();
        if !force && last.is_some_and(|l| now - l < Duration::from_millis(100)) {
            return;
        }
        *last = Some(now);
        let total = self.total.load(Ordering::Relaxed).max(1);
        let done = self.done.load(Ordering::Relaxed).min(total);
        let width = 30;
        let filled = done * width / total;
        let secs = self.started.elapsed().as_secs();
        eprint!(
            "\rmembench [{}{}] {done}/{total} contexts {}:{:02} ",
            "=".repeat(filled),
            " ".repeat(width - filled),
            secs / 60,
            secs % 60
        );
    }
}

impl Progress for Bar {
    fn start(&self, total: usize) {
        self.total.store(total, Ordering::Relaxed);
        self.draw(true);
    }

    fn advance(&self, n: usize) {
        self.done.fetch_add(n, Ordering::Relaxed);
        self.draw(false);
    }

    fn finish(&self) {
        self.draw(true);
        if self.on {
            eprintln!();
        }
    }
}
