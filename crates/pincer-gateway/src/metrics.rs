//! `/metrics` in the Prometheus text format (version 0.0.4): turns, tool
//! calls by how they ended, provider requests, errors and latency,
//! approvals waiting, audit entries, and the gateway's own counters
//! (pairings, lockouts, refusals, open WebSockets).
//!
//! Turn, tool and provider figures come from the [`AgentEvent`]s of the
//! turns this gateway ran (since it started). Provider latency is measured
//! from the event after which the loop asks the model (the turn's start, the
//! last tool result, a failed attempt) to the `model_replied` event: the
//! whole streamed reply as the agent saw it.

use pincer_core::agent::{AgentEvent, ToolStatus};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Instant;

/// Upper bounds of the latency histogram, in seconds.
const BUCKETS: [f64; 13] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

#[derive(Debug, Default, Clone)]
struct ProviderStats {
    replies: u64,
    errors: u64,
    /// Cumulative counts per bucket of [`BUCKETS`], then +Inf.
    buckets: [u64; BUCKETS.len() + 1],
    sum: f64,
}

/// How a turn ended, for `pincer_turns_total{outcome}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnEnd {
    Done,
    Failed,
    Cancelled,
}

/// The gateway's counters.
#[derive(Debug, Default)]
pub struct Metrics {
    turns: [AtomicU64; 3],
    tools: [AtomicU64; 4],
    providers: Mutex<BTreeMap<String, ProviderStats>>,
    pub pairings: AtomicU64,
    pub pairing_failures: AtomicU64,
    pub pairing_locked: AtomicU64,
    pub unauthorized: AtomicU64,
    pub forbidden: AtomicU64,
    pub rate_limited: AtomicU64,
    pub ws_open: AtomicI64,
}

/// Figures the gateway reads at scrape time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gauges {
    pub approvals_pending: usize,
    /// Seq of the trail's last entry; None when the trail cannot be read.
    pub audit_entries: Option<u64>,
    pub sessions_open: usize,
    pub pairing_locked_now: bool,
}

fn tool_index(s: ToolStatus) -> usize {
    match s {
        ToolStatus::Ok => 0,
        ToolStatus::Error => 1,
        ToolStatus::Blocked => 2,
        ToolStatus::Denied => 3,
    }
}

const TOOL_LABELS: [&str; 4] = ["ok", "error", "blocked", "denied"];
const TURN_LABELS: [&str; 3] = ["done", "failed", "cancelled"];

/// A label value, escaped as the text format wants.
fn label(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

impl Metrics {
    pub fn turn_ended(&self, end: TurnEnd) {
        let i = match end {
            TurnEnd::Done => 0,
            TurnEnd::Failed => 1,
            TurnEnd::Cancelled => 2,
        };
        self.turns[i].fetch_add(1, Ordering::Relaxed);
    }

    fn provider(&self, name: &str, f: impl FnOnce(&mut ProviderStats)) {
        let mut map = self.providers.lock().unwrap_or_else(|e| e.into_inner());
        // Provider names come from the config: a handful, never a client.
        f(map.entry(name.to_string()).or_default());
    }

    /// A watcher for one turn's events.
    pub fn turn(&self) -> TurnWatch<'_> {
        TurnWatch {
            metrics: self,
            mark: Mutex::new(Instant::now()),
        }
    }

    /// The text exposition.
    pub fn render(&self, g: Gauges) -> String {
        let mut out = String::with_capacity(4096);
        let head = |out: &mut String, name: &str, kind: &str, help: &str| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        };
        head(
            &mut out,
            "pincer_turns_total",
            "counter",
            "Turns the gateway ran, by how they ended.",
        );
        for (i, l) in TURN_LABELS.iter().enumerate() {
            let _ = writeln!(
                out,
                "pincer_turns_total{{outcome=\"{l}\"}} {}",
                self.turns[i].load(Ordering::Relaxed)
            );
        }
        head(
            &mut out,
            "pincer_tool_calls_total",
            "counter",
            "Tool calls, by the gate's decision and how they ended.",
        );
        for (i, l) in TOOL_LABELS.iter().enumerate() {
            let _ = writeln!(
                out,
                "pincer_tool_calls_total{{decision=\"{l}\"}} {}",
                self.tools[i].load(Ordering::Relaxed)
            );
        }
        let providers = self
            .providers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        head(
            &mut out,
            "pincer_provider_replies_total",
            "counter",
            "Model replies, by provider.",
        );
        for (p, s) in &providers {
            let _ = writeln!(
                out,
                "pincer_provider_replies_total{{provider=\"{}\"}} {}",
                label(p),
                s.replies
            );
        }
        head(
            &mut out,
            "pincer_provider_errors_total",
            "counter",
            "Failed provider attempts (retried or fallen back from), by provider.",
        );
        for (p, s) in &providers {
            let _ = writeln!(
                out,
                "pincer_provider_errors_total{{provider=\"{}\"}} {}",
                label(p),
                s.errors
            );
        }
        head(
            &mut out,
            "pincer_provider_latency_seconds",
            "histogram",
            "Time to a model's whole reply, by provider.",
        );
        for (p, s) in &providers {
            let p = label(p);
            for (i, le) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "pincer_provider_latency_seconds_bucket{{provider=\"{p}\",le=\"{le}\"}} {}",
                    s.buckets[i]
                );
            }
            let _ = writeln!(
                out,
                "pincer_provider_latency_seconds_bucket{{provider=\"{p}\",le=\"+Inf\"}} {}",
                s.buckets[BUCKETS.len()]
            );
            let _ = writeln!(
                out,
                "pincer_provider_latency_seconds_sum{{provider=\"{p}\"}} {}",
                s.sum
            );
            let _ = writeln!(
                out,
                "pincer_provider_latency_seconds_count{{provider=\"{p}\"}} {}",
                s.replies
            );
        }
        head(
            &mut out,
            "pincer_approvals_pending",
            "gauge",
            "Tool calls of gateway sessions waiting for an approver.",
        );
        let _ = writeln!(out, "pincer_approvals_pending {}", g.approvals_pending);
        head(
            &mut out,
            "pincer_audit_entries",
            "gauge",
            "Entries in the audit trail (the last entry's seq); -1 when unreadable.",
        );
        let _ = writeln!(
            out,
            "pincer_audit_entries {}",
            g.audit_entries
                .map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX))
        );
        head(
            &mut out,
            "pincer_gateway_sessions_open",
            "gauge",
            "Sessions the gateway holds open (each with its one writer).",
        );
        let _ = writeln!(out, "pincer_gateway_sessions_open {}", g.sessions_open);
        head(
            &mut out,
            "pincer_gateway_websockets_open",
            "gauge",
            "Open chat WebSockets.",
        );
        let _ = writeln!(
            out,
            "pincer_gateway_websockets_open {}",
            self.ws_open.load(Ordering::Relaxed)
        );
        for (name, help, v) in [
            (
                "pincer_gateway_pairings_total",
                "Devices paired.",
                &self.pairings,
            ),
            (
                "pincer_gateway_pairing_failures_total",
                "Pairing attempts with a wrong, used or expired code.",
                &self.pairing_failures,
            ),
            (
                "pincer_gateway_pairing_locked_total",
                "Pairing attempts refused because pairing was locked.",
                &self.pairing_locked,
            ),
            (
                "pincer_gateway_unauthorized_total",
                "Requests refused for a missing or wrong token.",
                &self.unauthorized,
            ),
            (
                "pincer_gateway_forbidden_total",
                "Requests refused for a foreign origin or host, or a token without the role.",
                &self.forbidden,
            ),
            (
                "pincer_gateway_rate_limited_total",
                "Requests refused by a rate limit.",
                &self.rate_limited,
            ),
        ] {
            head(&mut out, name, "counter", help);
            let _ = writeln!(out, "{name} {}", v.load(Ordering::Relaxed));
        }
        head(
            &mut out,
            "pincer_gateway_pairing_locked",
            "gauge",
            "1 while pairing is locked for everyone.",
        );
        let _ = writeln!(
            out,
            "pincer_gateway_pairing_locked {}",
            u8::from(g.pairing_locked_now)
        );
        out
    }
}

