//! `pincer membench` as a person runs it: the synthetic set by default, a
//! LoCoMo-format directory with `--data`, the JSON report, the SVG and
//! the context dump, and bad flags refused with their name.
#![cfg(feature = "membench")]

use crate::{fails, json, ok, pincer};
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../pincer-membench/tests/data/locomo-fixture")
}

#[test]
fn the_synthetic_set_by_default_and_one_json_object() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().to_str().unwrap();
    let out = ok(pincer(
        tmp.path(),
        &[
            "membench",
            "--budget",
            "1200",
            "--strategy",
            "picoclaw-legacy-newest,pincer-recall",
            "--json",
            "--work-dir",
            work,
        ],
        "",
    ));
    let v = json(out.trim());
    assert_eq!(v["budget"], 1200);
    assert_eq!(v["source"], "synthetic set, seed 1");
    let names: Vec<&str> = v["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["picoclaw-legacy-newest", "pincer-recall"]);
    assert!(v["strategies"][1]["by_category"]["5"].is_number(), "{v}");
    // Only what the run left on purpose: nothing.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn data_dir_markdown_svg_and_dump() {
    let tmp = tempfile::tempdir().unwrap();
    let svg = tmp.path().join("plot.svg");
    let dump = tmp.path().join("contexts.jsonl");
    let out = ok(pincer(
        tmp.path(),
        &[
            "membench",
            "--data",
            fixture().to_str().unwrap(),
            "--budget",
            "120",
            "--strategy",
            "picoclaw-legacy-oldest",
            "--strategy",
            "picoclaw-seahorse",
            "--svg",
            svg.to_str().unwrap(),
            "--dump-contexts",
            dump.to_str().unwrap(),
            "--work-dir",
            tmp.path().to_str().unwrap(),
        ],
        "",
    ));
    assert!(
        out.contains("1 conversations, 12 questions (LoCoMo files of `locomo-fixture`)"),
        "{out}"
    );
    assert!(
        out.contains("| `picoclaw-legacy-oldest` | **0.7917** |"),
        "{out}"
    );
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&dump)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 24);
    for key in [
        "strategy", "sample", "question", "evidence", "category", "context",
    ] {
        assert!(!lines[0][key].is_null(), "{key}");
    }
}

#[test]
fn bad_flags_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let err = fails(pincer(tmp.path(), &["membench", "--strategy", "magic"], ""));
    assert!(
        err.contains("invalid strategy: `magic` is not one of"),
        "{err}"
    );
    let err = fails(pincer(tmp.path(), &["membench", "--budget", "0"], ""));
    assert!(err.contains("invalid budget"), "{err}");
    let err = fails(pincer(
        tmp.path(),
        &["membench", "--data", tmp.path().to_str().unwrap()],
        "",
    ));
    assert!(err.contains("holds no *.json file"), "{err}");
    let out = ok(pincer(tmp.path(), &["membench", "--list"], ""));
    assert_eq!(out.lines().count(), 10);
}
