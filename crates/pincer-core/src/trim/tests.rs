use super::*;
use crate::message::ToolCall;
use serde_json::json;

pub(super) const TS: &str = "2026-11-30T11:43:45.123Z";

pub(super) fn fixed_ts(mut m: Message) -> Message {
    m.ts = crate::message::Timestamp::parse(TS).expect("ts");
    m
}
pub(super) fn user(c: &str) -> Message {
    fixed_ts(Message::user(c))
}
pub(super) fn reply(c: &str) -> Message {
    fixed_ts(Message::assistant(c))
}
pub(super) fn calls(c: &str, calls: &[(&str, &str)]) -> Message {
    let calls = calls
        .iter()
        .map(|(id, name)| {
            ToolCall::new(
                (*id).to_owned(),
                (*name).to_owned(),
                &json!({"path": "notes.txt"}),
            )
        })
        .collect();
    fixed_ts(Message::assistant_calls(c, calls))
}
pub(super) fn result(id: &str, name: &str, c: &str) -> Message {
    fixed_ts(Message::tool_result(id, name, c))
}

/// Err(description) when a tool call lacks exactly one result right after
/// it, or a tool result answers no call of the assistant message before it.
pub(super) fn orphans(msgs: &[Message]) -> Result<(), String> {
    let mut i = 0;
    while i < msgs.len() {
        let m = &msgs[i];
        if m.role == Role::Tool {
            return Err(format!("result {i} follows no tool call: {m:?}"));
        }
        i += 1;
        if m.role != Role::Assistant || m.tool_calls.is_empty() {
            continue;
        }
        let mut seen: Vec<&str> = Vec::new();
        while i < msgs.len() && msgs[i].role == Role::Tool {
            let id = msgs[i].tool_call_id.as_deref().unwrap_or("");
            if !m.tool_calls.iter().any(|c| c.id == id) {
                return Err(format!("result {i} answers no call of its assistant: {id}"));
            }
            if seen.contains(&id) {
                return Err(format!("result {i} answers {id} twice"));
            }
            seen.push(id);
            i += 1;
        }
        if seen.len() != m.tool_calls.len() {
            return Err(format!(
                "calls {:?} answered only by {seen:?}",
                m.tool_calls
            ));
        }
    }
    Ok(())
}

/// The fold, written the slow obvious way.
pub(super) fn naive_fold(existing: &str, new: &[String], max: usize) -> String {
    let mut lines: Vec<&str> = existing
        .split('\n')
        .chain(new.iter().flat_map(|l| l.split('\n')))
        .filter(|l| !l.is_empty())
        .collect();
    while lines.len() > 1 && lines.join("\n").chars().count() > max {
        lines.remove(0);
    }
    let s = lines.join("\n");
    if s.chars().count() <= max {
        s
    } else if max == 0 {
        String::new()
    } else {
        s.chars().take(max - 1).chain(['…']).collect()
    }
}

pub(super) fn request_cost(
    counter: &dyn TokenCounter,
    budget: Budget,
    summary: &str,
    msgs: &[Message],
) -> usize {
    budget.pinned_tokens
        + budget.tool_def_tokens
        + budget.output_reserve
        + counter.text_tokens(summary)
        + msgs
            .iter()
            .map(|m| counter.message_tokens(m))
            .sum::<usize>()
}

fn budget(window: usize) -> Budget {
    Budget {
        context_window: window,
        tool_def_tokens: 100,
        output_reserve: 200,
        pinned_tokens: 50,
    }
}

fn input<'a>(msgs: &'a [Message], summary: &'a str, max: usize, b: Budget) -> TrimInput<'a> {
    TrimInput {
        messages: msgs,
        summary,
        summary_max_chars: max,
        budget: b,
    }
}

fn dd17_session() -> Vec<Message> {
    vec![
        user("turn 1: hello"),
        reply("hello to you"),
        user("turn 2: what is in notes.txt?"),
        calls("", &[("t1", "file_read")]),
        result("t1", "file_read", "buy milk"),
        reply("It says: buy milk."),
        user("turn 3: thanks"),
        reply("you are welcome"),
        user("turn 4: anything else?"),
        reply("no"),
        user("turn 5: bye"),
        reply("bye"),
    ]
}

