use crate::{fails, ok, pincer};
use std::os::unix::fs::PermissionsExt;

#[test]
fn version_and_help() {
    let home = tempfile::tempdir().expect("tempdir");
    let out = ok(pincer(home.path(), &["--version"], ""));
    assert!(
        out.starts_with(&format!("pincer {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{out}"
    );
    let out = ok(pincer(home.path(), &["--help"], ""));
    for cmd in ["init", "session"]
        .into_iter()
        .chain(cfg!(feature = "demo").then_some("demo"))
    {
        assert!(out.contains(cmd), "{out}");
    }
}

#[test]
fn home_is_created_private() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("state");
    ok(pincer(&home, &["session", "list"], ""));
    for dir in [home.clone(), home.join("sessions")] {
        let mode = std::fs::metadata(&dir).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", dir.display());
    }
}

#[test]
fn init_writes_a_config_that_loads_and_refuses_to_clobber() {
    let home = tempfile::tempdir().expect("tempdir");
    ok(pincer(home.path(), &["init"], ""));
    let text = std::fs::read_to_string(home.path().join("config.toml")).expect("config");
    assert!(text.contains("fsync = \"turn\""), "{text}");
    ok(pincer(home.path(), &["session", "list"], ""));
    let err = fails(pincer(home.path(), &["init"], ""));
    assert!(err.contains("--force"), "{err}");
    ok(pincer(home.path(), &["init", "--force"], ""));
}

#[test]
fn a_bad_config_is_an_error_naming_key_and_line() {
    let home = tempfile::tempdir().expect("tempdir");
    let cfg = home.path().join("config.toml");
    std::fs::write(&cfg, "[session]\nfsync = \"turn\"\nfsinc = \"always\"\n").expect("write");
    let err = fails(pincer(home.path(), &["session", "list"], ""));
    assert!(err.contains("fsinc") && err.contains("line 3"), "{err}");
    std::fs::write(
        &cfg,
        "[context]\ncontext_window = 1000\noutput_reserve = 2000\n",
    )
    .expect("write");
    let err = fails(pincer(home.path(), &["session", "list"], ""));
    assert!(
        err.contains("config.toml:3") && err.contains("output_reserve"),
        "{err}"
    );
}

#[test]
fn malformed_flags_are_errors_not_defaults() {
    let home = tempfile::tempdir().expect("tempdir");
    ok(pincer(
        home.path(),
        &["session", "append", "k"],
        "{\"role\":\"user\",\"content\":\"hi\"}\n",
    ));
    for (args, needle) in [
        (&["session", "trim", "k", "--budget", "abc"][..], "--budget"),
        (&["session", "trim", "k", "--budget", "-5"][..], "--budget"),
        (&["session", "trim", "k"][..], "--budget"),
        (
            &["session", "trim", "k", "--budget", "100", "-n", "5"][..],
            "-n",
        ),
        (&["session", "show", "k", "--limt", "5"][..], "--limt"),
        (
            &[
                "session",
                "trim",
                "k",
                "--budget",
                "1000",
                "--output-reserve",
                "1000",
            ][..],
            "--output-reserve",
        ),
    ] {
        let err = fails(pincer(home.path(), args, ""));
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[cfg(feature = "demo")]
#[test]
fn demo_runs_on_embedded_defaults() {
    let home = tempfile::tempdir().expect("tempdir");
    let out = ok(pincer(home.path(), &["demo"], ""));
    assert!(out.contains("torn tail"), "{out}");
    assert!(
        out.contains("stored messages with a tool call split from its result: 0"),
        "{out}"
    );
    let doc = crate::json(&ok(pincer(home.path(), &["demo", "--json"], "")));
    let steps = doc["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 5);
    assert_eq!(steps[1]["data"]["unreadable_after"], 0);
    assert_eq!(steps[2]["data"]["closed_on_disk"][0], "call_14");
    assert_eq!(steps[3]["data"]["orphans_after"], 0);
    assert!(
        steps[3]["data"]["report"]["dropped_turns"]
            .as_u64()
            .expect("n")
            > 0
    );
    assert!(
        steps[4]["data"]["overflow_error"]
            .as_str()
            .expect("e")
            .contains("over by")
    );
    // The demo never touches the user's PINCER_HOME, and cleans up after itself.
    assert_eq!(std::fs::read_dir(home.path()).expect("ls").count(), 0);
    let tmp = doc["home"].as_str().expect("home");
    assert!(!std::path::Path::new(tmp).exists(), "{tmp} left behind");
}

#[test]
fn an_empty_pincer_home_is_an_error() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pincer"))
        .args(["session", "list"])
        .env("PINCER_HOME", "")
        .output()
        .expect("run");
    let err = fails(out);
    assert!(err.contains("PINCER_HOME is set but empty"), "{err}");
}

#[test]
fn version_names_the_commit_and_the_features() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let v = ok(pincer(tmp.path(), &["--version"], ""));
    assert!(v.starts_with("pincer 0."), "{v}");
    assert!(v.contains("commit ") && v.contains("features: "), "{v}");
    let named = v
        .trim_end()
        .rsplit_once("features: ")
        .map(|(_, f)| f.trim_end_matches(')'))
        .expect("a features list");
    let named: Vec<&str> = named.split(", ").filter(|f| *f != "none").collect();
    // Exactly the features cargo built this package with, in order.
    let built: Vec<&str> = [
        ("anthropic", cfg!(feature = "anthropic")),
        ("camera", cfg!(feature = "camera")),
        ("claude-code", cfg!(feature = "claude-code")),
        ("completions", cfg!(feature = "completions")),
        ("demo", cfg!(feature = "demo")),
        ("discord", cfg!(feature = "discord")),
        ("fts5", cfg!(feature = "fts5")),
        ("gateway", cfg!(feature = "gateway")),
        ("html", cfg!(feature = "html")),
        ("membench", cfg!(feature = "membench")),
        ("mcp", cfg!(feature = "mcp")),
        ("repl", cfg!(feature = "repl")),
        ("serve", cfg!(feature = "serve")),
        ("telegram", cfg!(feature = "telegram")),
        ("tls", cfg!(feature = "tls")),
        ("web", cfg!(feature = "web")),
    ]
    .into_iter()
    .filter(|(_, on)| *on)
    .map(|(n, _)| n)
    .collect();
    assert_eq!(named, built, "{v}");
}

/// A command whose feature was left out is refused by name, not run as
/// something else.
#[cfg(not(feature = "completions"))]
#[test]
fn a_left_out_feature_has_no_command() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for cmd in [&["completions", "bash"][..], &["man"]] {
        let err = crate::fails(pincer(tmp.path(), cmd, ""));
        assert!(err.contains("unrecognized subcommand"), "{err}");
    }
}

#[cfg(feature = "completions")]
#[test]
fn completions_and_the_man_page_come_from_the_cli_definition() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bash = ok(pincer(tmp.path(), &["completions", "bash"], ""));
    assert!(
        bash.contains("_pincer()") && bash.contains("doctor"),
        "{bash}"
    );
    let man = ok(pincer(tmp.path(), &["man"], ""));
    assert!(man.contains(".TH pincer") && man.contains("audit"), "{man}");
    let err = crate::fails(pincer(tmp.path(), &["completions", "tcsh"], ""));
    assert!(err.contains("tcsh"), "{err}");
}

