//! pincer-sandbox's integration tests. The test binary is its own sandbox
//! helper (it dispatches `__sandbox` first thing, as pincer's `main` does)
//! and, for the tests that kill "pincer", its own fake pincer
//! (`__fake-pincer`), so the harness is libtest-mimic's.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod corpus;
mod lifecycle;
mod limits;
mod nonroot;
mod support;
mod tty;

use libtest_mimic::{Arguments, Trial};

fn main() {
    pincer_sandbox::run_helper_if_requested();
    support::fake_pincer_if_requested();
    let args = Arguments::from_args();
    let mut trials: Vec<Trial> = Vec::new();
    trials.extend(corpus::trials());
    trials.extend(lifecycle::trials());
    trials.extend(limits::trials());
    trials.extend(nonroot::trials());
    trials.extend(tty::trials());
    libtest_mimic::run(&args, trials).exit();
}
