use super::tests::{naive_fold, orphans, request_cost};
use super::*;
use crate::message::ToolCall;
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::json;

const PATTERN: &[char] = &[
    'l', 'o', 'r', 'e', 'm', ' ', 'i', 'p', 's', 'u', 'é', '\n', 'd', 'o', ' ', '✓', 'x', '🦀',
    'z', ' ',
];
const TOOLS: &[&str] = &["file_read", "shell", "web_fetch", "memory_search"];

fn text(len: usize, salt: usize) -> String {
    (0..len)
        .map(|i| PATTERN[(i + salt) % PATTERN.len()])
        .collect()
}

fn msg(mut m: Message, n: usize) -> Message {
    m.ts = crate::message::Timestamp::parse(&format!(
        "2026-11-30T{:02}:{:02}:00Z",
        (n / 60) % 24,
        n % 60
    ))
    .expect("ts");
    m
}

#[derive(Debug, Clone)]
struct TurnSpec {
    user_len: usize,
    /// Assistant tool-call messages: (tool, result length) per call.
    steps: Vec<Vec<(usize, usize)>>,
    /// The final reply's length; None for an interrupted turn.
    reply: Option<usize>,
}

fn turn_spec() -> impl Strategy<Value = TurnSpec> {
    (
        0usize..300,
        vec(vec((0..TOOLS.len(), 0usize..4000), 1..4), 0..4),
        proptest::option::weighted(0.8, 0usize..300),
    )
        .prop_map(|(user_len, steps, reply)| TurnSpec {
            user_len,
            steps,
            reply,
        })
}

fn build(preamble: bool, specs: &[TurnSpec]) -> Vec<Message> {
    let mut out = Vec::new();
    if preamble {
        out.push(msg(Message::system("You are pincer."), 0));
        out.push(msg(Message::assistant("(resumed)"), 1));
    }
    for (t, spec) in specs.iter().enumerate() {
        let n = out.len();
        out.push(msg(Message::user(text(spec.user_len, n)), n));
        for (s, step) in spec.steps.iter().enumerate() {
            let ids: Vec<String> = (0..step.len()).map(|j| format!("c{t}_{s}_{j}")).collect();
            let calls = step
                .iter()
                .zip(&ids)
                .map(|((tool, _), id)| {
                    ToolCall::new(id.clone(), TOOLS[*tool].to_owned(), &json!({"step": s}))
                })
                .collect();
            let n = out.len();
            out.push(msg(Message::assistant_calls(text(s * 7, n), calls), n));
            for ((tool, len), id) in step.iter().zip(&ids) {
                let n = out.len();
                out.push(msg(
                    Message::tool_result(id, TOOLS[*tool], text(*len, n)),
                    n,
                ));
            }
        }
        if let Some(len) = spec.reply {
            let n = out.len();
            out.push(msg(Message::assistant(text(len, n)), n));
        }
    }
    out
}

fn session() -> impl Strategy<Value = Vec<Message>> {
    (any::<bool>(), vec(turn_spec(), 0..10)).prop_map(|(pre, specs)| build(pre, &specs))
}

/// Deletes (op 0) or duplicates (op 1) messages.
fn damage(msgs: Vec<Message>, ops: &[u8]) -> Vec<Message> {
    if ops.is_empty() {
        return msgs;
    }
    let mut out = Vec::new();
    for (i, m) in msgs.into_iter().enumerate() {
        match ops[i % ops.len()] {
            0 => {}
            1 => {
                out.push(m.clone());
                out.push(m);
            }
            _ => out.push(m),
        }
    }
    out
}

#[derive(Debug, Clone)]
struct Params {
    budget: Budget,
    /// When set, the window is this percentage of the untrimmed cost.
    window_pct: Option<usize>,
    summary: String,
    summary_max_chars: usize,
    chars_per_token: f64,
}

fn params() -> impl Strategy<Value = Params> {
    (
        prop_oneof![
            (0usize..3_000).prop_map(|w| (w, None)),
            (0usize..80_000).prop_map(|w| (w, None)),
            (20usize..110).prop_map(|pct| (0, Some(pct))),
        ],
        0usize..1_500,
        0usize..3_000,
        0usize..1_500,
        prop_oneof![
            Just(String::new()),
            Just("- [2026-11-29T10:00] user: old | reply: older".to_owned()),
            (0usize..2_000).prop_map(|n| text(n, 3)),
        ],
        prop_oneof![0usize..200, 0usize..3_000],
        1.0f64..8.0,
    )
        .prop_map(
            |((window, window_pct), tool_defs, reserve, pinned, summary, max, ratio)| Params {
                budget: Budget {
                    context_window: window,
                    tool_def_tokens: tool_defs,
                    output_reserve: reserve,
                    pinned_tokens: pinned,
                },
                window_pct,
                summary,
                summary_max_chars: max,
                chars_per_token: ratio,
            },
        )
}

