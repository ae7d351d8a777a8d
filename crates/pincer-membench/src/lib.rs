//! `pincer membench`: memory quality on LoCoMo, measured the way PicoClaw's
//! `cmd/membench` measures it, with PicoClaw's baselines and pincer's own
//! strategies side by side in one run.
//!
//! Owns: the LoCoMo loader ([`data`]) and a seeded synthetic set
//! ([`synth`]); the metrics ([`metrics`]: HitRate, id recall, tokens);
//! ports of PicoClaw's legacy store and Seahorse engine ([`picoclaw`]);
//! pincer's strategies ([`pincer`]), which drive pincer's real session
//! store, trimmer and memory index in a temporary directory; a run over
//! worker threads ([`run()`]) and its report ([`report`]: JSON, markdown,
//! SVG).
//!
//! Must not know: the CLI, the terminal, where the data lives. The binary
//! parses flags, draws the progress bar and prints; nothing here prints.

pub mod data;
pub mod error;
pub mod metrics;
pub mod picoclaw;
pub mod pincer;
pub mod report;
pub mod run;
pub mod strategy;
pub mod synth;

pub use data::{Conversation, Question, Session, Turn, load_dir};
pub use error::BenchError;
pub use report::{Report, StrategyReport};
pub use run::{ContextLine, Options, Progress, Quiet, run};
pub use strategy::Strategy;
pub use synth::{SynthSpec, generate};