/// A reader that goes away (`| head`) ends pincer quietly, with SIGPIPE's
/// status, not a panic message.
#[cfg(feature = "completions")]
#[test]
fn a_closed_stdout_is_not_a_panic() {
    use std::process::{Command, Stdio};
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_pincer"))
        .args(["man"])
        .env("PINCER_HOME", tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // Close our end at once: every write of the man page fails.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        matches!(out.status.code(), Some(0) | Some(141)),
        "{:?}",
        out.status
    );
}

/// Without the `serve` feature the daemon, its cron jobs and its systemd
/// unit are not in
/// the binary: refused by name, not run as something else.
#[cfg(not(feature = "serve"))]
#[test]
fn without_serve_there_is_no_daemon() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for cmd in [&["serve"][..], &["cron", "list"], &["service", "status"]] {
        let err = fails(pincer(tmp.path(), cmd, ""));
        assert!(err.contains("unrecognized subcommand"), "{err}");
    }
}

/// The kernel without TLS talks plain http:// only: an https:// provider
/// is refused at start-up naming the field and the missing feature (never
/// tried in plain text), a zero-config cloud key is refused the same way,
/// and doctor says what this build lacks.
#[cfg(not(feature = "tls"))]
#[test]
fn without_tls_an_https_provider_is_refused_by_name() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = tmp.path().join("config.toml");
    std::fs::write(
        &config,
        "[providers.cloud]\nkind = \"openai\"\nmodel = \"m\"\nbase_url = \"https://llm.example.invalid/v1\"\n",
    )
    .expect("write config");
    let err = crate::fails(crate::pincer_env(tmp.path(), &["agent", "-m", "hi"], &[]));
    assert!(
        err.contains("providers.cloud.base_url") && err.contains("`tls` feature"),
        "{err}"
    );
    std::fs::remove_file(&config).expect("rm config");
    let err = crate::fails(crate::pincer_env(
        tmp.path(),
        &["agent", "-m", "hi"],
        &[("ANTHROPIC_API_KEY", "sk-ant-test-key")],
    ));
    let refused = if cfg!(feature = "anthropic") {
        err.contains("base_url is `https://") && err.contains("`tls` feature")
    } else {
        err.contains("kind is `anthropic`") && err.contains("`anthropic` feature")
    };
    assert!(refused, "{err}");
    let out = crate::pincer_env(tmp.path(), &["doctor", "--json"], &[]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("doctor json");
    assert!(
        doc["warnings"]
            .to_string()
            .contains("without the `tls` feature"),
        "{doc}"
    );
}

/// A build without `web` (the kernel) refuses a `[web_fetch]` table by name
/// rather than ignoring it, and doctor says the tool is not built in.
#[cfg(not(feature = "web"))]
#[test]
fn a_build_without_web_refuses_a_web_fetch_table_and_says_so() {
    let home = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        home.path().join("config.toml"),
        "[web_fetch]\nallow_domains = [\"example.com\"]\n",
    )
    .expect("config");
    let err = fails(pincer(home.path(), &["status"], ""));
    assert!(
        err.contains("config.toml:1:") && err.contains("feature `web`"),
        "{err}"
    );
    std::fs::remove_file(home.path().join("config.toml")).expect("rm");
    let out = crate::stdout(&pincer(home.path(), &["doctor"], ""));
    assert!(out.contains("built without web_fetch"), "{out}");
}
