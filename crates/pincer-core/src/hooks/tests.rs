use super::*;
use std::path::Path;

/// Bound on waiting for something that should happen promptly.
const PROMPTLY: Duration = Duration::from_secs(10);

/// argv for a `sh -c` test hook; `args` become `$1`, `$2`…
fn sh(script: &str, args: &[&Path]) -> Vec<String> {
    let mut argv = vec!["sh".to_string(), "-c".into(), script.into(), "hook".into()];
    argv.extend(args.iter().map(|p| p.display().to_string()));
    argv
}

fn hook(kind: HookKind, argv: Vec<String>) -> ExternalHook {
    ExternalHook::new(HookSpec::new("test-hook", kind, argv))
}

fn call() -> HookCall {
    HookCall {
        session: "s1".into(),
        call_id: "c7".into(),
        tool: "shell".into(),
        arguments: json!({"command": "rm -rf build"}),
        risk: Risk::High,
        why: "`rm` deletes files".into(),
    }
}

fn request() -> ApprovalRequest {
    let c = call();
    ApprovalRequest {
        call_id: c.call_id,
        call_hash: "feedface".repeat(8),
        session: c.session,
        tool: c.tool,
        arguments: c.arguments,
        risk: c.risk,
        why: c.why,
    }
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

async fn intercept(argv: Vec<String>) -> Result<InterceptVerdict, HookFailure> {
    let h = hook(HookKind::Interceptor, argv);
    tokio::time::timeout(PROMPTLY, h.intercept(&call()))
        .await
        .expect("the hook call did not finish promptly")
}

fn bad_reply(r: Result<InterceptVerdict, HookFailure>) -> String {
    match r {
        Err(HookFailure::BadReply { detail }) => detail,
        other => panic!("expected BadReply, got {other:?}"),
    }
}

#[tokio::test]
async fn interceptor_allow_gets_one_json_object_a_clean_env_and_cwd_root() {
    let dir = tempfile::tempdir().unwrap();
    let (input, env, cwd) = (
        dir.path().join("in.json"),
        dir.path().join("env"),
        dir.path().join("cwd"),
    );
    let argv = sh(
        r#"cat > "$1"; env > "$2"; pwd > "$3"; printf '{"verdict":"allow"}'"#,
        &[&input, &env, &cwd],
    );
    assert_eq!(intercept(argv).await.unwrap(), InterceptVerdict::Allow);

    assert_eq!(
        read_json(&input),
        json!({
            "hook": "interceptor", "version": 1, "session": "s1", "call_id": "c7",
            "tool": "shell", "arguments": {"command": "rm -rf build"},
            "risk": "high", "why": "`rm` deletes files",
        })
    );
    let env = std::fs::read_to_string(&env).unwrap();
    assert!(env.lines().any(|l| l == "PINCER_HOOK=test-hook"), "{env}");
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
    for line in env.lines() {
        let key = line.split('=').next().unwrap();
        // PWD, SHLVL and OLDPWD are set by sh itself.
        assert!(
            [
                "PATH",
                "HOME",
                "LANG",
                "PINCER_HOOK",
                "PWD",
                "SHLVL",
                "OLDPWD",
                "_"
            ]
            .contains(&key),
            "unexpected variable leaked to the hook: {line}"
        );
    }
    assert_eq!(std::fs::read_to_string(&cwd).unwrap().trim(), "/");
}

#[tokio::test]
async fn hook_env_passes_only_path_home_lang() {
    let env = HookEnv::from_vars([
        ("PATH".into(), "/opt/bin".into()),
        ("HOME".into(), "/home/ana".into()),
        ("OPENAI_API_KEY".into(), "sk-secret".into()),
    ]);
    assert_eq!(
        env,
        HookEnv {
            path: "/opt/bin".into(),
            home: Some("/home/ana".into()),
            lang: None
        }
    );
    let mut argv = sh(
        r#"[ "$HOME" = /home/ana ] && [ "$PATH" = /opt/bin ] && [ -z "$OPENAI_API_KEY" ] && printf '{"verdict":"allow"}'"#,
        &[],
    );
    // PATH is /opt/bin now, so the shell itself needs a full path.
    argv[0] = "/bin/sh".into();
    let h = hook(HookKind::Interceptor, argv).with_env(env);
    assert_eq!(h.intercept(&call()).await.unwrap(), InterceptVerdict::Allow);
}

#[tokio::test]
async fn interceptor_block_carries_the_reason() {
    let argv = sh(
        r#"cat >/dev/null; printf '{"verdict":"block","reason":"no rm on Fridays"}'"#,
        &[],
    );
    assert_eq!(
        intercept(argv).await.unwrap(),
        InterceptVerdict::Block {
            reason: "no rm on Fridays".into()
        }
    );
}

#[tokio::test]
async fn interceptor_rewrite_returns_the_new_arguments() {
    // Echoes its whole input back inside the new arguments.
    let argv = sh(
        r#"read -r line; printf '{"verdict":"rewrite","arguments":{"seen":%s}}' "$line""#,
        &[],
    );
    match intercept(argv).await.unwrap() {
        InterceptVerdict::Rewrite { arguments } => {
            let seen = &arguments["seen"];
            assert_eq!(seen["hook"], "interceptor");
            assert_eq!(seen["tool"], "shell");
            assert_eq!(seen["arguments"]["command"], "rm -rf build");
            assert_eq!(seen["risk"], "high");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn bad_replies_are_bad_reply_naming_what_is_wrong() {
    for (stdout, want) in [
        ("not json", "not one JSON object"),
        ("", "nothing on stdout"),
        ("[1]", "not an object"),
        (
            r#"{"verdict":"allow"} {"verdict":"allow"}"#,
            "not one JSON object",
        ),
        (r#"{"verdict":"allow"} junk"#, "not one JSON object"),
        (r#"{"verdict":"maybe"}"#, "unknown verdict `maybe`"),
        (r#"{"verdict":"approve"}"#, "unknown verdict `approve`"),
        (r#"{"verdict":true}"#, "field `verdict`"),
        (r#"{"reason":"x"}"#, "field `verdict` is missing"),
        (r#"{"verdict":"block"}"#, "field `reason` is missing"),
        (
            r#"{"verdict":"block","reason":""}"#,
            "field `reason` is empty",
        ),
        (
            r#"{"verdict":"allow","reason":"x"}"#,
            "field `reason` is not part",
        ),
        (r#"{"verdict":"rewrite"}"#, "field `arguments` is missing"),
        (
            r#"{"verdict":"rewrite","arguments":[1]}"#,
            "must be a JSON object",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let reply = dir.path().join("reply");
        std::fs::write(&reply, stdout).unwrap();
        let detail = bad_reply(intercept(sh(r#"cat "$1""#, &[&reply])).await);
        assert!(detail.contains(want), "{stdout:?}: {detail}");
    }
}

#[tokio::test]
async fn stdout_over_64_kib_is_a_bad_reply_even_if_it_never_ends() {
    let big = sh("head -c 70000 /dev/zero | tr '\\0' a", &[]);
    assert!(bad_reply(intercept(big).await).contains("64 KiB"));
    // `yes` never stops: the cap ends it, not the 5 s timeout.
    let started = std::time::Instant::now();
    assert!(bad_reply(intercept(vec!["yes".into()]).await).contains("64 KiB"));
    assert!(started.elapsed() < HookKind::Interceptor.budget());
}

#[tokio::test]
async fn a_hook_that_ignores_its_input_is_fine() {
    // Far more input than a pipe buffer holds, never read: EPIPE.
    let mut c = call();
    c.arguments = json!({"content": "x".repeat(1 << 20)});
    let h = hook(
        HookKind::Interceptor,
        sh(r#"printf '{"verdict":"allow"}'"#, &[]),
    );
    assert_eq!(h.intercept(&c).await.unwrap(), InterceptVerdict::Allow);
}

/// Whether `pid` is still running (a zombie waiting for its parent to reap
/// it is not).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(") ").next().and_then(|s| s.chars().next());
            !matches!(state, Some('Z' | 'X'))
        }
        Err(_) => false,
    }
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    // The hook (sh) starts a grandchild and waits on it.
    let argv = sh(
        r#"sleep 30 & echo $! > "$1.tmp"; echo $$ >> "$1.tmp"; mv "$1.tmp" "$1"; wait"#,
        &[&pids],
    );
    let mut spec = HookSpec::new("slow", HookKind::Interceptor, argv);
    // The short timeout is the subject under test.
    spec.timeout = Duration::from_millis(500);
    let started = std::time::Instant::now();
    let r = ExternalHook::new(spec).intercept(&call()).await;
    assert!(
        matches!(r, Err(HookFailure::Timeout { after }) if after == Duration::from_millis(500)),
        "{r:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    let msg = r.unwrap_err().to_string();
    assert!(
        msg.contains("500ms") && msg.contains("process group"),
        "{msg}"
    );

    let pids: Vec<u32> = std::fs::read_to_string(&pids)
        .expect("the hook did not start within its timeout")
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2);
    // Death is asynchronous to us: wait for it, boundedly.
    let deadline = std::time::Instant::now() + PROMPTLY;
    while pids.iter().any(|p| alive(*p)) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for p in pids {
        assert!(!alive(p), "pid {p} survived the timeout");
    }
}

#[tokio::test]
async fn a_crash_names_the_status_and_the_start_of_stderr() {
    let r = intercept(sh("echo 'boom: no config file' >&2; exit 3", &[])).await;
    match r {
        Err(HookFailure::Crashed { status, stderr }) => {
            assert_eq!(status, "exited with status 3");
            assert_eq!(stderr, "boom: no config file");
        }
        other => panic!("{other:?}"),
    }
    // Only the first 2 KiB of stderr are kept.
    match intercept(sh("head -c 100000 /dev/zero | tr '\\0' e >&2; exit 1", &[])).await {
        Err(HookFailure::Crashed { stderr, .. }) => assert_eq!(stderr.len(), STDERR_KEEP),
        other => panic!("{other:?}"),
    }
    // Killed by a signal is a crash too.
    match intercept(sh("kill -9 $$", &[])).await {
        Err(e @ HookFailure::Crashed { .. }) => {
            assert!(e.to_string().contains("killed by signal 9"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_failure_naming_it() {
    let r = intercept(vec!["/nonexistent/pincer-hook".into()]).await;
    let e = r.unwrap_err();
    assert!(matches!(e, HookFailure::Spawn { .. }), "{e:?}");
    assert!(e.to_string().contains("`/nonexistent/pincer-hook`"), "{e}");
    let e = run_command(&[], &json!({}), PROMPTLY).await.unwrap_err();
    assert!(e.to_string().contains("empty argv"), "{e}");
}

#[tokio::test]
async fn approval_hook_approves_with_the_call_hash() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.json");
    let h = hook(
        HookKind::Approval,
        sh(r#"cat > "$1"; printf '{"verdict":"approve"}'"#, &[&input]),
    );
    let req = request();
    assert_eq!(
        h.approve(&req).await,
        ApprovalAnswer::Approved {
            call_hash: req.call_hash.clone(),
            by: "hook:test-hook".into()
        }
    );
    let got = read_json(&input);
    assert_eq!(got["hook"], "approval");
    assert_eq!(got["version"], 1);
    assert_eq!(got["call_hash"], req.call_hash.as_str());
    assert_eq!(got["tool"], "shell");
}

#[tokio::test]
async fn approval_hook_deny_timeout_and_crash_are_denials() {
    let deny = hook(
        HookKind::Approval,
        sh(r#"printf '{"verdict":"deny","reason":"not now"}'"#, &[]),
    );
    assert_eq!(
        deny.approve(&request()).await,
        ApprovalAnswer::Denied {
            by: "hook:test-hook".into(),
            reason: "not now".into()
        }
    );

    let mut slow = HookSpec::new("slow", HookKind::Approval, sh("sleep 30", &[]));
    slow.timeout = Duration::from_millis(200);
    let answer = tokio::time::timeout(PROMPTLY, ExternalHook::new(slow).approve(&request()))
        .await
        .unwrap();
    match answer {
        ApprovalAnswer::Denied { by, reason } => {
            assert_eq!(by, "hook:slow");
            assert!(reason.contains("no reply within 200ms"), "{reason}");
        }
        other => panic!("{other:?}"),
    }

    for (script, want) in [
        ("exit 2", "exited with status 2"),
        (r#"printf '{"verdict":"allow"}'"#, "unknown verdict `allow`"),
    ] {
        match hook(HookKind::Approval, sh(script, &[]))
            .approve(&request())
            .await
        {
            ApprovalAnswer::Denied { by, reason } => {
                assert_eq!(by, "hook:test-hook");
                assert!(reason.contains("failed, so the call is denied"), "{reason}");
                assert!(reason.contains(want), "{reason}");
            }
            other => panic!("{script}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn observer_gets_the_report_and_its_stdout_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.json");
    let h = hook(
        HookKind::Observer,
        sh(r#"cat > "$1"; echo 'anything at all'"#, &[&input]),
    );
    let report = CallReport {
        call: call(),
        decision: "approved by ana".into(),
        status: "ok".into(),
        preview: "removed 3 files".into(),
    };
    h.observe(&report).await.unwrap();
    let got = read_json(&input);
    assert_eq!(
        got,
        json!({
            "hook": "observer", "version": 1,
            "call": {"session": "s1", "call_id": "c7", "tool": "shell",
                     "arguments": {"command": "rm -rf build"}, "risk": "high",
                     "why": "`rm` deletes files"},
            "decision": "approved by ana", "status": "ok", "preview": "removed 3 files",
        })
    );
    // A chatty observer is not cut off by the reply cap.
    let chatty = hook(HookKind::Observer, sh("head -c 200000 /dev/zero", &[]));
    chatty.observe(&report).await.unwrap();
}

#[tokio::test]
async fn observer_is_held_to_its_budget_whatever_its_spec_says() {
    let mut spec = HookSpec::new("slow", HookKind::Interceptor, sh("sleep 30", &[]));
    spec.timeout = Duration::from_secs(5);
    let report = CallReport {
        call: call(),
        decision: "allowed".into(),
        status: "ok".into(),
        preview: String::new(),
    };
    let r = tokio::time::timeout(PROMPTLY, ExternalHook::new(spec).observe(&report))
        .await
        .unwrap();
    assert!(
        matches!(r, Err(HookFailure::Timeout { after }) if after == HookKind::Observer.budget()),
        "{r:?}"
    );
}

#[tokio::test]
async fn run_command_returns_the_reply_object() {
    let out = run_command(
        &sh(r#"read -r l; printf '{"got":%s}' "$l""#, &[]),
        &json!({"x": [1, 2]}),
        PROMPTLY,
    )
    .await
    .unwrap();
    assert_eq!(out, json!({"got": {"x": [1, 2]}}));
}

#[test]
fn tools_globs_choose_which_calls_a_hook_sees() {
    let mut spec = HookSpec::new("h", HookKind::Interceptor, vec!["/bin/true".into()]);
    assert!(spec.matches("anything"), "no patterns = every tool");
    spec.tools = vec!["file_*".into(), "shell".into(), "i2c_?ead".into()];
    for (tool, want) in [
        ("file_write", true),
        ("file_read", true),
        ("shell", true),
        ("shells", false),
        ("i2c_read", true),
        ("i2c_write", false),
        ("gpio_write", false),
    ] {
        assert_eq!(spec.matches(tool), want, "{tool}");
        let h = ExternalHook::new(spec.clone());
        assert_eq!(Interceptor::matches(&h, tool), want, "{tool}");
        assert_eq!(Observer::matches(&h, tool), want, "{tool}");
    }
}

#[test]
fn budgets_and_names() {
    assert_eq!(HookKind::Observer.budget(), Duration::from_millis(500));
    assert_eq!(HookKind::Interceptor.budget(), Duration::from_secs(5));
    assert_eq!(HookKind::Approval.budget(), Duration::from_secs(60));
    for k in [
        HookKind::Observer,
        HookKind::Interceptor,
        HookKind::Approval,
    ] {
        assert_eq!(serde_json::to_value(k).unwrap(), json!(k.as_str()));
    }
}

#[test]
fn spec_validation_names_the_field() {
    let ok = HookSpec::new(
        "audit-log",
        HookKind::Observer,
        vec!["/usr/bin/logger".into()],
    );
    ok.validate().unwrap();
    HookSpec::new("x", HookKind::Interceptor, vec!["python3".into()])
        .validate()
        .unwrap();
    let with = |f: &dyn Fn(&mut HookSpec)| {
        let mut s = ok.clone();
        f(&mut s);
        s.validate().unwrap_err().to_string()
    };
    for (msg, field) in [
        (with(&|s| s.name = String::new()), "name"),
        (with(&|s| s.name = "a b".into()), "name"),
        (with(&|s| s.command.clear()), "command"),
        (with(&|s| s.command = vec![String::new()]), "command[0]"),
        (
            with(&|s| s.command = vec!["./hook.sh".into()]),
            "command[0]",
        ),
        (with(&|s| s.command.push("a\0b".into())), "command[1]"),
        (
            with(&|s| s.tools = vec!["shell".into(), String::new()]),
            "tools[1]",
        ),
        (with(&|s| s.timeout = Duration::ZERO), "timeout"),
        (with(&|s| s.timeout = Duration::from_secs(1)), "timeout"),
    ] {
        assert!(msg.contains(&format!("field `{field}`")), "{msg}");
    }
    assert!(with(&|s| s.timeout = Duration::from_secs(1)).contains("observer budget of 500ms"));
}