#[test]
fn dd17_drops_two_whole_turns_and_never_splits_a_call() {
    let msgs = dd17_session();
    let counter = CharRatio::default();
    let t = turns(&msgs);
    assert_eq!(t.len(), 5);
    let lines: Vec<String> = t[..2]
        .iter()
        .map(|r| summarize_turn(&msgs[r.clone()]))
        .collect();
    let summary2 = fold_summary("", &lines, 10_000);
    let b = budget(0);
    let window = request_cost(&counter, b, &summary2, &msgs[t[2].start..]);
    let b = budget(window);
    let cost1 = request_cost(
        &counter,
        b,
        &fold_summary("", &lines[..1], 10_000),
        &msgs[t[1].start..],
    );
    assert!(cost1 > window, "dropping one turn must not be enough");

    let out = trim(&input(&msgs, "", 10_000, b), &counter).expect("fits");
    assert_eq!(out.dropped_turns, 2);
    assert_eq!(out.kept_turns, 3);
    assert_eq!(out.dropped_messages, t[2].start);
    assert_eq!(out.messages, msgs[t[2].start..].to_vec());
    assert_eq!(out.messages[0].content, "turn 3: thanks");
    assert_eq!(orphans(&out.messages), Ok(()));
    assert!(out.shortened.is_empty());
    assert_eq!(out.summary, summary2);
    assert_eq!(out.summary.lines().count(), 2);
    assert!(out.summary.contains("tools: file_read"), "{}", out.summary);
    assert_eq!(out.tokens_after, window);
    assert_eq!(
        out.tokens_before,
        request_cost(&counter, b, "", &msgs),
        "before counts every message"
    );
}

#[test]
fn nothing_to_drop_returns_everything_unchanged() {
    let msgs = dd17_session();
    let counter = CharRatio::default();
    let out = trim(&input(&msgs, "- old\n", 10, budget(100_000)), &counter).expect("fits");
    assert_eq!(out.messages, msgs);
    assert_eq!(
        (out.dropped_turns, out.kept_turns, out.dropped_messages),
        (0, 5, 0)
    );
    assert_eq!(
        out.summary, "- old\n",
        "untouched, even past summary_max_chars"
    );
    assert_eq!(out.tokens_after, out.tokens_before);
    assert_eq!(
        out.tokens_before,
        request_cost(&counter, budget(0), "- old\n", &msgs)
    );
}

#[test]
fn multiple_calls_per_message_stay_with_their_results() {
    let msgs = vec![
        user("read three files"),
        calls(
            "",
            &[("a", "file_read"), ("b", "file_read"), ("c", "shell")],
        ),
        result("a", "file_read", &"A".repeat(400)),
        result("b", "file_read", &"B".repeat(400)),
        result("c", "shell", &"C".repeat(400)),
        calls("one more", &[("d", "shell"), ("e", "web_fetch")]),
        result("d", "shell", "d"),
        result("e", "web_fetch", "e"),
        reply("done"),
        user("and now?"),
        calls("", &[("f", "shell"), ("g", "shell")]),
        result("f", "shell", "f"),
        result("g", "shell", "g"),
        reply("ok"),
    ];
    assert_eq!(orphans(&msgs), Ok(()));
    let counter = CharRatio::default();
    // Room for the second turn and a little summary, not for the first.
    let b = budget(request_cost(&counter, budget(0), "", &msgs[9..]) + 60);
    let out = trim(&input(&msgs, "", 200, b), &counter).expect("fits");
    assert_eq!(out.dropped_turns, 1);
    assert_eq!(out.messages, msgs[9..].to_vec());
    assert_eq!(orphans(&out.messages), Ok(()));
    assert!(
        out.summary.contains("tools: file_read, shell, web_fetch"),
        "{}",
        out.summary
    );
    // With room for both, every call keeps every result.
    let out = trim(&input(&msgs, "", 200, budget(1_000_000)), &counter).expect("fits");
    assert_eq!(out.messages, msgs);
}

