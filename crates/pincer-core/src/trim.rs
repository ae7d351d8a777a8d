//! Turn-boundary context trimming (CX1–CX7).
//!
//! Everything here is pure: it takes messages, a running summary and a
//! [`Budget`], and returns what to send. It never reads the clock, the disk
//! or the environment, so the same input always gives the same output.
//!
//! # Vocabulary
//!
//! - A **turn** ([`turns`]) starts at each [`Role::User`] message and runs to
//!   the next one: the user message, every model iteration, tool call and tool
//!   result, and the final reply (CX2). Messages before the first user message
//!   (a stray reply, a stored system notice) form a leading turn of their own.
//!   The last turn is the **current turn**.
//! - The **system prompt is never stored in a session**: the agent rebuilds
//!   it for every request and counts it in `pinned_tokens` (CX4), so it can
//!   never be trimmed. A `system` message that *is* in a session is history
//!   (a notice), trimmed with its turn like any other message.
//! - The **request cost** of a candidate is `pinned_tokens + tokens(sent
//!   summary) + Σ tokens(kept messages) + tool_def_tokens + output_reserve`;
//!   a candidate fits when its cost is at most `context_window` (CX1, CX4).
//!   Tokens are counted by a pluggable [`TokenCounter`] (CX6), chars/4 by
//!   default ([`CharRatio`]), calibrated from what the provider reports.
//! - The **running summary** is kept whole in the session (up to
//!   `summary_max_chars`), but a request sends only its newest lines
//!   ([`fit_summary`]), at most `1 / SUMMARY_SHARE` of the window: on a
//!   small window it yields its room to the conversation instead of growing
//!   until nothing fits.
//!
//! # Algorithm of [`trim`]
//!
//! 1. Count every message once and keep suffix sums, so the message cost of
//!    "drop the first `k` turns" is one lookup.
//! 2. If everything fits (with the summary held to its share), return it
//!    unchanged.
//! 3. Otherwise find the smallest `k` (`1 ≤ k ≤ turns-1`) whose cost fits.
//!    Dropped turns are folded into the summary ([`summarize_turn`],
//!    [`fold_summary`], CX5), so the summary grows with `k` and the cost is
//!    *not* monotone in `k`: every `k` is evaluated in order. A binary
//!    search on the message cost alone (a lower bound of the real cost)
//!    skips the `k` that cannot fit whatever the summary. From there a
//!    sliding window over summary lines moves one turn at a time; only the
//!    newest lines that fit in `summary_max_chars` are ever built, so a
//!    10 000-turn session costs a handful of [`summarize_turn`] calls, not
//!    10 000.
//! 4. If no `k` fits, keep only the current turn (CX3: it is never
//!    dropped). The summary yields first: if the whole current turn fits,
//!    the summary sent gets what it leaves (possibly nothing); otherwise
//!    none is sent and the current turn's tool results are shortened,
//!    largest first, keeping the head of each on a char boundary and
//!    appending a visible marker ("`[… pincer shortened this tool result
//!    from N to M chars …]`"). Each result is shortened just enough: when
//!    cutting the largest one to its minimum ([`MIN_SHORTENED_HEAD_CHARS`]
//!    chars of head) would free more than needed, a binary search finds the
//!    longest head that still fits, and the smaller results are left
//!    intact.
//! 5. Only if the current turn still does not fit with every tool result at
//!    its minimum and no summary, fail with [`TrimError::ContextOverflow`],
//!    saying by how much: so whenever the current turn with the prompt and
//!    the tools can fit, trim succeeds.
//!
//! # Invariants (checked by the property tests below)
//!
//! - The kept messages are a suffix of the input that starts on a turn
//!   boundary (`messages[dropped_messages..]`), and the current turn is always
//!   in it. Only tool result *contents* of the current turn are ever changed.
//! - No orphans: a tool call and all of its results sit between the same two
//!   user messages, so dropping whole turns never separates them. This needs
//!   an input where each assistant tool call is directly followed by its
//!   results, which is what [`repair_orphans`] produces (CX7): run it on a
//!   loaded session before trimming.
//! - `Ok` means the returned request fits, and `tokens_after` is its cost
//!   recomputed from the returned messages and the summary sent. The
//!   summary sent is the newest part of the kept summary, within its share.
//! - `k` is minimal: no fewer dropped turns would fit.
//! - The returned summary equals `fold_summary(summary, [summarize_turn(t)
//!   for each dropped turn t], summary_max_chars)` (or the input summary,
//!   untouched, when nothing is dropped).
//! - `Err` means even the current turn alone, maximally shortened and with
//!   no summary, does not fit.
//!
//! # Cost
//!
//! [`trim`] reads each message once (to count it) and clones only the kept
//! ones; the per-`k` work is bounded by `summary_max_chars`, not by the
//! session length. Tool-call arguments are counted on their stored JSON
//! text. [`repair_orphans`] first checks read-only and hands a
//! valid list back untouched, so the common case moves nothing. The
//! `trim/10k_turns` bench (target < 5 ms) exercises this.

