//! The sandbox helper for pincer-tools' integration tests (pincer itself
//! is the helper in production: its `main` makes the same call first).

fn main() {
    pincer_sandbox::run_helper_if_requested();
    eprintln!(
        "this program only runs as pincer's sandbox helper (`{}`)",
        pincer_sandbox::HELPER_ARG
    );
    std::process::exit(2);
}
