//! The synthetic set through every strategy: each runs, pincer's stay
//! within the budget, retrieval finds the old facts that trimming drops,
//! and the result does not depend on the number of threads.

use crate::run;
use pincer_membench::{Report, Strategy, SynthSpec, generate};

const BUDGET: usize = 1200;
const SMALL: usize = 400;

fn spec() -> SynthSpec {
    SynthSpec {
        seed: 7,
        conversations: 2,
        sessions: 16,
        turns_per_session: 16,
    }
}

fn get(r: &Report, s: Strategy) -> &pincer_membench::StrategyReport {
    r.strategies
        .iter()
        .find(|x| x.name == s.name())
        .expect("strategy in report")
}

/// The report without what depends on the clock.
fn timeless(mut r: Report) -> Report {
    r.wall_ms = 0;
    r.jobs = 0;
    for s in &mut r.strategies {
        s.us_per_question = 0.0;
        s.setup_ms = 0.0;
    }
    r
}

#[test]
fn every_strategy_runs_and_recall_finds_what_trimming_drops() {
    let convs = generate(&spec());
    let tokens: usize = convs[0].turns().map(|t| t.content().len() / 4).sum();
    assert!(
        tokens > 2 * BUDGET,
        "the set must not fit the budget: {tokens}"
    );
    let (report, lines) = run(&convs, &Strategy::ALL, BUDGET, 2).expect("run");
    assert_eq!(report.questions, 50);
    assert_eq!(lines.len(), 50 * Strategy::ALL.len());
    for s in Strategy::ALL {
        let r = get(&report, s);
        assert_eq!(r.questions, 50, "{s}");
        assert_eq!(r.by_position.len(), 10);
        if !s.is_picoclaw() {
            assert!(r.tokens_max <= BUDGET, "{s}: {} tokens", r.tokens_max);
        }
    }
    // The facts are stated in the first half of each conversation; the
    // newest turns alone rarely hold them, the memory does.
    let trim = get(&report, Strategy::Trim).hit_rate;
    let recall = get(&report, Strategy::Recall).hit_rate;
    assert!(trim < 0.2, "trim {trim}");
    assert!(recall > 0.8, "recall {recall}");
    assert!(recall >= get(&report, Strategy::TrimMemory).hit_rate);
    assert!(get(&report, Strategy::RecallNoRecent).hit_rate > 0.8);
    // Neighbouring turns cost budget but never lose a hit here.
    assert!(get(&report, Strategy::RecallNoWindow).hit_rate <= recall);
    // The default store's two ends see only their end of the conversation.
    let oldest = get(&report, Strategy::LegacyOldest);
    let newest = get(&report, Strategy::LegacyNewest);
    assert!(oldest.by_position[0] > Some(0.9) && oldest.by_position[9] < Some(0.1));
    assert!(newest.by_position[0] < Some(0.1));
}

#[test]
fn threads_do_not_change_the_result() {
    let convs = generate(&SynthSpec {
        conversations: 3,
        sessions: 8,
        ..spec()
    });
    let some = [Strategy::LegacyNewest, Strategy::Seahorse, Strategy::Recall];
    let (one, lines1) = run(&convs, &some, SMALL, 1).expect("run");
    let (two, lines2) = run(&convs, &some, SMALL, 2).expect("run");
    assert_eq!(timeless(one), timeless(two));
    assert_eq!(lines1, lines2);
}