use crate::message::{Message, Role};
use std::borrow::Cow;
use std::collections::VecDeque;
use std::ops::Range;

/// Tokens counted for each message on top of its text (role, separators).
pub const MESSAGE_OVERHEAD_TOKENS: usize = 4;

/// A shortened tool result keeps at least this many chars of its head.
pub const MIN_SHORTENED_HEAD_CHARS: usize = 64;

/// The content of the synthetic result [`repair_orphans`] gives a tool call
/// that never got one.
pub const INTERRUPTED_RESULT: &str =
    "[interrupted: pincer stopped before this tool call finished; it may or may not have run]";

/// How many chars of the user message and of the reply a summary line quotes.
const EXCERPT_CHARS: usize = 100;
/// How many distinct tool names a summary line lists before "…".
const MAX_SUMMARY_TOOLS: usize = 8;
/// How many chars of one tool name a summary line quotes.
const TOOL_NAME_CHARS: usize = 40;

// ---------------------------------------------------------------------------
// CX6: token counting
// ---------------------------------------------------------------------------

/// What one image in a message is counted as: about what Anthropic
/// charges for a 1092×1092 picture (OpenAI's high-detail tiles cost less).
pub const IMAGE_TOKENS: usize = 1600;

/// CX6: pluggable token counting.
pub trait TokenCounter {
    /// Tokens of a piece of text.
    fn text_tokens(&self, text: &str) -> usize;

    /// Tokens of a whole message: its content, each tool call's id, name and
    /// arguments (as serialised JSON), a tool result's call id and tool name,
    /// plus [`MESSAGE_OVERHEAD_TOKENS`].
    fn message_tokens(&self, m: &Message) -> usize {
        let mut n = MESSAGE_OVERHEAD_TOKENS.saturating_add(self.text_tokens(&m.content));
        for call in &m.tool_calls {
            n = n
                .saturating_add(self.text_tokens(&call.id))
                .saturating_add(self.text_tokens(&call.name))
                .saturating_add(self.text_tokens(call.arguments.get()));
        }
        if let Some(id) = &m.tool_call_id {
            n = n.saturating_add(self.text_tokens(id));
        }
        if let Some(name) = &m.name {
            n = n.saturating_add(self.text_tokens(name));
        }
        // An image costs what the vision APIs charge for a large one, not
        // its base64 length.
        n.saturating_add(m.images.len().saturating_mul(IMAGE_TOKENS))
    }
}

/// The default counter: `chars / chars_per_token`, rounded up.
#[derive(Debug, Clone)]
pub struct CharRatio {
    chars_per_token: f64,
}

impl CharRatio {
    /// The ratio the default counter starts from.
    pub const DEFAULT_CHARS_PER_TOKEN: f64 = 4.0;
    /// The lowest ratio [`CharRatio::new`] and [`CharRatio::calibrate`] allow.
    pub const MIN_CHARS_PER_TOKEN: f64 = 1.0;
    /// The highest ratio [`CharRatio::new`] and [`CharRatio::calibrate`] allow.
    pub const MAX_CHARS_PER_TOKEN: f64 = 12.0;

    /// A counter with the given ratio, clamped to
    /// [`MIN_CHARS_PER_TOKEN`](Self::MIN_CHARS_PER_TOKEN)..=[`MAX_CHARS_PER_TOKEN`](Self::MAX_CHARS_PER_TOKEN)
    /// (NaN gives the default, 4).
    pub fn new(chars_per_token: f64) -> Self {
        Self {
            chars_per_token: clamp_ratio(chars_per_token),
        }
    }

    pub fn chars_per_token(&self) -> f64 {
        self.chars_per_token
    }

    /// Tokens of a text of `chars` chars: `chars / chars_per_token`, rounded
    /// up.
    pub fn tokens_for_chars(&self, chars: usize) -> usize {
        let q = chars as f64 / self.chars_per_token;
        // `as` truncates (and saturates); rounding up by hand avoids a libm
        // call on targets without SSE4.1, which shows in a 40 000-message trim.
        let t = q as usize;
        if (t as f64) < q {
            t.saturating_add(1)
        } else {
            t
        }
    }

