//! The results of a run: per strategy, HitRate overall and per category,
//! id recall, tokens, time, and HitRate by where the evidence sits in the
//! conversation; rendered as JSON, markdown tables and an SVG plot.

use crate::run::{Options, Outcome};
use crate::strategy::Strategy;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

/// How many bins the evidence positions fall in.
pub const POSITION_BINS: usize = 10;

/// LoCoMo's question categories, as commonly named.
pub const CATEGORIES: [(u8, &str); 5] = [
    (1, "multi-hop"),
    (2, "temporal"),
    (3, "open-domain"),
    (4, "single-hop"),
    (5, "adversarial"),
];

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    pub budget: usize,
    pub source: String,
    pub conversations: usize,
    pub questions: usize,
    pub jobs: usize,
    /// Wall time of the whole run.
    pub wall_ms: u64,
    pub strategies: Vec<StrategyReport>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StrategyReport {
    pub name: String,
    pub description: String,
    /// Mean HitRate over every question.
    pub hit_rate: f64,
    /// Mean HitRate per category `"1"`..`"5"` (null: no question).
    pub by_category: BTreeMap<String, Option<f64>>,
    /// Mean id recall over every question.
    pub id_recall: f64,
    pub id_recall_by_category: BTreeMap<String, Option<f64>>,
    pub questions: usize,
    /// Context tokens (`bytes / 4`), mean and largest.
    pub tokens_mean: f64,
    pub tokens_max: usize,
    /// Mean time to build one question's context, in microseconds.
    pub us_per_question: f64,
    /// Time spent once per run and conversation before the first question
    /// (ingest, trim, pages, index), in milliseconds, all conversations.
    pub setup_ms: f64,
    /// Share of evidence turns whose text is in the context, by the turn's
    /// position in its conversation: bin `i` holds positions in
    /// `[i/10, (i+1)/10)` (null: no evidence there).
    pub by_position: Vec<Option<f64>>,
    /// Evidence turns per position bin.
    pub by_position_counts: Vec<usize>,
    /// What the stores reported as degraded, with how many times.
    pub notes: BTreeMap<String, usize>,
}

#[derive(Debug, Default, Clone)]
struct Sums {
    questions: usize,
    hit: f64,
    recall: f64,
    cat: BTreeMap<u8, (usize, f64, f64)>,
    tokens: usize,
    tokens_max: usize,
    micros: u64,
    setup: Duration,
    bins: [(usize, usize); POSITION_BINS],
    notes: BTreeMap<String, usize>,
}

/// Sums outcomes as conversations come in.
#[derive(Debug)]
pub(crate) struct Accumulator {
    budget: usize,
    jobs: usize,
    source: String,
    order: Vec<Strategy>,
    sums: BTreeMap<Strategy, Sums>,
}

impl Accumulator {
    pub(crate) fn new(opts: &Options) -> Self {
        Self {
            budget: opts.budget,
            jobs: opts.jobs,
            source: opts.source.clone(),
            order: opts.strategies.clone(),
            sums: opts
                .strategies
                .iter()
                .map(|s| (*s, Sums::default()))
                .collect(),
        }
    }

    pub(crate) fn add_setup(&mut self, s: Strategy, d: Duration) {
        self.sums.entry(s).or_default().setup += d;
    }

    pub(crate) fn add_conversation(
        &mut self,
        outcomes: Vec<Outcome>,
        setup: BTreeMap<Strategy, Duration>,
        notes: BTreeMap<Strategy, BTreeMap<String, usize>>,
    ) {
        for (s, d) in setup {
            self.add_setup(s, d);
        }
        for (s, n) in notes {
            let sums = self.sums.entry(s).or_default();
            for (k, v) in n {
                *sums.notes.entry(k).or_insert(0) += v;
            }
        }
        for o in outcomes {
            let s = self.sums.entry(o.strategy).or_default();
            s.questions += 1;
            s.hit += o.score.hit_rate;
            s.recall += o.score.id_recall;
            let c = s.cat.entry(o.category).or_default();
            c.0 += 1;
            c.1 += o.score.hit_rate;
            c.2 += o.score.id_recall;
            s.tokens += o.tokens;
            s.tokens_max = s.tokens_max.max(o.tokens);
            s.micros = s.micros.saturating_add(o.micros);
            for (pos, hit) in o.positions {
                let bin = ((pos * POSITION_BINS as f64) as usize).min(POSITION_BINS - 1);
                s.bins[bin].0 += 1;
                s.bins[bin].1 += usize::from(hit);
            }
        }
    }

