//! `cargo run -p pincer-sandbox --example exec -- [-v] CMD ARGS…`: runs a
//! command in the sandbox over the current directory, as `pincer exec`
//! will; `-v` prints each layer's status to stderr.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use pincer_sandbox::{RunOptions, Sandbox, Spec};
use std::io::Write;

fn main() {
    pincer_sandbox::run_helper_if_requested();
    let mut argv: Vec<String> = std::env::args().skip(1).collect();
    let verbose = argv.first().is_some_and(|a| a == "-v");
    if verbose {
        argv.remove(0);
    }
    let ws = std::env::current_dir().unwrap();
    let mut spec = Spec::new(argv, &ws, "example");
    spec.env
        .insert("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into());
    // PINCER_SANDBOX_HELPER: another helper binary (e.g. target/release/pincer).
    let helper = std::env::var_os("PINCER_SANDBOX_HELPER")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::current_exe().unwrap());
    let sandbox = Sandbox::new(helper);
    let t = std::time::Instant::now();
    match sandbox.run(&spec, &RunOptions::default()) {
        Ok(c) => {
            std::io::stdout().write_all(&c.output).unwrap();
            if verbose {
                for l in c.finished.layers() {
                    eprintln!("{:<18} {:?}: {}", l.layer.as_str(), l.state, l.detail);
                }
                eprintln!("{} in {:?}", c.finished.exit, t.elapsed());
            }
            for n in c.finished.notes() {
                eprintln!("{n}");
            }
            std::process::exit(match c.finished.exit {
                pincer_sandbox::Exit::Code(code) => code,
                pincer_sandbox::Exit::Signal(sig) => 128 + sig,
            });
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(125);
        }
    }
}
