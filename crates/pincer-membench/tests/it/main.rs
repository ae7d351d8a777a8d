//! The benchmark end to end: the one-conversation fixture (hand-checked
//! HitRates), PicoClaw's Seahorse rules on small cases, the synthetic set
//! through every strategy, the context dump recomputed independently, and
//! bad data refused with the field named.
#![allow(clippy::expect_used, clippy::unwrap_used)] // test code: a failed fixture should panic

mod data;
mod dump;
mod fixture;
mod seahorse;
mod synthetic;

use pincer_membench::{BenchError, Conversation, Options, Quiet, Report, Strategy};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The one-conversation LoCoMo-format fixture (invented text).
pub fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/locomo-fixture")
}

pub fn fixture() -> Vec<Conversation> {
    pincer_membench::load_dir(&fixture_dir()).expect("fixture loads")
}

/// Runs `strategies` at `budget`, returning the report and the dump lines.
pub fn run(
    convs: &[Conversation],
    strategies: &[Strategy],
    budget: usize,
    jobs: usize,
) -> Result<(Report, Vec<Value>), BenchError> {
    let work = tempfile::tempdir().expect("tempdir");
    let opts = Options {
        budget,
        strategies: strategies.to_vec(),
        work_dir: work.path().to_path_buf(),
        jobs,
        source: "test".into(),
    };
    let mut dump: Vec<u8> = Vec::new();
    let report = pincer_membench::run(convs, &opts, &Quiet, Some(&mut dump))?;
    // The run's temporary directory is gone.
    assert_eq!(std::fs::read_dir(work.path()).expect("read").count(), 0);
    let lines = String::from_utf8(dump)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    Ok((report, lines))
}

/// The per-question HitRates of `strategy` in a dump, in question order.
pub fn hit_rates(lines: &[Value], strategy: Strategy) -> Vec<f64> {
    lines
        .iter()
        .filter(|l| l["strategy"] == strategy.name())
        .map(|l| l["hit_rate"].as_f64().expect("hit_rate"))
        .collect()
}

pub fn field<'a>(lines: &'a [Value], strategy: Strategy, name: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["strategy"] == strategy.name())
        .map(|l| &l[name])
        .collect()
}
