//! A stdio server (the fake) in pincer's sandbox, through the real gate
//! and audit trail: what is offered, calls allowed, refused and invalid,
//! timeouts, a server that dies or sends garbage, a tool list that changes
//! mid-session, start failures, and the sandbox probed from inside.

use crate::support::{TestResult, World, call, check, eventually, fake, rt};
use libtest_mimic::{Failed, Trial};
use pincer_core::gate::{CallOutcome, Refusal};
use pincer_core::policy::{Autonomy, Risk};
use pincer_core::tool::ToolError;
use pincer_mcp::{McpError, Server, tools_of};
use pincer_test_support::Answer;
use serde_json::{Value, json};
use std::time::Duration;

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test(
            "stdio::offers_only_what_the_config_allows_and_can_carry",
            offers,
        ),
        Trial::test(
            "stdio::a_call_runs_through_the_gate_and_lands_in_the_trail",
            through_the_gate,
        ),
        Trial::test(
            "stdio::bad_arguments_are_refused_before_anyone_is_asked",
            invalid_arguments,
        ),
        Trial::test(
            "stdio::a_timeout_cancels_the_call_and_the_server_goes_on",
            timeout,
        ),
        Trial::test(
            "stdio::a_server_that_dies_mid_call_is_a_clear_error_and_restarts",
            dies,
        ),
        Trial::test(
            "stdio::garbage_on_stdout_closes_the_connection_with_the_reason",
            garbage,
        ),
        Trial::test(
            "stdio::results_are_bounded_and_errors_are_tool_errors",
            results,
        ),
        Trial::test(
            "stdio::a_tool_list_changed_mid_session_is_reported_and_refused",
            changed,
        ),
        Trial::test("stdio::start_failures_say_why", start_failures),
        Trial::test(
            "stdio::the_server_cannot_reach_what_the_sandbox_hides",
            confined,
        ),
        Trial::test("stdio::network_and_env_only_as_configured", network_and_env),
    ]
}

fn text(o: &CallOutcome) -> String {
    match o {
        CallOutcome::Ran(Ok(t)) => t.clone(),
        CallOutcome::Ran(Err(e)) => format!("ERR {e}"),
        CallOutcome::Refused { refusal, text } => format!("REFUSED {refusal:?} {text}"),
    }
}

fn offers() -> TestResult {
    let w = World::new();
    rt().block_on(async {
        let cfg = fake(
            "normal",
            r#"["echo", "add", "bad.name", "badschema", "evil"]"#,
            "tool_risk = { echo = \"low\" }",
        );
        let server = Server::start(cfg, w.launch(), Some(w.audit.clone())).await?;
        let listed: Vec<&str> = server.listed().iter().map(|t| t.name.as_str()).collect();
        // Both pages of the listing were read.
        check(
            listed.len() == 15 && listed.contains(&"evil"),
            format!("{listed:?}"),
        )?;
        let offered: Vec<String> = tools_of(&server)
            .iter()
            .map(|t| t.name().to_string())
            .collect();
        check(
            offered == ["fake__echo", "fake__add", "fake__evil"],
            format!("{offered:?}"),
        )?;
        let why = |n: &str| {
            server
                .tool(n)
                .and_then(|t| t.not_offered.clone())
                .unwrap_or_default()
        };
        check(
            why("sleep").contains("not in [mcp.servers.fake] tools"),
            why("sleep"),
        )?;
        check(why("bad.name").contains("cannot carry"), why("bad.name"))?;
        check(why("badschema").contains("not an object"), why("badschema"))?;
        // Untrusted text reaches neither the model nor a terminal raw.
        let evil = server.tool("evil").unwrap();
        check(
            evil.description.starts_with("[MCP server `fake`] Looks")
                && !evil.description.contains('\u{1b}')
                && !evil.description.contains('\u{202e}')
                && !evil.description.contains('\n'),
            &evil.description,
        )?;
        check(
            !server.facts().server.contains('\u{1b}'),
            &server.facts().server,
        )?;
        check(
            server.tool("echo").unwrap().risk == Risk::Low,
            "echo is low",
        )?;
        check(
            server.tool("add").unwrap().risk == Risk::Medium,
            "add is medium by default",
        )?;
        check(server.facts().transport == "stdio", "stdio")?;
        server.shutdown().await;
        Ok::<_, Failed>(())
    })
}