    /// Calibrates from provider-reported usage: `chars` is how many chars we
    /// sent, `reported_tokens` how many tokens the provider counted. The
    /// ratio moves halfway toward `chars / reported_tokens` (an exponential
    /// moving average, so one odd report cannot swing it), clamped as in
    /// [`CharRatio::new`]. A report of 0 tokens or 0 chars carries no
    /// information and is ignored.
    pub fn calibrate(&mut self, chars: usize, reported_tokens: usize) {
        if reported_tokens == 0 || chars == 0 {
            return;
        }
        let observed = chars as f64 / reported_tokens as f64;
        self.chars_per_token = clamp_ratio(0.5 * self.chars_per_token + 0.5 * observed);
    }
}

impl Default for CharRatio {
    fn default() -> Self {
        Self::new(Self::DEFAULT_CHARS_PER_TOKEN)
    }
}

impl TokenCounter for CharRatio {
    fn text_tokens(&self, text: &str) -> usize {
        let chars = if text.is_ascii() {
            text.len()
        } else {
            text.chars().count()
        };
        self.tokens_for_chars(chars)
    }
}

fn clamp_ratio(r: f64) -> f64 {
    if r.is_nan() {
        CharRatio::DEFAULT_CHARS_PER_TOKEN
    } else {
        r.clamp(
            CharRatio::MIN_CHARS_PER_TOKEN,
            CharRatio::MAX_CHARS_PER_TOKEN,
        )
    }
}

// ---------------------------------------------------------------------------
// CX1–CX3: the budget, turns and trimming
// ---------------------------------------------------------------------------

/// CX1: what must fit in the model's context window. All in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// The model's window.
    pub context_window: usize,
    /// Tool definitions sent with every request.
    pub tool_def_tokens: usize,
    /// Kept free for the reply.
    pub output_reserve: usize,
    /// CX4: system prompt + pinned memory, always sent.
    pub pinned_tokens: usize,
}

impl Budget {
    /// Tokens every request spends before any message or summary.
    fn fixed_tokens(&self) -> usize {
        self.pinned_tokens
            .saturating_add(self.tool_def_tokens)
            .saturating_add(self.output_reserve)
    }
}

/// Turn boundaries (CX2). A turn starts at each [`Role::User`] message and
/// runs to the next user message. Messages before the first user message form
/// a leading turn of their own. The ranges are non-empty, in order, and cover
/// all of `msgs`; an empty list has no turns.
pub fn turns(msgs: &[Message]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, m) in msgs.iter().enumerate() {
        if m.role == Role::User && i > start {
            out.push(start..i);
            start = i;
        }
    }
    if start < msgs.len() {
        out.push(start..msgs.len());
    }
    out
}

/// What [`trim`] works on.
#[derive(Debug, Clone, Copy)]
pub struct TrimInput<'a> {
    /// The session's messages, oldest first, as repaired by
    /// [`repair_orphans`].
    pub messages: &'a [Message],
    /// The running summary of turns dropped earlier (CX5).
    pub summary: &'a str,
    /// The folded summary never grows past this many chars.
    pub summary_max_chars: usize,
    pub budget: Budget,
}

/// The outcome of [`trim`].
#[derive(Debug, Clone, PartialEq)]
pub struct Trimmed<'a> {
    /// Length of the dropped prefix of the input messages (a turn boundary).
    pub dropped_messages: usize,
    pub dropped_turns: usize,
    pub kept_turns: usize,
    /// The kept suffix, possibly with shortened tool results. Borrowed from
    /// the input unless something was shortened, so trimming a long session
    /// copies nothing.
    pub messages: Cow<'a, [Message]>,
    /// Which kept messages were shortened, by index into `messages`, ascending.
    pub shortened: Vec<Shortened>,
    /// The running summary after folding in the dropped turns (the input
    /// summary, untouched, when nothing was dropped): what the session
    /// keeps.
    pub summary: String,
    /// What of [`Trimmed::summary`] this request sends: its newest lines, at
    /// most a [`SUMMARY_SHARE`] of the window, and less when the current
    /// turn needs the room (the summary yields first).
    pub request_summary: String,
    /// Request cost before trimming: pinned + summary + all messages + tool
    /// definitions + output reserve.
    pub tokens_before: usize,
    /// The same for what is returned (with [`Trimmed::request_summary`]).
    pub tokens_after: usize,
}

/// The running summary a request sends takes at most `1 / SUMMARY_SHARE`
/// of the context window, so on a small window it can never crowd out the
/// conversation (a 4 000-char summary is about the whole of a 1 000-token
/// window).
pub const SUMMARY_SHARE: usize = 4;

