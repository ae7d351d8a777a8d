//! The fixture: one invented conversation, 3 sessions, 24 turns of 10
//! tokens each (one of 2), and 12 questions whose evidence covers every
//! rule of the HitRate. At a budget of 120 tokens PicoClaw's legacy store
//! keeps D1:1–D2:4 (oldest: 12 × 10 tokens, D2:5 would make 122) or
//! D2:5–D3:8 (newest: 11 × 10 + 2 tokens, D2:4 would make 122).

use crate::{field, fixture, hit_rates, run};
use pincer_membench::Strategy;

const BUDGET: usize = 120;

#[test]
fn legacy_ends_score_as_worked_out_by_hand() {
    let convs = fixture();
    assert_eq!(convs.len(), 1);
    assert_eq!(convs[0].sample, "conv-fixture");
    assert_eq!(convs[0].turn_count(), 24);
    let (report, lines) = run(
        &convs,
        &[Strategy::LegacyOldest, Strategy::LegacyNewest],
        BUDGET,
        1,
    )
    .expect("run");
    // Question by question (see the fixture's qa):
    // 1 no evidence → 1 · 2 D1:2 · 3 D01:03 is D1:3 · 4 D9:9 names no turn and
    // leaves the denominator · 5 one of two · 6 `D` is no id → 0 · 7 only an
    // id that names no turn → 0 · 8 D2:5 is "OK.", which the oldest turns
    // hold only once lowercased ("Maren: Ok. I finally…"), though D2:5
    // itself is not there · 9 no evidence → 1 · 10 D2:3 · 11 two ids in one
    // entry · 12 D2:3.
    let oldest = [1.0, 1.0, 1.0, 1.0, 0.5, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0];
    let newest = [1.0, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0];
    assert_eq!(hit_rates(&lines, Strategy::LegacyOldest), oldest);
    assert_eq!(hit_rates(&lines, Strategy::LegacyNewest), newest);
    // Id recall does not count the accidental substring of question 8.
    let recall: Vec<f64> = field(&lines, Strategy::LegacyOldest, "id_recall")
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(
        recall,
        [1.0, 1.0, 1.0, 1.0, 0.5, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    );

    let o = &report.strategies[0];
    assert_eq!(o.name, "picoclaw-legacy-oldest");
    assert_eq!(o.questions, 12);
    assert!((o.hit_rate - 9.5 / 12.0).abs() < 1e-12, "{}", o.hit_rate);
    assert!((o.id_recall - 8.5 / 12.0).abs() < 1e-12);
    // Categories of the 12 questions: 4 4 1 2 3 4 2 4 5 1 4 5.
    let cat = |k: &str| o.by_category[k].unwrap();
    assert_eq!(
        [cat("1"), cat("2"), cat("3"), cat("4"), cat("5")],
        [1.0, 0.5, 0.5, 0.8, 1.0]
    );
    assert!((report.strategies[1].hit_rate - 3.5 / 12.0).abs() < 1e-12);

    let ctx = field(&lines, Strategy::LegacyOldest, "context")[0]
        .as_str()
        .unwrap();
    let kept: Vec<&str> = ctx.lines().collect();
    assert_eq!(kept.len(), 12);
    assert_eq!(kept[0], "Maren: Ok. I finally repainted the shed.");
    assert_eq!(kept[11], "Tobias: Wow, a violin and a choir? Busy.");
    let ctx = field(&lines, Strategy::LegacyNewest, "context")[0]
        .as_str()
        .unwrap();
    assert!(
        ctx.starts_with("Maren: OK.\nTobias: My cousin Ilse"),
        "{ctx}"
    );
    assert_eq!(ctx.lines().count(), 12);
}

#[test]
fn seahorse_scores_zero_when_nothing_is_found_even_without_evidence() {
    let (_, lines) = run(
        &fixture(),
        &[
            Strategy::Seahorse,
            Strategy::SeahorsePorter,
            Strategy::LegacyOldest,
        ],
        BUDGET,
        1,
    )
    .expect("run");
    for s in [Strategy::Seahorse, Strategy::SeahorsePorter] {
        let rates = hit_rates(&lines, s);
        // Question 9, "Quixotic zebras?": no keyword is in the conversation.
        assert_eq!(rates[8], 0.0, "{s}");
        assert_eq!(field(&lines, s, "context")[8].as_str(), Some(""));
        // Question 1 has no evidence either, but its keywords find turns.
        assert_eq!(rates[0], 1.0, "{s}");
    }
    assert_eq!(hit_rates(&lines, Strategy::LegacyOldest)[8], 1.0);
}

#[test]
fn pincer_strategies_stay_within_the_budget() {
    let ours = [
        Strategy::Trim,
        Strategy::TrimMemory,
        Strategy::Recall,
        Strategy::RecallNoWindow,
        Strategy::RecallNoRecent,
    ];
    let (report, lines) = run(&fixture(), &ours, BUDGET, 1).expect("run");
    for r in &report.strategies {
        assert_eq!(r.questions, 12, "{}", r.name);
        assert!(r.tokens_max <= BUDGET, "{}: {}", r.name, r.tokens_max);
        assert!(r.hit_rate > 0.0, "{}", r.name);
    }
    // The recall strategies show the session's date above its turns.
    let ctx = field(&lines, Strategy::Recall, "context")[9]
        .as_str()
        .unwrap();
    assert!(ctx.contains("[17 March 2024]\n"), "{ctx}");
    assert!(ctx.contains("I bought a second-hand violin too"), "{ctx}");
}

#[test]
fn a_budget_below_the_summary_cap_still_fits() {
    // The running summary may hold 4 000 chars (~1 000 tokens), more than
    // these 120 tokens: the summary sent yields to the budget instead of
    // the trimmer refusing.
    let (report, _) = run(&fixture(), &[Strategy::TrimSummary], BUDGET, 1).expect("fits");
    let r = &report.strategies[0];
    assert!(r.tokens_max <= BUDGET, "{} tokens", r.tokens_max);
}