fn through_the_gate() -> TestResult {
    let w = World::new();
    rt().block_on(async {
        let server =
            Server::start(fake("normal", r#"["add", "count"]"#, ""), w.launch(), None).await?;
        let tools = tools_of(&server);
        // Supervised: medium risk asks; a yes runs it.
        let yes = Answer::yes();
        let gate = w.gate(Autonomy::Supervised, yes.clone());
        let o = call(&gate, &tools, "fake__add", json!({"a": 2, "b": 40})).await;
        check(text(&o) == "42", text(&o))?;
        check(
            yes.asked_tools() == ["fake__add"],
            format!("{:?}", yes.asked_tools()),
        )?;
        // A no: nothing reaches the server.
        let gate = w.gate(Autonomy::Supervised, Answer::no());
        let o = call(&gate, &tools, "fake__add", json!({"a": 1, "b": 1})).await;
        check(
            matches!(
                o,
                CallOutcome::Refused {
                    refusal: Refusal::Denied,
                    ..
                }
            ),
            text(&o),
        )?;
        // Readonly blocks medium without asking.
        let gate = w.gate(Autonomy::Readonly, Answer::yes());
        let o = call(&gate, &tools, "fake__add", json!({"a": 1, "b": 1})).await;
        check(
            matches!(
                o,
                CallOutcome::Refused {
                    refusal: Refusal::Blocked,
                    ..
                }
            ),
            text(&o),
        )?;
        let gate = w.gate(Autonomy::Full, Answer::no());
        let o = call(&gate, &tools, "fake__count", json!({})).await;
        // The approved call and this one: nothing refused reached it.
        check(
            text(&o) == "2",
            format!("the server saw only the approved call: {}", text(&o)),
        )?;
        // The trail: every decision, the call's outcome, the subject.
        let entries = w.entries();
        let decisions: Vec<(String, String)> = entries
            .iter()
            .filter(|e| e.kind == "gate.decision")
            .map(|e| {
                (
                    e.data["tool"].as_str().unwrap_or("").into(),
                    e.data["decision"].as_str().unwrap_or("").into(),
                )
            })
            .collect();
        let want: Vec<(String, String)> = [
            ("fake__add", "approved"),
            ("fake__add", "denied"),
            ("fake__add", "blocked"),
            ("fake__count", "allowed"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        check(decisions == want, format!("{decisions:?}"))?;
        let done: Vec<&Value> = entries
            .iter()
            .filter(|e| e.kind == "tool.call")
            .map(|e| &e.data)
            .collect();
        check(done.len() == 2, format!("{done:?}"))?;
        check(
            done[0]["subject"] == json!({"server": "fake", "tool": "add", "transport": "stdio"})
                && done[0]["status"] == "ok",
            format!("{}", done[0]),
        )?;
        server.shutdown().await;
        Ok::<_, Failed>(())
    })
}

fn invalid_arguments() -> TestResult {
    let w = World::new();
    rt().block_on(async {
        let server =
            Server::start(fake("normal", r#"["add", "count"]"#, ""), w.launch(), None).await?;
        let tools = tools_of(&server);
        let asked = Answer::yes();
        let gate = w.gate(Autonomy::Supervised, asked.clone());
        for bad in [json!({"a": "two", "b": 1}), json!({"a": 1}), json!([1, 2])] {
            let o = call(&gate, &tools, "fake__add", bad.clone()).await;
            let t = text(&o);
            check(
                matches!(
                    o,
                    CallOutcome::Refused {
                        refusal: Refusal::Invalid,
                        ..
                    }
                ),
                format!("{bad}: {t}"),
            )?;
            check(t.contains("input schema") || t.contains("JSON object"), &t)?;
        }
        check(
            asked.asked().is_empty(),
            "nobody may be asked about an invalid call",
        )?;
        let gate = w.gate(Autonomy::Full, Answer::no());
        let o = call(&gate, &tools, "fake__count", json!({})).await;
        // Only this call reached it.
        check(
            text(&o) == "1",
            format!("no invalid call reached the server: {}", text(&o)),
        )?;
        let invalid = w
            .entries()
            .iter()
            .filter(|e| e.kind == "gate.decision" && e.data["decision"] == "invalid")
            .count();
        check(invalid == 3, format!("{invalid} invalid decisions"))?;
        Ok::<_, Failed>(())
    })
}

fn timeout() -> TestResult {
    let w = World::new();
    rt().block_on(async {
        let cfg = fake(
            "normal",
            r#"["sleep", "echo"]"#,
            "timeout_secs = 1\nworkspace = \"write\"",
        );
        let server = Server::start(cfg, w.launch(), None).await?;
        let e = server
            .call("sleep", json!({"secs": 3}))
            .await
            .expect_err("must time out");
        check(matches!(e, McpError::Timeout { secs: 1, .. }), &e)?;
        check(
            e.to_string().contains("within 1 s") && e.to_string().contains("cancelled"),
            &e,
        )?;
        // The server was told (it writes what it got into its workspace).
        let told = eventually(Duration::from_secs(10), || {
            w.ws.join("cancelled.txt").exists()
        });
        check(told, "no notifications/cancelled reached the server")?;
        let got = std::fs::read_to_string(w.ws.join("cancelled.txt"))?;
        check(got.contains("requestId"), &got)?;
        // The same connection answers the next call once the sleep is over.
        let out = server.call("echo", json!({"text": "still here"})).await?;
        check(out.text == "still here", &out.text)?;
        Ok::<_, Failed>(())
    })
}

fn dies() -> TestResult {
    let w = World::new();
    rt().block_on(async {
        let server =
            Server::start(fake("normal", r#"["die", "echo"]"#, ""), w.launch(), None).await?;
        let tools = tools_of(&server);
        let gate = w.gate(Autonomy::Full, Answer::no());
        let o = call(&gate, &tools, "fake__die", json!({})).await;
        let t = text(&o);
        check(
            matches!(o, CallOutcome::Ran(Err(ToolError::RespondToModel(_)))),
            &t,
        )?;
        check(t.contains("stopped during the call of `die`"), &t)?;
        check(
            t.contains("exit status: 3") && t.contains("crashing on purpose"),
            &t,
        )?;
        // The next call starts it again, and says so in the trail.
        let o = call(&gate, &tools, "fake__echo", json!({"text": "back"})).await;
        check(text(&o) == "back", text(&o))?;
        let notes = w
            .entries()
            .iter()
            .filter(|e| e.kind == "tool.call" && e.data["tool"] == "fake__echo")
            .map(|e| e.data["notes"].to_string())
            .collect::<String>();
        check(
            notes.contains("started it again") && notes.contains("restart 1 of 3"),
            &notes,
        )?;
        // Restarts are bounded.
        for _ in 0..3 {
            let _ = server.call("die", json!({})).await;
        }
        let e = server
            .call("echo", json!({"text": "x"}))
            .await
            .expect_err("gone");
        check(
            matches!(e, McpError::Gone { .. }) && e.to_string().contains("3 times"),
            &e,
        )?;
        Ok::<_, Failed>(())
    })
}

fn garbage() -> TestResult {
    let w = World::new();
    rt().block_on(async {
        let server = Server::start(
            fake("normal", r#"["garbage", "echo"]"#, ""),
            w.launch(),
            None,
        )
        .await?;
        let t0 = std::time::Instant::now();
        let e = server
            .call("garbage", json!({}))
            .await
            .expect_err("garbage");
        let t = e.to_string();
        check(
            t.contains("not a JSON-RPC message") && t.contains("Traceback"),
            &t,
        )?;
        check(!t.contains('\u{1b}'), "the excerpt is terminal-safe")?;
        // At once, not at the timeout.
        check(
            t0.elapsed() < Duration::from_secs(30),
            format!("{:?}", t0.elapsed()),
        )?;
        let out = server.call("echo", json!({"text": "again"})).await?;
        check(out.text == "again", &out.text)?;
        Ok::<_, Failed>(())
    })
}

fn results() -> TestResult {
    let w = World::new();
    rt().block_on(async {
        let server = Server::start(
            fake("normal", r#"["big", "fail", "rpc_error"]"#, ""),
            w.launch(),
            None,
        )
        .await?;
        let out = server.call("big", json!({})).await?;
        check(
            out.text.len() < 70 * 1024
                && out.text.contains("[... cut: the result was 1048576 bytes"),
            out.text.len(),
        )?;
        let tools = tools_of(&server);
        let gate = w.gate(Autonomy::Full, Answer::no());
        let t = text(&call(&gate, &tools, "fake__fail", json!({})).await);
        check(
            t.starts_with("ERR ") && t.contains("says the call failed: the fake failed"),
            &t,
        )?;
        let t = text(&call(&gate, &tools, "fake__rpc_error", json!({})).await);
        check(t.contains("error -32000: fake refuses"), &t)?;
        let statuses: Vec<String> = w
            .entries()
            .iter()
            .filter(|e| e.kind == "tool.call")
            .map(|e| e.data["status"].to_string())
            .collect();
        check(
            statuses == ["\"error\"", "\"error\""],
            format!("{statuses:?}"),
        )?;
        Ok::<_, Failed>(())
    })
}

fn changed() -> TestResult {
    let w = World::new();
    rt().block_on(async {
        let server = Server::start(
            fake("normal", r#"["*"]"#, ""),
            w.launch(),
            Some(w.audit.clone()),
        )
        .await?;
        let tools = tools_of(&server);
        let before: Vec<String> = tools.iter().map(|t| t.name().to_string()).collect();
        let gate = w.gate(Autonomy::Full, Answer::no());
        check(
            text(&call(&gate, &tools, "fake__change", json!({})).await) == "changed",
            "change",
        )?;
        let seen = eventually(Duration::from_secs(10), || server.refused("echo").is_some());
        check(seen, "the changed description of `echo` was not noticed")?;
        // The changed tool is refused at every level, with the reason.
        let o = call(&gate, &tools, "fake__echo", json!({"text": "x"})).await;
        let t = text(&o);
        check(
            matches!(
                o,
                CallOutcome::Refused {
                    refusal: Refusal::Blocked,
                    ..
                }
            ),
            &t,
        )?;
        check(t.contains("changed the definition of `echo`"), &t)?;
        // Its new tool is not offered; the rest still work.
        let after: Vec<String> = tools_of(&server)
            .iter()
            .map(|t| t.name().to_string())
            .collect();
        check(
            after == before && !after.iter().any(|n| n.contains("newtool")),
            format!("{after:?}"),
        )?;
        check(
            text(&call(&gate, &tools, "fake__add", json!({"a": 1, "b": 1})).await) == "2",
            "add",
        )?;
        let change: Vec<Value> = w
            .entries()
            .iter()
            .filter(|e| e.kind == "mcp.change")
            .map(|e| e.data.clone())
            .collect();
        check(change.len() == 1, format!("{change:?}"))?;
        check(
            change[0]["added"] == json!(["newtool"]) && change[0]["changed"] == json!(["echo"]),
            format!("{}", change[0]),
        )?;
        Ok::<_, Failed>(())
    })
}

fn start_failures() -> TestResult {
    let w = World::new();
    rt().block_on(async {
        let started = |cfg| {
            let launch = w.launch();
            async move {
                Server::start(cfg, launch, None)
                    .await
                    .map(|_| ())
                    .expect_err("must not start")
                    .to_string()
            }
        };
        let e = started(crate::support::server(
            "gone",
            "command = [\"/nonexistent/server\"]\ntools = []\n",
        ))
        .await;
        check(
            e.contains("`gone` did not start") && e.contains("/nonexistent/server"),
            &e,
        )?;
        let e = started(fake("exit", "[]", "")).await;
        check(
            e.contains("exit status: 7") && e.contains("cannot open my database"),
            &e,
        )?;
        let e = started(fake("hang", "[]", "startup_timeout_secs = 1")).await;
        check(e.contains("within 1 s"), &e)?;
        let e = started(fake("noisy", "[]", "")).await;
        check(e.contains("not a JSON-RPC message"), &e)?;
        let e = started(fake("normal", "[]", "env = [\"NOT_SET_ANYWHERE\"]")).await;
        check(e.contains("NOT_SET_ANYWHERE") && e.contains("not set"), &e)?;
        Ok::<_, Failed>(())
    })
}

fn confined() -> TestResult {
    let w = World::new();
    let outside = tempfile::tempdir()?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?.to_string();
    rt().block_on(async {
        let server = Server::start(
            fake("normal", r#"["probe"]"#, "workspace = \"write\""),
            w.launch(),
            None,
        )
        .await?;
        let args = json!({
            "read": [w.state.join("secret"), "/etc/shadow", "/usr/bin/env"],
            "write": [outside.path().join("x"), w.ws.join("inside"), w.state.join("y")],
            "connect": addr,
        });
        let out = server.call("probe", args).await?;
        let v: Value = serde_json::from_str(&out.text)?;
        let ok = |k: &str, i: usize| v[k][i]["ok"].as_bool().unwrap_or(true);
        // Read means bytes came back: a hidden file reads as nothing.
        let read = |i: usize| v["read"][i]["bytes"].as_u64().unwrap_or(0) > 0;
        check(!read(0), format!("read pincer's state: {v}"))?;
        check(!read(1), format!("read /etc/shadow: {v}"))?;
        check(read(2), format!("cannot read the system: {v}"))?;
        check(
            !ok("write", 0) && !outside.path().join("x").exists(),
            format!("wrote outside: {v}"),
        )?;
        check(
            ok("write", 1) && w.ws.join("inside").exists(),
            format!("cannot write its workspace: {v}"),
        )?;
        check(
            !ok("write", 2) && !w.state.join("y").exists(),
            format!("wrote pincer's state: {v}"),
        )?;
        check(
            v["connect"]["ok"] == false,
            format!("reached the network: {v}"),
        )?;
        check(listener.accept().is_err(), "the listener saw a connection")?;
        // Its own PID namespace: the init and the server (and a thread of
        // nothing else).
        check(
            v["processes"].as_u64().unwrap_or(99) <= 3,
            format!("sees host processes: {v}"),
        )?;
        Ok::<_, Failed>(())
    })
}

fn network_and_env() -> TestResult {
    let mut w = World::new();
    w.vars.insert("FAKE_TOKEN".into(), "t0ken".into());
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?.to_string();
    rt().block_on(async {
        let cfg = fake(
            "normal",
            r#"["probe", "env"]"#,
            "network = true\nenv = [\"FAKE_TOKEN\"]",
        );
        let server = Server::start(cfg, w.launch(), None).await?;
        let out = server.call("probe", json!({"connect": addr})).await?;
        check(out.text.contains("\"ok\":true"), &out.text)?;
        check(
            out.notes.iter().any(|n| n.contains("network on")),
            format!("{:?}", out.notes),
        )?;
        let env = server.call("env", json!({})).await?.text;
        let names: Vec<&str> = env.lines().filter_map(|l| l.split('=').next()).collect();
        check(
            names == ["FAKE_TOKEN", "HOME", "PATH", "PINCER_AGENT"],
            format!("{names:?}"),
        )?;
        check(
            env.contains("PINCER_AGENT=agent-test") && env.contains("FAKE_TOKEN=t0ken"),
            &env,
        )?;
        Ok::<_, Failed>(())
    })
}