/// The newest lines of `summary` whose tokens are at most `max_tokens`; when
/// even the newest line alone is over, its longest head that fits (cut with
/// `…`), or nothing. The oldest lines go first.
pub fn fit_summary(summary: &str, max_tokens: usize, counter: &dyn TokenCounter) -> String {
    if counter.text_tokens(summary) <= max_tokens {
        return summary.to_owned();
    }
    let lines: Vec<&str> = summary.split('\n').collect();
    // The fewest oldest lines to drop: tokens of a suffix of lines only grow
    // with its length, so the first suffix that fits is the longest.
    for from in 1..lines.len() {
        let rest = lines[from..].join("\n");
        if counter.text_tokens(&rest) <= max_tokens {
            return rest;
        }
    }
    let newest = lines.last().copied().unwrap_or_default();
    let chars = newest.chars().count();
    // The longest head (plus "…") that fits; tokens grow with the head.
    let (mut lo, mut hi) = (0usize, chars);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if counter.text_tokens(&cut_chars(newest, mid)) <= max_tokens {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    if lo == 0 {
        return String::new();
    }
    cut_chars(newest, lo)
}

/// One tool result [`trim`] shortened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shortened {
    /// Index into [`Trimmed::messages`].
    pub index: usize,
    /// Chars of the original content.
    pub from_chars: usize,
    /// Chars of the original content that were kept (its head); the marker
    /// comes on top.
    pub to_chars: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrimError {
    /// CX3: even the current turn alone, with its tool results shortened
    /// and no summary, does not fit. `needed` is what the current turn's
    /// messages take after shortening, `available` what the window leaves
    /// them after the tool definitions, output reserve and pinned prompt,
    /// and `by` how many tokens the whole request is over the window.
    #[error(
        "the current turn does not fit the context window: it needs {needed} tokens, {available} are available (over by {by}); raise the context window, lower the output reserve or send less"
    )]
    ContextOverflow {
        needed: usize,
        available: usize,
        by: usize,
    },
}