#[test]
fn summary_growth_makes_cost_non_monotone() {
    let counter = CharRatio::new(1.0);
    let msgs = vec![
        user("a"),
        user("hi"),
        calls("", &[("c1", "file_read")]),
        result("c1", "file_read", &"0123456789".repeat(20)),
        user("now"),
        reply("ok"),
    ];
    let t = turns(&msgs);
    let line = |k: usize| summarize_turn(&msgs[t[k].clone()]);
    let b0 = Budget {
        context_window: 0,
        tool_def_tokens: 0,
        output_reserve: 0,
        pinned_tokens: 0,
    };
    let cost = |summary: &str, k: usize| request_cost(&counter, b0, summary, &msgs[t[k].start..]);
    // The window is exactly what the message cost alone says dropping one
    // turn would take ...
    let window = cost("", 1);
    let b = Budget {
        context_window: window,
        ..b0
    };
    // ... but the summary line of the dropped turn makes it not fit, and
    // dropping two does.
    assert!(cost("", 0) > window);
    assert!(cost(&fold_summary("", &[line(0)], 1000), 1) > window);
    let cost2 = cost(&fold_summary("", &[line(0), line(1)], 1000), 2);
    assert!(cost2 <= window);
    let out = trim(&input(&msgs, "", 1000, b), &counter).expect("fits");
    assert_eq!(out.dropped_turns, 2);
    // The summary sent is held to its share of the window.
    assert!(counter.text_tokens(&out.request_summary) <= window / SUMMARY_SHARE);
    assert_eq!(out.tokens_after, cost(&out.request_summary, 2));
    assert!(out.shortened.is_empty());
}

fn big_turn() -> Vec<Message> {
    vec![
        user("old turn"),
        reply("old reply"),
        user("look at these"),
        calls("", &[("a", "file_read"), ("b", "shell")]),
        result("a", "file_read", &"é0123456789".repeat(500)), // 5500 chars
        result("b", "shell", &"x".repeat(3000)),
        reply("seen"),
    ]
}

#[test]
fn an_oversized_current_turn_gets_its_largest_result_shortened_just_enough() {
    let msgs = big_turn();
    let counter = CharRatio::default();
    let b = budget(0);
    // 300 tokens short: cutting the 5500-char result is enough.
    let window = request_cost(&counter, b, "", &msgs[2..]) - 300;
    let b = budget(window);
    let out = trim(&input(&msgs, "", 0, b), &counter).expect("fits after shortening");
    assert_eq!(out.dropped_turns, 1);
    assert_eq!(out.dropped_messages, 2);
    assert_eq!(out.summary, "", "summary_max_chars is 0");
    assert_eq!(out.shortened.len(), 1, "{:?}", out.shortened);
    let s = &out.shortened[0];
    assert_eq!((s.index, s.from_chars), (2, 5500));
    assert!(
        s.to_chars > MIN_SHORTENED_HEAD_CHARS && s.to_chars < 5500,
        "{s:?}"
    );
    let content = &out.messages[2].content;
    let head: String = msgs[4].content.chars().take(s.to_chars).collect();
    assert!(content.starts_with(&head));
    assert!(
        content.ends_with(&format!(
            "\n[… pincer shortened this tool result from 5500 to {} chars to fit the context window …]",
            s.to_chars
        )),
        "{content}"
    );
    // Everything else is intact.
    for i in [0, 1, 3, 4] {
        assert_eq!(out.messages[i], msgs[2 + i]);
    }
    assert!(out.tokens_after <= window);
    assert_eq!(
        out.tokens_after,
        request_cost(&counter, b, "", &out.messages)
    );
    // Just enough: one more char of head would not fit.
    let mut longer = out.messages.to_vec();
    longer[2].content = shortened_content(&msgs[4].content, 5500, s.to_chars + 1);
    assert!(request_cost(&counter, b, "", &longer) > window);
}

#[test]
fn shortening_moves_on_to_the_next_largest_result() {
    let msgs = big_turn();
    let counter = CharRatio::default();
    let b = budget(0);
    // Over by more than the largest result can give.
    let window = request_cost(&counter, b, "", &msgs[2..]) - 1_500;
    let out = trim(&input(&msgs, "", 0, budget(window)), &counter).expect("fits");
    let got: Vec<(usize, usize)> = out
        .shortened
        .iter()
        .map(|s| (s.index, s.to_chars))
        .collect();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(
        got[0],
        (2, MIN_SHORTENED_HEAD_CHARS),
        "the largest goes to its minimum"
    );
    assert_eq!(got[1].0, 3);
    assert!(
        got[1].1 > MIN_SHORTENED_HEAD_CHARS,
        "the next only as far as needed"
    );
    assert!(out.tokens_after <= window);
}