/// The last turn with every shortenable tool result at its minimum.
fn maximally_shortened(turn: &[Message], counter: &dyn TokenCounter) -> Vec<Message> {
    turn.iter()
        .map(|m| {
            let from = m.content.chars().count();
            if m.role != Role::Tool || from <= MIN_SHORTENED_HEAD_CHARS {
                return m.clone();
            }
            let mut s = m.clone();
            s.content = shortened_content(&m.content, from, MIN_SHORTENED_HEAD_CHARS);
            if counter.message_tokens(&s) < counter.message_tokens(m) {
                s
            } else {
                m.clone()
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn trim_keeps_every_invariant(
        sess in session(),
        ops in prop_oneof![Just(Vec::new()), vec(0u8..12, 1..40)],
        p in params(),
    ) {
        let (msgs, _) = repair_orphans(damage(sess, &ops));
        let counter = CharRatio::new(p.chars_per_token);
        let mut budget = p.budget;
        if let Some(pct) = p.window_pct {
            budget.context_window = request_cost(&counter, budget, &p.summary, &msgs) * pct / 100;
        }
        let input = TrimInput {
            messages: &msgs,
            summary: &p.summary,
            summary_max_chars: p.summary_max_chars,
            budget,
        };
        let window = budget.context_window;
        let ts = turns(&msgs);
        let n = ts.len();
        let start = |k: usize| ts.get(k).map_or(msgs.len(), |r| r.start);
        let summary_for = |k: usize| {
            if k == 0 {
                return p.summary.clone();
            }
            let lines: Vec<String> =
                ts[..k].iter().map(|r| summarize_turn(&msgs[r.clone()])).collect();
            naive_fold(&p.summary, &lines, p.summary_max_chars)
        };
        let cost = |summary: &str, kept: &[Message]| request_cost(&counter, budget, summary, kept);
        let share = window / SUMMARY_SHARE;
        let sent_for = |k: usize| fit_summary(&summary_for(k), share, &counter);
        let cost_k = |k: usize| cost(&sent_for(k), &msgs[start(k)..]);

        match trim(&input, &counter) {
            Ok(out) => {
                let k = out.dropped_turns;
                // 1. no orphan
                prop_assert_eq!(orphans(&out.messages), Ok(()));
                // 2. fits, and the numbers are the real cost
                prop_assert!(out.tokens_after <= window);
                prop_assert_eq!(out.tokens_after, cost(&out.request_summary, &out.messages));
                prop_assert_eq!(out.tokens_before, cost(&p.summary, &msgs));
                prop_assert_eq!(&out.summary, &summary_for(k));
                // the summary sent is the newest of the kept one, within its share
                let rs = &out.request_summary;
                prop_assert!(counter.text_tokens(rs) <= share, "summary over its share");
                let newest = out.summary.rsplit('\n').next().unwrap_or("");
                prop_assert!(
                    out.summary.ends_with(rs.as_str())
                        || rs.strip_suffix('…').is_some_and(|h| newest.starts_with(h)),
                    "{:?} is not the newest of {:?}", rs, out.summary
                );
                prop_assert_eq!(out.kept_turns + k, n);
                for fewer in 0..k {
                    prop_assert!(cost_k(fewer) > window, "dropping {} turns would fit", fewer);
                }
                if k == 0 && out.shortened.is_empty() && *rs == p.summary {
                    prop_assert_eq!(out.tokens_after, out.tokens_before);
                }
                // 4. the dropped turns are a prefix ending on a boundary
                prop_assert!(n == 0 || k < n, "the current turn is never dropped");
                prop_assert_eq!(out.dropped_messages, start(k));
                let expected = &msgs[out.dropped_messages..];
                prop_assert_eq!(out.messages.len(), expected.len());
                // 3. the newest turn is intact, modulo shortened tool results
                if out.shortened.is_empty() {
                    prop_assert_eq!(&out.messages[..], expected);
                } else {
                    prop_assert_eq!(k + 1, n, "shortening only once only the current turn is left");
                    prop_assert!(cost("", expected) > window, "shortened though the turn fit whole");
                    prop_assert!(rs.is_empty(), "the summary yields before the turn is shortened");
                    let partial = out.shortened.iter().filter(|s| s.to_chars > MIN_SHORTENED_HEAD_CHARS).count();
                    prop_assert!(partial <= 1, "only the last one shortened stops above its minimum");
                    for (i, (got, orig)) in out.messages.iter().zip(expected).enumerate() {
                        match out.shortened.iter().find(|s| s.index == i) {
                            None => prop_assert_eq!(got, orig),
                            Some(s) => {
                                prop_assert_eq!(got.role, Role::Tool);
                                prop_assert_eq!(s.from_chars, orig.content.chars().count());
                                let head: String = orig.content.chars().take(s.to_chars).collect();
                                prop_assert!(got.content.starts_with(&head));
                                let marker = "pincer shortened this tool result from";
                                prop_assert!(got.content.contains(marker));
                                let mut same = got.clone();
                                same.content = orig.content.clone();
                                prop_assert_eq!(&same, orig, "only the content changes");
                            }
                        }
                    }
                }
            }
            Err(TrimError::ContextOverflow { needed, available, by }) => {
                // Only when the current turn, maximally shortened, does not
                // fit with the prompt and tools and no summary at all: so
                // whenever it fits, trim succeeds.
                for k in 0..n {
                    prop_assert!(cost_k(k) > window, "dropping {} turns would fit", k);
                }
                let last = n.saturating_sub(1);
                let turn = maximally_shortened(&msgs[start(last)..], &counter);
                let full = cost("", &turn);
                prop_assert!(full > window, "the shortened current turn would fit");
                let base = cost("", &[]);
                prop_assert_eq!(needed, full - base);
                prop_assert_eq!(available, window.saturating_sub(base));
                prop_assert_eq!(by, full - window);
            }
        }
    }

    #[test]
    fn repair_leaves_no_orphan_and_is_idempotent(
        sess in session(),
        ops in vec(0u8..6, 1..40),
    ) {
        let damaged = damage(sess, &ops);
        let (out, report) = repair_orphans(damaged.clone());
        prop_assert_eq!(orphans(&out), Ok(()));
        let (again, second) = repair_orphans(out.clone());
        prop_assert_eq!(&again, &out);
        prop_assert!(second.is_clean());
        // Only tool results are removed or added.
        let non_tool = |m: &[Message]| m.iter().filter(|m| m.role != Role::Tool).cloned().collect::<Vec<_>>();
        prop_assert_eq!(non_tool(&out), non_tool(&damaged));
        let tools = |m: &[Message]| m.iter().filter(|m| m.role == Role::Tool).count();
        prop_assert_eq!(
            tools(&out),
            tools(&damaged) - report.removed_orphan_results + report.synthetic_results.len()
        );
        let synthetic: Vec<String> = out
            .iter()
            .filter(|m| m.content == INTERRUPTED_RESULT)
            .filter_map(|m| m.tool_call_id.clone())
            .collect();
        prop_assert_eq!(&synthetic, &report.synthetic_results);
        if orphans(&damaged).is_ok() {
            prop_assert!(report.is_clean());
            prop_assert_eq!(out, damaged);
        }
    }

    #[test]
    fn turns_cover_the_messages(sess in session(), ops in vec(0u8..6, 1..10)) {
        let msgs = damage(sess, &ops);
        let ts = turns(&msgs);
        let mut next = 0;
        for (i, r) in ts.iter().enumerate() {
            prop_assert_eq!(r.start, next);
            prop_assert!(r.end > r.start);
            prop_assert!(i == 0 || msgs[r.start].role == Role::User);
            prop_assert!(msgs[r.start + 1..r.end].iter().all(|m| m.role != Role::User));
            next = r.end;
        }
        prop_assert_eq!(next, msgs.len());
    }

    #[test]
    fn fold_summary_matches_the_obvious_fold(
        existing in vec("[a-zé ]{0,30}", 0..6),
        new in vec("[a-z✓\n]{0,30}", 0..6),
        max in 0usize..120,
    ) {
        let existing = existing.join("\n");
        let got = fold_summary(&existing, &new, max);
        prop_assert_eq!(&got, &naive_fold(&existing, &new, max));
        prop_assert!(got.chars().count() <= max);
    }
}