/// Trims `input` to its budget; see the [module docs](self) for the
/// algorithm. `input.messages` must be repaired by [`repair_orphans`] for the
/// result to be free of orphans.
pub fn trim<'a>(
    input: &TrimInput<'a>,
    counter: &dyn TokenCounter,
) -> Result<Trimmed<'a>, TrimError> {
    let msgs = input.messages;
    let window = input.budget.context_window;
    let fixed = input.budget.fixed_tokens();

    // One pass over the messages: each is counted once, and turn starts
    // (as in `turns`) are noted on the way.
    let mut tokens = Vec::with_capacity(msgs.len());
    let mut starts = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        if i == 0 || m.role == Role::User {
            starts.push(i);
        }
        tokens.push(counter.message_tokens(m));
    }
    // suffix[i] = tokens of msgs[i..].
    let mut suffix = Vec::with_capacity(msgs.len() + 1);
    let mut acc = 0usize;
    suffix.push(acc);
    for t in tokens.iter().rev() {
        acc = acc.saturating_add(*t);
        suffix.push(acc);
    }
    suffix.reverse();

    let n_turns = starts.len();
    let share = window / SUMMARY_SHARE;
    let tokens_before = fixed
        .saturating_add(counter.text_tokens(input.summary))
        .saturating_add(suffix[0]);
    let sent = fit_summary(input.summary, share, counter);
    let sent_tokens = counter.text_tokens(&sent);
    let untrimmed = fixed.saturating_add(sent_tokens).saturating_add(suffix[0]);
    if untrimmed <= window {
        return Ok(Trimmed {
            dropped_messages: 0,
            dropped_turns: 0,
            kept_turns: n_turns,
            messages: Cow::Borrowed(msgs),
            shortened: Vec::new(),
            summary: input.summary.to_owned(),
            request_summary: sent,
            tokens_before,
            tokens_after: untrimmed,
        });
    }
    let Some(last) = n_turns.checked_sub(1) else {
        // No messages at all: the summary gets what the prompt and tools
        // leave, and only those alone can be over.
        if fixed > window {
            return Err(overflow(window, fixed, 0));
        }
        let sent = fit_summary(input.summary, (window - fixed).min(share), counter);
        let tokens_after = fixed.saturating_add(counter.text_tokens(&sent));
        return Ok(Trimmed {
            dropped_messages: 0,
            dropped_turns: 0,
            kept_turns: 0,
            messages: Cow::Borrowed(msgs),
            shortened: Vec::new(),
            summary: input.summary.to_owned(),
            request_summary: sent,
            tokens_before,
            tokens_after,
        });
    };

    let keep_from = |k: usize| starts[k];
    let done = |k: usize,
                messages: Cow<'a, [Message]>,
                shortened,
                summary,
                request_summary,
                tokens_after| Trimmed {
        dropped_messages: keep_from(k),
        dropped_turns: k,
        kept_turns: n_turns - k,
        messages,
        shortened,
        summary,
        request_summary,
        tokens_after,
        tokens_before,
    };

    // The message cost alone is a lower bound of the cost and does not grow
    // with k: every k below `k0` is over whatever the summary.
    let k0 = 1 + starts[1..].partition_point(|s| fixed.saturating_add(suffix[*s]) > window);
    let mut summaries = (k0 <= last)
        .then(|| SummaryWindow::new(input.summary, msgs, &starts, input.summary_max_chars, k0));
    if let Some(sw) = summaries.as_mut() {
        loop {
            let summary = sw.render();
            let sent = fit_summary(&summary, share, counter);
            let cost = fixed
                .saturating_add(counter.text_tokens(&sent))
                .saturating_add(suffix[keep_from(sw.k)]);
            if cost <= window {
                let k = sw.k;
                return Ok(done(
                    k,
                    Cow::Borrowed(&msgs[keep_from(k)..]),
                    Vec::new(),
                    summary,
                    sent,
                    cost,
                ));
            }
            if sw.k == last {
                break;
            }
            sw.advance();
        }
    }

    // CX3: keep only the current turn. The summary yields first: it gets
    // what the whole current turn leaves, and nothing once the turn's tool
    // results must be shortened.
    let summary = match (last, &summaries) {
        (0, _) => input.summary.to_owned(),
        (_, Some(sw)) => sw.render(),
        (_, None) => {
            SummaryWindow::new(input.summary, msgs, &starts, input.summary_max_chars, last).render()
        }
    };
    let start = keep_from(last);
    let whole = fixed.saturating_add(suffix[start]);
    if whole <= window {
        let room = (window - whole).min(share);
        let sent = fit_summary(&summary, room, counter);
        let cost = whole.saturating_add(counter.text_tokens(&sent));
        return Ok(done(
            last,
            Cow::Borrowed(&msgs[start..]),
            Vec::new(),
            summary,
            sent,
            cost,
        ));
    }
    let mut kept = msgs[start..].to_vec();
    let mut kept_tokens = tokens[start..].to_vec();
    let shortened = shorten_tool_results(&mut kept, &mut kept_tokens, whole - window, counter);
    let needed = kept_tokens.iter().fold(0usize, |a, t| a.saturating_add(*t));
    let cost = fixed.saturating_add(needed);
    if cost > window {
        return Err(overflow(window, fixed, needed));
    }
    Ok(done(
        last,
        Cow::Owned(kept),
        shortened,
        summary,
        String::new(),
        cost,
    ))
}

fn overflow(window: usize, base: usize, needed: usize) -> TrimError {
    TrimError::ContextOverflow {
        needed,
        available: window.saturating_sub(base),
        by: base.saturating_add(needed).saturating_sub(window),
    }
}

/// The summary after dropping the first `k` turns, moved one turn at a time.
/// Turn `j` is `msgs[starts[j]..starts[j + 1]]` (the last one runs to the end).
///
/// Over the line sequence `L = existing lines ++ [summarize_turn(turn j) for
/// j in 0..k]`, the folded summary is the longest suffix of `L` whose joined
/// length fits `max_chars` (or the newest line alone, cut). When `k` grows by
/// one, that suffix's start never moves back (a suffix that fits after adding
/// a line fitted before), so the window only pushes at the back and pops at
/// the front, and each turn's line is built at most once.
struct SummaryWindow<'a> {
    existing: Vec<&'a str>,
    msgs: &'a [Message],
    starts: &'a [usize],
    max_chars: usize,
    /// The kept lines, oldest first, with their char counts.
    lines: VecDeque<(Cow<'a, str>, usize)>,
    /// Chars of the kept lines joined with '\n'.
    chars: usize,
    /// Turns dropped (≥ 1).
    k: usize,
}

impl<'a> SummaryWindow<'a> {
    fn new(
        existing: &'a str,
        msgs: &'a [Message],
        starts: &'a [usize],
        max_chars: usize,
        k: usize,
    ) -> Self {
        let mut w = Self {
            existing: existing.split('\n').filter(|l| !l.is_empty()).collect(),
            msgs,
            starts,
            max_chars,
            lines: VecDeque::new(),
            chars: 0,
            k,
        };
        // Newest first, until the next older line would not fit.
        for idx in (0..w.existing.len() + k).rev() {
            let line = w.line(idx);
            let len = line.chars().count();
            if !w.lines.is_empty() && w.joined_with(len) > max_chars {
                break;
            }
            w.chars = w.joined_with(len);
            w.lines.push_front((line, len));
            if w.chars > max_chars {
                break; // the newest line alone is too long: it gets cut
            }
        }
        w
    }