#[test]
fn the_summary_yields_before_the_current_turn_is_shortened() {
    let msgs = big_turn();
    let counter = CharRatio::default();
    let b = budget(0);
    // Without the summary the current turn fits exactly: the summary is
    // kept in the session but not sent, and nothing is shortened.
    let window = request_cost(&counter, b, "", &msgs[2..]);
    let out = trim(&input(&msgs, "", 1000, budget(window)), &counter).expect("fits");
    assert_eq!(out.dropped_turns, 1);
    assert_eq!(out.summary, summarize_turn(&msgs[..2]));
    assert_eq!(out.request_summary, "");
    assert!(out.shortened.is_empty(), "{:?}", out.shortened);
    assert_eq!(out.tokens_after, window);
    // One token more room and the summary's newest part comes back.
    let out = trim(&input(&msgs, "", 1000, budget(window + 8)), &counter).expect("fits");
    assert!(!out.request_summary.is_empty());
    assert!(counter.text_tokens(&out.request_summary) <= 8);
}

/// A long session on a small window: the summary no longer grows until
/// nothing fits (a 30-turn session on an 800-token window used to die with
/// "0 are available").
#[test]
fn a_long_session_on_a_small_window_keeps_trimming() {
    let counter = CharRatio::default();
    let mut msgs = Vec::new();
    let mut summary = String::new();
    let b = Budget {
        context_window: 800,
        tool_def_tokens: 50,
        output_reserve: 50,
        pinned_tokens: 0,
    };
    for i in 0..60 {
        msgs.push(user(&format!(
            "turn {i}: what does the greenhouse log say today?"
        )));
        msgs.push(reply(&format!(
            "reply {i}: {}",
            "it was warm and the vent ran. ".repeat(3)
        )));
        let (kept, folded) = {
            let out = trim(&input(&msgs, &summary, 4000, b), &counter)
                .unwrap_or_else(|e| panic!("turn {i}: {e}"));
            assert!(out.tokens_after <= 800);
            (out.messages.into_owned(), out.summary)
        };
        summary = folded;
        msgs = kept;
    }
    assert!(
        summary.chars().count() > 1000,
        "the kept summary is not thrown away"
    );
}

#[test]
fn with_no_messages_the_summary_gets_what_the_prompt_leaves() {
    let counter = CharRatio::new(1.0);
    let b = Budget {
        context_window: 100,
        tool_def_tokens: 40,
        output_reserve: 40,
        pinned_tokens: 10,
    };
    let long = "x".repeat(500);
    let out = trim(&input(&[], &long, 1000, b), &counter).expect("fits");
    assert!(out.tokens_after <= 100);
    assert_eq!(out.summary.len(), 500, "kept whole in the session");
    let over = Budget {
        pinned_tokens: 30,
        ..b
    };
    assert!(trim(&input(&[], "", 1000, over), &counter).is_err());
}

#[test]
fn fit_summary_keeps_the_newest_lines() {
    let c = CharRatio::new(1.0);
    assert_eq!(fit_summary("a\nbb\nccc", 100, &c), "a\nbb\nccc");
    assert_eq!(fit_summary("a\nbb\nccc", 6, &c), "bb\nccc");
    assert_eq!(fit_summary("a\nbb\nccc", 3, &c), "ccc");
    assert_eq!(fit_summary("a\nbb\nccc", 2, &c), "c…");
    assert_eq!(fit_summary("a\nbb\nccc", 0, &c), "");
}

