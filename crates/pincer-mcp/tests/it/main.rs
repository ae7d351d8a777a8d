//! pincer-mcp's integration tests: real servers in real processes. The
//! test binary is its own sandbox helper (it dispatches `__sandbox` first,
//! as pincer's `main` does) and its own fake MCP server (`__mcp-fake`), so
//! the harness is libtest-mimic's.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod fake;
mod http;
mod reference;
mod stdio;
mod support;

use libtest_mimic::{Arguments, Trial};

fn main() {
    pincer_sandbox::run_helper_if_requested();
    fake::fake_server_if_requested();
    let args = Arguments::from_args();
    let mut trials: Vec<Trial> = Vec::new();
    trials.extend(stdio::trials());
    trials.extend(http::trials());
    trials.extend(reference::trials());
    libtest_mimic::run(&args, trials).exit();
}