    /// Line `idx` of the sequence `L`.
    fn line(&self, idx: usize) -> Cow<'a, str> {
        match self.existing.get(idx) {
            Some(l) => Cow::Borrowed(*l),
            None => {
                let j = idx - self.existing.len();
                let end = self.starts.get(j + 1).copied().unwrap_or(self.msgs.len());
                Cow::Owned(summarize_turn(&self.msgs[self.starts[j]..end]))
            }
        }
    }

    fn joined_with(&self, extra: usize) -> usize {
        if self.lines.is_empty() {
            extra
        } else {
            self.chars.saturating_add(1).saturating_add(extra)
        }
    }

    /// Drops one more turn.
    fn advance(&mut self) {
        let line = self.line(self.existing.len() + self.k);
        self.k += 1;
        let len = line.chars().count();
        self.chars = self.joined_with(len);
        self.lines.push_back((line, len));
        while self.lines.len() > 1 && self.chars > self.max_chars {
            if let Some((_, l)) = self.lines.pop_front() {
                self.chars -= l + 1;
            }
        }
    }

    fn render(&self) -> String {
        if self.chars > self.max_chars {
            // Only ever a single line (see `new` and `advance`).
            return self
                .lines
                .back()
                .map(|(l, _)| cut_chars(l, self.max_chars))
                .unwrap_or_default();
        }
        let mut s = String::with_capacity(self.chars);
        for (i, (l, _)) in self.lines.iter().enumerate() {
            if i > 0 {
                s.push('\n');
            }
            s.push_str(l);
        }
        s
    }
}

/// Shortens tool results in `kept`, largest first, until `excess` tokens are
/// freed or every one is at its minimum. Updates `kept_tokens` to match.
fn shorten_tool_results(
    kept: &mut [Message],
    kept_tokens: &mut [usize],
    mut excess: usize,
    counter: &dyn TokenCounter,
) -> Vec<Shortened> {
    let mut candidates: Vec<(usize, usize)> = kept
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Tool)
        .map(|(i, m)| (m.content.chars().count(), i))
        .filter(|(chars, _)| *chars > MIN_SHORTENED_HEAD_CHARS)
        .collect();
    // Largest first; ties in message order, so the result is deterministic.
    candidates.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));

    let mut shortened = Vec::new();
    for (from, i) in candidates {
        if excess == 0 {
            break;
        }
        let current = kept_tokens[i];
        let original = std::mem::take(&mut kept[i].content);
        kept[i].content = shortened_content(&original, from, MIN_SHORTENED_HEAD_CHARS);
        let at_min = counter.message_tokens(&kept[i]);
        if at_min >= current {
            kept[i].content = original; // the marker would cost more than it saves
            continue;
        }
        let mut head = MIN_SHORTENED_HEAD_CHARS;
        if current - at_min >= excess {
            // Just enough: the longest head that still frees `excess`.
            // `lo` always frees enough; assumes tokens grow with the head.
            let (mut lo, mut hi) = (MIN_SHORTENED_HEAD_CHARS, from - 1);
            while lo < hi {
                let mid = lo + (hi - lo).div_ceil(2);
                kept[i].content = shortened_content(&original, from, mid);
                if current.saturating_sub(counter.message_tokens(&kept[i])) >= excess {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            head = lo;
            kept[i].content = shortened_content(&original, from, head);
        }
        let now = counter.message_tokens(&kept[i]);
        excess = excess.saturating_sub(current.saturating_sub(now));
        kept_tokens[i] = now;
        shortened.push(Shortened {
            index: i,
            from_chars: from,
            to_chars: head,
        });
    }
    shortened.sort_by_key(|s| s.index);
    shortened
}

/// The first `head_chars` chars of `original` (`from_chars` long) plus the
/// visible marker.
fn shortened_content(original: &str, from_chars: usize, head_chars: usize) -> String {
    let cut = original
        .char_indices()
        .nth(head_chars)
        .map_or(original.len(), |(b, _)| b);
    format!(
        "{}\n[… pincer shortened this tool result from {from_chars} to {head_chars} chars to fit the context window …]",
        &original[..cut]
    )
}

// ---------------------------------------------------------------------------
// CX7: orphan repair
// ---------------------------------------------------------------------------

/// What [`repair_orphans`] changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// Call ids that got a synthetic "interrupted" result, in order.
    pub synthetic_results: Vec<String>,
    /// Tool results removed because they answered no call of the assistant
    /// message right before them (or answered one twice).
    pub removed_orphan_results: usize,
}