#[test]
fn a_turn_that_cannot_fit_is_a_context_overflow_saying_by_how_much() {
    let counter = CharRatio::new(1.0);
    let msgs = vec![
        user("old"),
        user(&"u".repeat(1000)),
        calls("", &[("a", "file_read")]),
        result("a", "file_read", &"r".repeat(2000)),
    ];
    let b = Budget {
        context_window: 1000,
        tool_def_tokens: 100,
        output_reserve: 200,
        pinned_tokens: 50,
    };
    let err = trim(&input(&msgs, "", 0, b), &counter).expect_err("cannot fit");
    let mut min = msgs[1..].to_vec();
    min[2].content = format!(
        "{}\n[… pincer shortened this tool result from 2000 to 64 chars to fit the context window …]",
        "r".repeat(64)
    );
    let needed: usize = min.iter().map(|m| counter.message_tokens(m)).sum();
    // The user message alone is 1004 tokens.
    assert!(needed > 1004);
    let available = 1000 - 350;
    assert_eq!(
        err,
        TrimError::ContextOverflow {
            needed,
            available,
            by: needed - available
        }
    );
    let text = err.to_string();
    assert!(
        text.contains(&format!("over by {}", needed - available)),
        "{text}"
    );

    // With the window below the fixed part, `by` counts the whole overshoot.
    let tiny = Budget {
        context_window: 10,
        ..b
    };
    let err = trim(&input(&msgs, "", 0, tiny), &counter).expect_err("cannot fit");
    assert_eq!(
        err,
        TrimError::ContextOverflow {
            needed,
            available: 0,
            by: 350 + needed - 10
        }
    );
}

#[test]
fn repair_inserts_interrupted_results_after_the_run_and_removes_orphans() {
    let msgs = vec![
        result("zz", "shell", "before anything"),
        user("go"),
        calls(
            "",
            &[("a", "file_read"), ("b", "shell"), ("c", "web_fetch")],
        ),
        result("a", "file_read", "A"),
        result("x", "shell", "orphan"),
        result("a", "file_read", "A again"),
        user("next"),
        result("b", "shell", "too late"),
        reply("ok"),
        calls("", &[("d", "shell")]),
    ];
    let (out, report) = repair_orphans(msgs.clone());
    let interrupted = |id: &str, name: &str| result(id, name, INTERRUPTED_RESULT);
    assert_eq!(
        out,
        vec![
            msgs[1].clone(),
            msgs[2].clone(),
            msgs[3].clone(),
            interrupted("b", "shell"),
            interrupted("c", "web_fetch"),
            msgs[6].clone(),
            msgs[8].clone(),
            msgs[9].clone(),
            interrupted("d", "shell"),
        ]
    );
    assert_eq!(
        report,
        RepairReport {
            synthetic_results: vec!["b".into(), "c".into(), "d".into()],
            removed_orphan_results: 4,
        }
    );
    assert!(!report.is_clean());
    assert_eq!(orphans(&out), Ok(()));
    let (again, report) = repair_orphans(out.clone());
    assert_eq!(again, out);
    assert!(report.is_clean());
}

#[test]
fn repair_keeps_results_in_any_order_within_the_run() {
    let msgs = vec![
        user("go"),
        calls("", &[("a", "file_read"), ("b", "shell")]),
        result("b", "shell", "B"),
        result("a", "file_read", "A"),
        reply("done"),
    ];
    let (out, report) = repair_orphans(msgs.clone());
    assert_eq!(out, msgs);
    assert!(report.is_clean());
}

#[test]
fn summarize_turn_is_deterministic_and_cut() {
    let long = format!("{}\n\n  and   more {}", "é".repeat(60), "x".repeat(200));
    let turn = vec![
        user(&long),
        calls("", &[("a", "file_read"), ("b", "shell")]),
        result("a", "file_read", "A"),
        result("b", "shell", "B"),
        calls("let me check again", &[("c", "file_read")]),
        result("c", "file_read", "C"),
        reply("All\ngood."),
    ];
    let line = summarize_turn(&turn);
    assert_eq!(line, summarize_turn(&turn.clone()));
    let quoted: String = format!("{} and more {}…", "é".repeat(60), "x".repeat(30));
    assert_eq!(quoted.chars().count(), 101);
    assert_eq!(
        line,
        format!("- [2026-11-30T11:43] user: {quoted} | tools: file_read, shell | reply: All good.")
    );
    assert!(!line.contains('\n'));

    let interrupted = summarize_turn(&turn[..4]);
    assert!(
        interrupted.ends_with("| tools: file_read, shell | no reply"),
        "{interrupted}"
    );
    let short = summarize_turn(&[user("hi"), reply("hello")]);
    assert_eq!(short, "- [2026-11-30T11:43] user: hi | reply: hello");
    let preamble = summarize_turn(&[fixed_ts(Message::system("You are pincer."))]);
    assert_eq!(
        preamble,
        "- [2026-11-30T11:43] system: You are pincer. | no reply"
    );
    assert_eq!(summarize_turn(&[]), "- (empty turn)");
}