    pub(crate) fn finish(self, conversations: usize, questions: usize, wall: Duration) -> Report {
        let strategies = self
            .order
            .iter()
            .map(|s| {
                let sums = self.sums.get(s).cloned().unwrap_or_default();
                let n = sums.questions.max(1) as f64;
                let per_cat = |pick: fn(&(usize, f64, f64)) -> f64| {
                    CATEGORIES
                        .iter()
                        .map(|(c, _)| {
                            let v = sums
                                .cat
                                .get(c)
                                .filter(|x| x.0 > 0)
                                .map(|x| pick(x) / x.0 as f64);
                            (c.to_string(), v)
                        })
                        .collect()
                };
                StrategyReport {
                    name: s.name().to_owned(),
                    description: s.description().to_owned(),
                    hit_rate: sums.hit / n,
                    by_category: per_cat(|x| x.1),
                    id_recall: sums.recall / n,
                    id_recall_by_category: per_cat(|x| x.2),
                    questions: sums.questions,
                    tokens_mean: sums.tokens as f64 / n,
                    tokens_max: sums.tokens_max,
                    us_per_question: sums.micros as f64 / n,
                    setup_ms: sums.setup.as_secs_f64() * 1000.0,
                    by_position: sums
                        .bins
                        .iter()
                        .map(|(total, hits)| (*total > 0).then(|| *hits as f64 / *total as f64))
                        .collect(),
                    by_position_counts: sums.bins.iter().map(|(t, _)| *t).collect(),
                    notes: sums.notes,
                }
            })
            .collect();
        Report {
            budget: self.budget,
            source: self.source,
            conversations,
            questions,
            jobs: self.jobs,
            wall_ms: u64::try_from(wall.as_millis()).unwrap_or(u64::MAX),
            strategies,
        }
    }
}

fn cell(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_owned(), |x| format!("{x:.4}"))
}

impl Report {
    /// The strategy of pincer's with the highest HitRate.
    pub fn best_pincer(&self) -> Option<&StrategyReport> {
        self.strategies
            .iter()
            .filter(|s| !s.name.starts_with("picoclaw-"))
            .max_by(|a, b| a.hit_rate.total_cmp(&b.hit_rate))
    }

