use pincer_core::agent::AgentEvent;
use pincer_core::approvals::DenyAll;
use pincer_core::audit::schema::{ConfigLoad, Kind, PolicyChange};
use pincer_runtime::{Env, Runtime, RuntimeError, RuntimeOptions, Settings};
use pincer_test_support::TempHome;
use serde_json::json;
use std::sync::Arc;

fn start(t: &TempHome) -> Runtime {
    let settings = Settings::load(&t.home.config_path()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(Runtime::start(
        t.home.clone(),
        settings,
        Env::default(),
        RuntimeOptions::default(),
    ))
    .unwrap()
}

fn replies(n: usize) -> serde_json::Value {
    json!({"turns": (0..n).map(|i| json!({"text": format!("reply {i}")})).collect::<Vec<_>>()})
}

/// Several sessions of one runtime run at once; one session has one
/// writer, in this process as in any other.
#[tokio::test]
async fn sessions_run_concurrently_and_each_has_one_writer() {
    let t = TempHome::new();
    t.scripted(&replies(2), "");
    let settings = Settings::load(&t.home.config_path()).unwrap();
    let runtime = Runtime::start(
        t.home.clone(),
        settings,
        Env::default(),
        RuntimeOptions::default(),
    )
    .await
    .unwrap();
    let deny = Arc::new(DenyAll("nobody here".into()));
    let mut a = runtime.open_session("a", deny.clone()).unwrap();
    let mut b = runtime.open_session("b", deny.clone()).unwrap();
    let busy = runtime.open_session("a", deny.clone()).unwrap_err();
    assert!(
        matches!(busy, RuntimeError::Session(_)) && busy.to_string().contains("open for writing"),
        "{busy}"
    );
    let sink = |_: AgentEvent| {};
    let (ra, rb) = tokio::join!(a.run_turn("hello a", &sink), b.run_turn("hello b", &sink));
    let mut got = [ra.unwrap().reply, rb.unwrap().reply];
    got.sort();
    assert_eq!(got, ["reply 0", "reply 1"]);
    assert_eq!(a.messages().len(), 2);
    assert_eq!(b.messages().len(), 2);
}

/// The workspace protects every protected entry of the home, whoever
/// starts the runtime.
#[test]
fn the_workspace_protects_all_of_pincers_state() {
    let t = TempHome::new();
    t.scripted(&replies(1), "");
    let runtime = start(&t);
    let protected = runtime.workspace().protected_paths().to_vec();
    for p in t.home.protected() {
        assert!(
            protected.contains(&p.as_path()),
            "{} is not protected",
            p.display()
        );
    }
}

/// A start records the config it ran with, and a changed policy is a
/// `policy.change` entry.
#[test]
fn a_start_records_the_config_and_a_policy_change() {
    let t = TempHome::new();
    t.scripted(&replies(1), "");
    drop(start(&t));
    t.scripted(&replies(1), "[policy]\nautonomy = \"readonly\"\n");
    let runtime = start(&t);
    let log = runtime.audit().log(None, None).unwrap();
    let kinds: Vec<&str> = log.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            Kind::ConfigLoad.as_str(),
            Kind::ConfigLoad.as_str(),
            Kind::PolicyChange.as_str()
        ]
    );
    let load = log[1].payload::<ConfigLoad>().unwrap().unwrap();
    assert!(load.found && load.sha256.is_some());
    let change = log[2].payload::<PolicyChange>().unwrap().unwrap();
    assert_eq!(change.before["autonomy"], "supervised");
    assert_eq!(change.after["autonomy"], "readonly");
}

/// A new session starts from the last one's handoff; an existing one does
/// not get it again.
#[tokio::test]
async fn a_new_session_gets_the_handoff_of_the_last() {
    let t = TempHome::new();
    t.scripted(&replies(2), "");
    let settings = Settings::load(&t.home.config_path()).unwrap();
    let runtime = Runtime::start(
        t.home.clone(),
        settings,
        Env::default(),
        RuntimeOptions::default(),
    )
    .await
    .unwrap();
    let deny = Arc::new(DenyAll("nobody".into()));
    let mut first = runtime.open_session("first", deny.clone()).unwrap();
    assert!(!first.prompt().handoff, "nothing to resume yet");
    first
        .run_turn("remember the tomatoes", &|_| {})
        .await
        .unwrap();
    drop(first);
    let second = runtime.open_session("second", deny.clone()).unwrap();
    assert!(second.prompt().handoff);
    assert!(second.prompt().text.contains("remember the tomatoes"));
    drop(second);
    let again = runtime.open_session("first", deny).unwrap();
    assert!(
        !again.prompt().handoff,
        "an existing session is not resumed"
    );
}