impl RepairReport {
    /// True when the messages were already valid.
    pub fn is_clean(&self) -> bool {
        self.synthetic_results.is_empty() && self.removed_orphan_results == 0
    }
}

/// CX7: makes a loaded message list valid for a provider.
///
/// For each assistant message with tool calls, the contiguous run of tool
/// messages right after it must answer its calls. A call with no result gets
/// a synthetic result ([`INTERRUPTED_RESULT`], named after the call's tool,
/// stamped with the time of the run's last message) inserted right after the
/// run, in call order. A tool message that answers no call of the assistant
/// message right before its run (an orphan, a result after a user message, a
/// second result for the same id) is removed. Nothing else is touched, and
/// repairing a repaired list changes nothing.
///
/// Call ids are assumed unique within one message ([`Message::validate`]);
/// if they are not, each result answers one not-yet-answered call.
pub fn repair_orphans(msgs: Vec<Message>) -> (Vec<Message>, RepairReport) {
    if is_repaired(&msgs) {
        // The usual case: a read-only pass instead of moving every message.
        return (msgs, RepairReport::default());
    }
    let mut out: Vec<Message> = Vec::with_capacity(msgs.len());
    let mut report = RepairReport::default();
    // The open run: where its assistant message sits in `out`, and which of
    // its calls have a result (one buffer, reused for every run).
    let mut open: Option<usize> = None;
    let mut answered: Vec<bool> = Vec::new();
    for m in msgs {
        if m.role == Role::Tool {
            let slot = open.and_then(|at| {
                let id = m.tool_call_id.as_deref()?;
                out[at]
                    .tool_calls
                    .iter()
                    .zip(&answered)
                    .position(|(call, done)| !*done && call.id == id)
            });
            match slot {
                Some(pos) => {
                    answered[pos] = true;
                    out.push(m);
                }
                None => report.removed_orphan_results += 1,
            }
            continue;
        }
        if let Some(at) = open.take() {
            close_run(&mut out, at, &answered, &mut report);
        }
        if m.role == Role::Assistant && !m.tool_calls.is_empty() {
            answered.clear();
            answered.resize(m.tool_calls.len(), false);
            open = Some(out.len());
        }
        out.push(m);
    }
    if let Some(at) = open {
        close_run(&mut out, at, &answered, &mut report);
    }
    (out, report)
}

/// True when [`repair_orphans`] has nothing to do: every tool call is
/// followed by exactly one result for each of its ids, and there is no other
/// tool message.
pub fn is_repaired(msgs: &[Message]) -> bool {
    let mut i = 0;
    while i < msgs.len() {
        let m = &msgs[i];
        i += 1;
        match m.role {
            Role::Tool => return false,
            Role::Assistant if !m.tool_calls.is_empty() => {
                let run = msgs[i..]
                    .iter()
                    .take_while(|r| r.role == Role::Tool)
                    .count();
                if run != m.tool_calls.len() {
                    return false;
                }
                // As many results as calls, each answering a call, no two the
                // same: one result per call.
                let results = &msgs[i..i + run];
                for (j, r) in results.iter().enumerate() {
                    let Some(id) = r.tool_call_id.as_deref() else {
                        return false;
                    };
                    if !m.tool_calls.iter().any(|c| c.id == id)
                        || results[..j]
                            .iter()
                            .any(|p| p.tool_call_id.as_deref() == Some(id))
                    {
                        return false;
                    }
                }
                i += run;
            }
            _ => {}
        }
    }
    true
}

/// Appends a synthetic result for each call of `out[at]` not `answered`.
fn close_run(out: &mut Vec<Message>, at: usize, answered: &[bool], report: &mut RepairReport) {
    if answered.iter().all(|done| *done) {
        return;
    }
    let ts = out.last().map(|m| m.ts).unwrap_or_default();
    let missing: Vec<Message> = out[at]
        .tool_calls
        .iter()
        .zip(answered)
        .filter(|(_, done)| !**done)
        .map(|(call, _)| Message {
            role: Role::Tool,
            content: INTERRUPTED_RESULT.to_owned(),
            ts,
            tool_calls: Vec::new(),
            tool_call_id: Some(call.id.clone()),
            name: Some(call.name.clone()),
            provider: None,
            images: Vec::new(),
        })
        .collect();
    for m in missing {
        if let Some(id) = &m.tool_call_id {
            report.synthetic_results.push(id.clone());
        }
        out.push(m);
    }
}