    /// Markdown: the main table (HitRate per category, id recall, tokens,
    /// time), then HitRate by evidence position, then any notes.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} conversations, {} questions ({}), budget {} tokens (bytes / 4).\n",
            self.conversations, self.questions, self.source, self.budget
        );
        s.push_str("| strategy | HitRate |");
        for (c, name) in CATEGORIES {
            let _ = write!(s, " C{c} {name} |");
        }
        s.push_str(" id recall | tokens (mean) | µs / question | setup ms |\n|---|---:|");
        for _ in CATEGORIES {
            s.push_str("---:|");
        }
        s.push_str("---:|---:|---:|---:|\n");
        for r in &self.strategies {
            let _ = write!(s, "| `{}` | **{:.4}** |", r.name, r.hit_rate);
            for (c, _) in CATEGORIES {
                let _ = write!(
                    s,
                    " {} |",
                    cell(r.by_category.get(&c.to_string()).copied().flatten())
                );
            }
            let _ = writeln!(
                s,
                " {:.4} | {:.0} | {:.0} | {:.0} |",
                r.id_recall, r.tokens_mean, r.us_per_question, r.setup_ms
            );
        }

        s.push_str("\nHitRate of evidence turns by their position in the conversation (tenths):\n\n| strategy |");
        for i in 0..POSITION_BINS {
            let _ = write!(s, " {}–{}% |", i * 10, (i + 1) * 10);
        }
        s.push_str("\n|---|");
        for _ in 0..POSITION_BINS {
            s.push_str("---:|");
        }
        s.push('\n');
        for r in &self.strategies {
            let _ = write!(s, "| `{}` |", r.name);
            for v in &r.by_position {
                let _ = write!(
                    s,
                    " {} |",
                    v.map_or_else(|| "–".to_owned(), |x| format!("{x:.2}"))
                );
            }
            s.push('\n');
        }
        if let Some(first) = self.strategies.first() {
            let _ = writeln!(
                s,
                "\nEvidence turns per tenth: {}.",
                first
                    .by_position_counts
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }

        let noted: Vec<&StrategyReport> = self
            .strategies
            .iter()
            .filter(|r| !r.notes.is_empty())
            .collect();
        if !noted.is_empty() {
            s.push_str("\nWhat the stores reported:\n\n");
            for r in noted {
                for (note, n) in &r.notes {
                    let _ = writeln!(s, "- `{}`: {note} ({n}×)", r.name);
                }
            }
        }
        s
    }

    /// An SVG line plot of HitRate by evidence position, one line per
    /// strategy.
    pub fn svg(&self) -> String {
        const W: f64 = 820.0;
        const H: f64 = 420.0;
        const LEFT: f64 = 56.0;
        const RIGHT: f64 = 280.0;
        const TOP: f64 = 36.0;
        const BOTTOM: f64 = 48.0;
        const COLOURS: [&str; 10] = [
            "#9e9e9e", "#616161", "#e65100", "#ffa726", "#1565c0", "#42a5f5", "#00897b", "#c62828",
            "#8e24aa", "#2e7d32",
        ];
        let pw = W - LEFT - RIGHT;
        let ph = H - TOP - BOTTOM;
        let x = |i: usize| LEFT + pw * (i as f64 + 0.5) / POSITION_BINS as f64;
        let y = |v: f64| TOP + ph * (1.0 - v.clamp(0.0, 1.0));
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
        let _ = writeln!(
            s,
            r#"<text x="{LEFT}" y="20" font-size="14">HitRate by where the evidence sits in the conversation (budget {} tokens)</text>"#,
            self.budget
        );
        for k in 0..=5 {
            let v = k as f64 / 5.0;
            let yy = y(v);
            let _ = writeln!(
                s,
                r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#e0e0e0"/><text x="{:.1}" y="{:.1}" text-anchor="end">{v:.1}</text>"##,
                LEFT + pw,
                LEFT - 6.0,
                yy + 4.0
            );
        }
        for i in 0..POSITION_BINS {
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}%</text>"#,
                x(i),
                TOP + ph + 16.0,
                i * 10 + 5
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">position of the evidence turn in its conversation (oldest → newest)</text>"#,
            LEFT + pw / 2.0,
            H - 10.0
        );
        let _ = writeln!(
            s,
            r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#757575"/>"##
        );
        for (k, r) in self.strategies.iter().enumerate() {
            let colour = COLOURS[k % COLOURS.len()];
            let dash = if r.name.starts_with("picoclaw-") {
                r#" stroke-dasharray="5 3""#
            } else {
                ""
            };
            let points: Vec<String> = r
                .by_position
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|v| format!("{:.1},{:.1}", x(i), y(v))))
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="{}"/>"#,
                points.join(" ")
            );
            let ly = TOP + 8.0 + 18.0 * k as f64;
            let lx = LEFT + pw + 14.0;
            let _ = writeln!(
                s,
                r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{colour}" stroke-width="2"{dash}/><text x="{:.1}" y="{:.1}">{} {:.3}</text>"#,
                lx + 22.0,
                lx + 28.0,
                ly + 4.0,
                xml_escape(&r.name),
                r.hit_rate
            );
        }
        s.push_str("</svg>\n");
        s
    }
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
