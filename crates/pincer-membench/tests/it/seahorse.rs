//! PicoClaw's Seahorse rules on small, hand-built cases: the per-keyword
//! limit of 20, the LIKE fallback for what FTS5 cannot match, "no result
//! scores 0", and the budget that always keeps the best part.

use crate::{field, hit_rates, run};
use pincer_membench::data::{DateTime, Session};
use pincer_membench::{Conversation, Question, Strategy, Turn};

const NATO: [&str; 25] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
    "uniform", "victor", "whiskey", "xray", "yankee",
];

fn q(question: &str, evidence: &[&str], category: u8) -> Question {
    Question {
        question: question.into(),
        evidence: evidence.iter().map(|e| e.to_string()).collect(),
        category,
        answer: None,
    }
}

/// 25 "pebble" turns, then a box, an ox and small talk.
fn conversation() -> Conversation {
    let mut turns: Vec<Turn> = NATO
        .iter()
        .map(|w| Turn {
            dia_id: String::new(),
            speaker: "Pat".into(),
            text: format!("pebble {w}"),
        })
        .collect();
    for text in ["a box of tea", "the ox sleeps", "nice weather", "see you"] {
        turns.push(Turn {
            dia_id: String::new(),
            speaker: "Sam".into(),
            text: text.into(),
        });
    }
    for (i, t) in turns.iter_mut().enumerate() {
        t.dia_id = format!("D1:{}", i + 1);
    }
    let pebbles: Vec<String> = (1..=25).map(|i| format!("D1:{i}")).collect();
    let pebbles: Vec<&str> = pebbles.iter().map(String::as_str).collect();
    Conversation {
        sample: "pebbles".into(),
        speakers: ["Pat".into(), "Sam".into()],
        sessions: vec![Session {
            number: 1,
            date_time: "9:00 am on 1 June, 2024".into(),
            when: DateTime {
                year: 2024,
                month: 6,
                day: 1,
                hour: 9,
                minute: 0,
            },
            turns,
        }],
        questions: vec![
            q("Where is the pebble?", &pebbles, 4),
            q("Who has the ox?", &["D1:27"], 4),
            q("Zebra?", &[], 5),
        ],
    }
}

#[test]
fn seahorse_rules_on_small_cases() {
    let convs = [conversation()];
    for s in [Strategy::Seahorse, Strategy::SeahorsePorter] {
        let (_, lines) = run(&convs, &[s], 4000, 1).expect("run");
        let rates = hit_rates(&lines, s);
        let ctx: Vec<&str> = field(&lines, s, "context")
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        // One keyword, 25 matching turns: the search stops at 20.
        assert_eq!(ctx[0].lines().count(), 20, "{s}: {}", ctx[0]);
        assert!((rates[0] - 20.0 / 25.0).abs() < 1e-12, "{s}: {}", rates[0]);
        // "ox": trigram cannot match two chars, so LIKE '%ox%' finds the ox
        // (and the box, and foxtrot); the word index finds the ox itself.
        assert_eq!(rates[1], 1.0, "{s}");
        if s == Strategy::Seahorse {
            assert!(
                ctx[1].contains("a box of tea") && ctx[1].contains("foxtrot"),
                "{}",
                ctx[1]
            );
        } else {
            assert_eq!(ctx[1], "Sam: the ox sleeps");
        }
        // Nothing found at all: 0, though the question has no evidence.
        assert_eq!((rates[2], ctx[2]), (0.0, ""), "{s}");
    }
    // A budget smaller than one turn still keeps the best one.
    let (_, lines) = run(&convs, &[Strategy::Seahorse], 1, 1).expect("run");
    let ctx = field(&lines, Strategy::Seahorse, "context")[0]
        .as_str()
        .unwrap();
    assert_eq!(ctx.lines().count(), 1, "{ctx}");
    assert!((hit_rates(&lines, Strategy::Seahorse)[0] - 1.0 / 25.0).abs() < 1e-12);
}