/// Watches one turn's events and counts them.
#[derive(Debug)]
pub struct TurnWatch<'a> {
    metrics: &'a Metrics,
    mark: Mutex<Instant>,
}

impl TurnWatch<'_> {
    fn reset(&self) {
        *self.mark.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    pub fn saw(&self, e: &AgentEvent) {
        match e {
            AgentEvent::TurnStarted { .. } => self.reset(),
            AgentEvent::ToolCallFinished { status, .. } => {
                self.metrics.tools[tool_index(*status)].fetch_add(1, Ordering::Relaxed);
                self.reset();
            }
            AgentEvent::ProviderFailed { attempt } => {
                self.metrics.provider(&attempt.provider, |s| s.errors += 1);
                self.reset();
            }
            AgentEvent::ModelReplied { provider, .. } => {
                let secs = self
                    .mark
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .elapsed()
                    .as_secs_f64();
                self.metrics.provider(provider, |s| {
                    s.replies += 1;
                    s.sum += secs;
                    for (i, le) in BUCKETS.iter().enumerate() {
                        if secs <= *le {
                            s.buckets[i] += 1;
                        }
                    }
                    s.buckets[BUCKETS.len()] += 1;
                });
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pincer_core::provider::FinishReason;

    #[test]
    fn events_are_counted_and_rendered() {
        let m = Metrics::default();
        let w = m.turn();
        w.saw(&AgentEvent::TurnStarted {
            session: "s".into(),
        });
        w.saw(&AgentEvent::ModelReplied {
            provider: "loc\"al".into(),
            model: "m".into(),
            usage: None,
            tool_calls: 1,
            finish: FinishReason::ToolCalls,
        });
        w.saw(&AgentEvent::ToolCallFinished {
            id: "c".into(),
            name: "t".into(),
            status: ToolStatus::Denied,
            preview: String::new(),
        });
        m.turn_ended(TurnEnd::Done);
        let text = m.render(Gauges {
            approvals_pending: 2,
            audit_entries: Some(41),
            ..Gauges::default()
        });
        for line in [
            "pincer_turns_total{outcome=\"done\"} 1",
            "pincer_tool_calls_total{decision=\"denied\"} 1",
            "pincer_provider_replies_total{provider=\"loc\\\"al\"} 1",
            "pincer_provider_latency_seconds_bucket{provider=\"loc\\\"al\",le=\"+Inf\"} 1",
            "pincer_approvals_pending 2",
            "pincer_audit_entries 41",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        // Every sample line belongs to a family declared before it.
        let mut declared = std::collections::HashSet::new();
        for l in text.lines() {
            if let Some(rest) = l.strip_prefix("# TYPE ") {
                declared.insert(rest.split(' ').next().unwrap_or_default().to_string());
            } else if !l.starts_with('#') {
                let name = l.split(['{', ' ']).next().unwrap_or_default();
                let base = name
                    .trim_end_matches("_bucket")
                    .trim_end_matches("_sum")
                    .trim_end_matches("_count");
                assert!(declared.contains(base), "{l}");
            }
        }
    }
}