// ---------------------------------------------------------------------------
// CX5: the running summary
// ---------------------------------------------------------------------------

/// CX5: a deterministic extractive one-line summary of a turn:
///
/// `- [2026-11-30T11:43] user: <first 100 chars> | tools: file_read, shell | reply: <first 100 chars>`
///
/// The timestamp is the minute of the turn's user message; the quoted text is
/// its content and the content of the last assistant message that has any,
/// whitespace collapsed, cut on a char boundary with "…". Tools are the
/// distinct names called, in first-call order (at most 8, then "…"). A turn
/// with no reply says "no reply"; a leading turn with no user message quotes
/// its first message under that message's role. The line never contains a
/// newline, and the same turn always gives the same line.
pub fn summarize_turn(turn: &[Message]) -> String {
    let Some(head) = turn
        .iter()
        .find(|m| m.role == Role::User)
        .or_else(|| turn.first())
    else {
        return "- (empty turn)".to_owned();
    };
    let ts: String = head.ts.to_string().chars().take(16).collect();
    let mut line = format!(
        "- [{ts}] {}: {}",
        head.role.as_str(),
        excerpt(&head.content, EXCERPT_CHARS)
    );

    let mut names: Vec<&str> = Vec::new();
    let mut more = false;
    for call in turn.iter().flat_map(|m| &m.tool_calls) {
        if names.contains(&call.name.as_str()) {
            continue;
        }
        if names.len() == MAX_SUMMARY_TOOLS {
            more = true;
            break;
        }
        names.push(&call.name);
    }
    if !names.is_empty() {
        line.push_str(" | tools: ");
        for (i, name) in names.iter().enumerate() {
            if i > 0 {
                line.push_str(", ");
            }
            line.push_str(&excerpt(name, TOOL_NAME_CHARS));
        }
        if more {
            line.push_str(", …");
        }
    }

    let reply = turn
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant && m.content.chars().any(|c| !c.is_whitespace()));
    match reply {
        Some(m) => {
            line.push_str(" | reply: ");
            line.push_str(&excerpt(&m.content, EXCERPT_CHARS));
        }
        None => line.push_str(" | no reply"),
    }
    line
}

/// At most `max` chars of `text`, whitespace runs collapsed to one space and
/// the ends trimmed, with "…" appended when something was cut. Reads only as
/// much of `text` as it needs.
fn excerpt(text: &str, max: usize) -> String {
    let mut out = String::new();
    let mut n = 0;
    let mut pending_space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            pending_space = n > 0;
            continue;
        }
        let need = if pending_space { 2 } else { 1 };
        if n + need > max {
            out.push('…');
            return out;
        }
        if pending_space {
            out.push(' ');
            n += 1;
            pending_space = false;
        }
        out.push(c);
        n += 1;
    }
    out
}

/// `line` cut to at most `max` chars on a char boundary, ending in "…" when
/// cut.
fn cut_chars(line: &str, max: usize) -> String {
    if line.chars().count() <= max {
        return line.to_owned();
    }
    if max == 0 {
        return String::new();
    }
    let mut s: String = line.chars().take(max - 1).collect();
    s.push('…');
    s
}

/// Folds new summary lines (oldest first) after `existing`, then drops the
/// oldest lines until the result is at most `max_chars` chars; if the newest
/// line alone is longer, it is cut (with "…"). Lines are separated by '\n';
/// empty lines are dropped and a new line holding '\n' counts as several.
/// Deterministic.
///
/// Works newest first and stops at the cap, so its cost depends on
/// `max_chars`, not on how much history there is.
pub fn fold_summary(existing: &str, new_lines: &[String], max_chars: usize) -> String {
    let newest_first = new_lines
        .iter()
        .rev()
        .flat_map(|l| l.rsplit('\n'))
        .chain(existing.rsplit('\n'))
        .filter(|l| !l.is_empty());
    let mut kept: Vec<&str> = Vec::new();
    let mut chars = 0usize;
    for line in newest_first {
        let len = line.chars().count();
        if kept.is_empty() {
            if len > max_chars {
                return cut_chars(line, max_chars);
            }
            chars = len;
        } else {
            if chars.saturating_add(1).saturating_add(len) > max_chars {
                break;
            }
            chars += 1 + len;
        }
        kept.push(line);
    }
    kept.reverse();
    kept.join("\n")
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests;

#[cfg(test)]
mod props;
