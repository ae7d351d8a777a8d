//! Diagnostics on stderr: the `tracing` events of every crate, one line
//! each, `LEVEL target: message key=value…`, from `max` up.
//!
//! pincer emits a handful of events (a provider attempt, a gate decision
//! at `-vv`); tracing-subscriber's formatter would cost 31 KiB of an edge
//! binary for them. Spans are not recorded: none of pincer's code opens
//! one, and an event inside one still prints. A field can carry what a
//! server said (a provider's error), so the line goes out as one line with
//! every control character escaped: no escape sequence reaches the
//! terminal and no newline forges a second log line.

use std::fmt::Write as _;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Writes each enabled event to stderr as one line.
pub struct Stderr {
    max: Level,
}

impl Stderr {
    /// Events at `max` and above (`WARN` takes warnings and errors).
    pub fn new(max: Level) -> Self {
        Self { max }
    }
}

/// Where a line is cut (with `…`): far above any event pincer emits.
const MAX_CHARS: usize = 16 * 1024;

/// One event's line, its fields appended as they are visited.
struct Line(String);

impl Visit for Line {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => write!(self.0, " {value}"),
            name => write!(self.0, " {name}={value}"),
        }
        .unwrap_or(());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => write!(self.0, " {value:?}"),
            name => write!(self.0, " {name}={value:?}"),
        }
        .unwrap_or(());
    }
}

impl Line {
    fn of(event: &Event<'_>) -> String {
        let m = event.metadata();
        let mut line = Line(format!("{:>5} {}:", m.level(), m.target()));
        event.record(&mut line);
        pincer_core::text::one_line(&line.0, MAX_CHARS)
    }
}

impl Subscriber for Stderr {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        // tracing orders levels by verbosity: TRACE is the greatest.
        *metadata.level() <= self.max
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(self.max.into())
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        // Spans are not tracked (see the module doc); any id will do.
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        eprintln!("{}", Line::of(event));
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line of one event, captured through a subscriber of our own.
    fn line_of(f: impl FnOnce()) -> Vec<String> {
        struct Capture(std::sync::Mutex<Vec<String>>, Stderr);
        impl Subscriber for Capture {
            fn enabled(&self, m: &Metadata<'_>) -> bool {
                self.1.enabled(m)
            }
            fn new_span(&self, a: &Attributes<'_>) -> Id {
                self.1.new_span(a)
            }
            fn record(&self, _: &Id, _: &Record<'_>) {}
            fn record_follows_from(&self, _: &Id, _: &Id) {}
            fn event(&self, e: &Event<'_>) {
                self.0.lock().unwrap().push(Line::of(e));
            }
            fn enter(&self, _: &Id) {}
            fn exit(&self, _: &Id) {}
        }
        let c = std::sync::Arc::new(Capture(Default::default(), Stderr::new(Level::INFO)));
        tracing::subscriber::with_default(c.clone(), f);
        c.0.lock().unwrap().clone()
    }

    #[test]
    fn an_event_is_one_line_with_its_fields_and_levels_below_max_are_dropped() {
        let lines = line_of(|| {
            tracing::info!(provider = "local", retry = 2, "provider answered");
            tracing::debug!("not at info");
            tracing::warn!(error = %"boom", "attempt failed");
        });
        assert_eq!(
            lines,
            [
                " INFO pincer::diag::tests: provider answered provider=local retry=2",
                " WARN pincer::diag::tests: attempt failed error=boom",
            ]
        );
    }

    #[test]
    fn what_a_server_said_cannot_reach_the_terminal_as_escapes_or_new_lines() {
        let lines = line_of(|| {
            tracing::warn!(error = %"\u{1b}]52;c;cm0gLXJmIH4=\u{7}\n WARN forged: ok", "attempt failed");
        });
        assert_eq!(lines.len(), 1);
        assert!(!lines[0].contains(['\u{1b}', '\u{7}', '\n']), "{lines:?}");
        assert!(
            lines[0].contains("\\u{1b}") && lines[0].contains('⏎'),
            "{lines:?}"
        );
    }
}