#[test]
fn fold_summary_drops_the_oldest_lines_first() {
    let new = vec!["c".to_owned(), "d".to_owned()];
    assert_eq!(fold_summary("a\nb", &new, 100), "a\nb\nc\nd");
    assert_eq!(fold_summary("a\nb", &new, 5), "b\nc\nd");
    assert_eq!(fold_summary("a\nb", &new, 4), "c\nd");
    assert_eq!(fold_summary("a\nb", &new, 2), "d");
    assert_eq!(fold_summary("a\n\nb\n", &[], 100), "a\nb", "empty lines go");
    assert_eq!(fold_summary("", &["abcdef".to_owned()], 4), "abc…");
    assert_eq!(fold_summary("", &["éééé".to_owned()], 3), "éé…");
    assert_eq!(fold_summary("old", &["abcdef".to_owned()], 0), "");
    assert_eq!(fold_summary("old", &["x\ny".to_owned()], 3), "x\ny");
    for max in 0..12 {
        assert_eq!(
            fold_summary("a\nbb", &new, max),
            naive_fold("a\nbb", &new, max)
        );
    }
}

#[test]
fn calibrate_moves_the_ratio_and_clamps() {
    let mut c = CharRatio::default();
    assert_eq!(c.chars_per_token(), 4.0);
    assert_eq!(c.text_tokens(""), 0);
    assert_eq!(c.text_tokens("abcde"), 2);
    assert_eq!(c.text_tokens("éééé"), 1, "chars, not bytes");
    c.calibrate(1000, 500);
    assert_eq!(c.chars_per_token(), 3.0);
    c.calibrate(1000, 0);
    assert_eq!(c.chars_per_token(), 3.0, "a 0-token report is ignored");
    c.calibrate(1_000_000, 1);
    assert_eq!(c.chars_per_token(), 12.0);
    c.calibrate(1, 1_000_000);
    assert!(
        (c.chars_per_token() - 6.0).abs() < 1e-6,
        "{}",
        c.chars_per_token()
    );
    for _ in 0..10 {
        c.calibrate(1, 1_000_000);
    }
    assert_eq!(c.chars_per_token(), 1.0);
    assert_eq!(CharRatio::new(0.1).chars_per_token(), 1.0);
    assert_eq!(CharRatio::new(f64::NAN).chars_per_token(), 4.0);
    assert_eq!(CharRatio::new(99.0).chars_per_token(), 12.0);
}

#[test]
fn message_tokens_count_calls_and_overhead() {
    let c = CharRatio::new(1.0);
    assert_eq!(c.message_tokens(&user("abc")), 3 + MESSAGE_OVERHEAD_TOKENS);
    let m = calls("hm", &[("id", "shell")]);
    let args = json!({"path": "notes.txt"}).to_string().len();
    assert_eq!(
        c.message_tokens(&m),
        2 + 2 + 5 + args + MESSAGE_OVERHEAD_TOKENS
    );
    let r = result("id", "shell", "out");
    assert_eq!(c.message_tokens(&r), 3 + 2 + 5 + MESSAGE_OVERHEAD_TOKENS);
}

#[test]
fn turns_split_at_user_messages() {
    let msgs = vec![
        fixed_ts(Message::system("sys")),
        reply("stray"),
        user("1"),
        user("2"),
        reply("r"),
        user("3"),
    ];
    assert_eq!(turns(&msgs), vec![0..2, 2..3, 3..5, 5..6]);
    assert_eq!(turns(&msgs[2..]), vec![0..1, 1..3, 3..4]);
    assert!(turns(&[]).is_empty());
}

#[test]
fn a_leading_preamble_is_a_turn_that_can_be_dropped() {
    let msgs = vec![
        fixed_ts(Message::system("s".repeat(4000))),
        user("hi"),
        reply("hello"),
    ];
    let counter = CharRatio::default();
    let out = trim(&input(&msgs, "", 1000, budget(400)), &counter).expect("fits");
    assert_eq!(out.dropped_turns, 1);
    assert_eq!(out.messages, msgs[1..].to_vec());
    assert!(
        out.summary.starts_with("- [2026-11-30T11:43] system: sss"),
        "{}",
        out.summary
    );
}
