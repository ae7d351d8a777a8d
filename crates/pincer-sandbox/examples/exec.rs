//! `cargo run -p pincer-sandbox --example exec -- CMD ARGS…`: runs a
//! command in the sandbox over the current directory, as `pincer exec`
//! will, and prints each layer's status to stderr.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use pincer_sandbox::{RunOptions, Sandbox, Spec};
use std::io::Write;

fn main() {
    pincer_sandbox::run_helper_if_requested();
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let ws = std::env::current_dir().unwrap();
    let mut spec = Spec::new(argv, &ws, "example");
    spec.env
        .insert("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into());
    let sandbox = Sandbox::new(std::env::current_exe().unwrap());
    let t = std::time::Instant::now();
    match sandbox.run(&spec, &RunOptions::default()) {
        Ok(c) => {
            std::io::stdout().write_all(&c.output).unwrap();
            for l in c.finished.layers() {
                eprintln!("{:<18} {:?}: {}", l.layer.as_str(), l.state, l.detail);
            }
            for n in c.finished.notes() {
                eprintln!("{n}");
            }
            eprintln!("{} in {:?}", c.finished.exit, t.elapsed());
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(125);
        }
    }
}
