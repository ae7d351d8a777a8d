//! The context dump is enough to recompute the report: an independent,
//! deliberately plain implementation of PicoClaw's HitRate, run on the
//! dumped contexts and the data, gives the report's figures.

use crate::run;
use pincer_membench::{Conversation, Strategy, SynthSpec, generate};
use serde_json::Value;
use std::collections::BTreeMap;

/// `D<n>:<m>` with leading zeros dropped, else nothing.
fn id(token: &str) -> Option<String> {
    let rest = token.strip_prefix('D')?;
    let mut parts = rest.split(':');
    let (a, b) = (parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let num = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.chars().all(|c| c.is_ascii_digit())).then(|| s.parse().ok())?
    };
    Some(format!("D{}:{}", num(a)?, num(b)?))
}

fn recompute(conv: &Conversation, line: &Value) -> f64 {
    let evidence: Vec<&str> = line["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let context = line["context"].as_str().unwrap().to_lowercase();
    if line["strategy"]
        .as_str()
        .unwrap()
        .starts_with("picoclaw-seahorse")
        && context.is_empty()
    {
        return 0.0;
    }
    if evidence.is_empty() {
        return 1.0;
    }
    let mut found = 0;
    let mut resolvable = 0;
    for e in evidence {
        for token in e.replace(';', " ").split_whitespace() {
            let Some(id) = id(token) else { continue };
            let Some(turn) = conv.turns().filter(|t| t.dia_id == id).last() else {
                continue;
            };
            resolvable += 1;
            if context.contains(&turn.text.to_lowercase()) {
                found += 1;
            }
        }
    }
    if resolvable == 0 {
        0.0
    } else {
        f64::from(found) / f64::from(resolvable)
    }
}

fn check(convs: &[Conversation], budget: usize) {
    let (report, lines) = run(convs, &Strategy::ALL, budget, 2).expect("run");
    let mut sums: BTreeMap<(String, Option<u64>), (f64, usize)> = BTreeMap::new();
    for line in &lines {
        let conv = convs
            .iter()
            .find(|c| c.sample == line["sample"].as_str().unwrap())
            .expect("sample");
        let h = recompute(conv, line);
        assert_eq!(h, line["hit_rate"].as_f64().unwrap(), "{line}");
        let name = line["strategy"].as_str().unwrap().to_owned();
        for key in [None, line["category"].as_u64()] {
            let e = sums.entry((name.clone(), key)).or_default();
            e.0 += h;
            e.1 += 1;
        }
    }
    for r in &report.strategies {
        let (sum, n) = sums[&(r.name.clone(), None)];
        assert!((sum / n as f64 - r.hit_rate).abs() < 1e-12, "{}", r.name);
        for (cat, v) in &r.by_category {
            let got = sums
                .get(&(r.name.clone(), Some(cat.parse().unwrap())))
                .map(|(s, n)| s / *n as f64);
            assert_eq!(got.is_some(), v.is_some(), "{} C{cat}", r.name);
            if let (Some(a), Some(b)) = (got, v) {
                assert!((a - b).abs() < 1e-12, "{} C{cat}", r.name);
            }
        }
    }
}

#[test]
fn the_dump_recomputes_the_report_on_the_synthetic_set() {
    check(
        &generate(&SynthSpec {
            seed: 3,
            conversations: 2,
            sessions: 10,
            turns_per_session: 16,
        }),
        1200,
    );
}

#[test]
fn the_json_report_has_the_documented_shape() {
    let (report, _) = run(&crate::fixture(), &[Strategy::LegacyNewest], 120, 1).expect("run");
    let v = serde_json::to_value(&report).unwrap();
    assert_eq!(v["budget"], 120);
    let s = &v["strategies"][0];
    assert_eq!(s["name"], "picoclaw-legacy-newest");
    for key in [
        "hit_rate",
        "questions",
        "tokens_mean",
        "id_recall",
        "us_per_question",
    ] {
        assert!(s[key].is_number(), "{key}: {s}");
    }
    let cats: Vec<&String> = s["by_category"].as_object().unwrap().keys().collect();
    assert_eq!(cats, ["1", "2", "3", "4", "5"]);
    assert!(
        report
            .markdown()
            .contains("| `picoclaw-legacy-newest` | **0.2917** |")
    );
    let svg = report.svg();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
}
