//! The read routes: status, metrics, the audit trail, memory, hardware.

use crate::support::{replies, start};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_is_the_status_report() {
    let gw = start(&replies(1), "supervised").await;
    let token = gw.chatter().await;
    let v = gw.get("/api/status", &token).await.json();
    let settings = pincer_runtime::Settings::load(&gw.t.home.config_path()).expect("settings");
    let env = pincer_runtime::Env::from_vars([("PINCER_BOARD", "sim"), ("PATH", "/usr/bin:/bin")]);
    let direct = pincer_runtime::status::report(
        &gw.t.home,
        &settings,
        &env,
        pincer_runtime::status::Depth::Quick,
    )
    .await
    .status();
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&v), keys(&direct));
    assert_eq!(v["policy"], json!({"autonomy": "supervised"}));
    assert_eq!(v["hardware"]["board"], direct["hardware"]["board"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_turns_tools_providers_and_refusals() {
    let gw = start(
        &json!({"turns": [
            {"tool_calls": [{"id": "s", "name": "i2c_scan", "arguments": {}}]},
            {"text": "ok"}
        ]}),
        "supervised",
    )
    .await;
    let token = gw.chatter().await;
    gw.post("/api/chat", &token, r#"{"message": "scan"}"#).await;
    gw.get("/api/status", "wrong").await;
    let r = gw.get("/metrics", &token).await;
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type")
            .unwrap_or("")
            .starts_with("text/plain; version=0.0.4")
    );
    let m = r.body;
    for line in [
        "pincer_turns_total{outcome=\"done\"} 1",
        "pincer_tool_calls_total{decision=\"ok\"} 1",
        "pincer_provider_replies_total{provider=\"scripted\"} 2",
        "pincer_provider_latency_seconds_count{provider=\"scripted\"} 2",
        "pincer_approvals_pending 0",
        "pincer_gateway_unauthorized_total 1",
        "pincer_gateway_pairings_total 1",
    ] {
        assert!(m.lines().any(|l| l == line), "{line} in\n{m}");
    }
    let entries: u64 = m
        .lines()
        .find_map(|l| l.strip_prefix("pincer_audit_entries "))
        .expect("audit gauge")
        .parse()
        .expect("number");
    assert!(entries >= 5, "{entries}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_pages_and_verifies() {
    let gw = start(&replies(3), "supervised").await;
    let token = gw.chatter().await;
    for _ in 0..3 {
        gw.post("/api/chat", &token, r#"{"message": "hi"}"#).await;
    }
    let all = gw.get("/api/audit?limit=500", &token).await.json();
    let seqs: Vec<u64> = all["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["seq"].as_u64().expect("seq"))
        .collect();
    assert!(seqs.len() >= 3);
    assert!(seqs.windows(2).all(|w| w[0] + 1 == w[1]), "{seqs:?}");
    // Page backwards two at a time and get the same entries.
    let mut paged = Vec::new();
    let mut before: Option<u64> = None;
    loop {
        let path = match before {
            Some(b) => format!("/api/audit?limit=2&before={b}"),
            None => "/api/audit?limit=2".to_string(),
        };
        let page = gw.get(&path, &token).await.json();
        let mut got: Vec<u64> = page["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .map(|e| e["seq"].as_u64().expect("seq"))
            .collect();
        assert!(got.len() <= 2);
        got.extend(paged);
        paged = got;
        match page["next_before"].as_u64() {
            Some(b) => before = Some(b),
            None => break,
        }
    }
    assert_eq!(paged, seqs);
    let pairs = gw.get("/api/audit?kind=gateway.pair", &token).await.json();
    assert_eq!(pairs["entries"].as_array().map(Vec::len), Some(1));
    for bad in ["limit=x", "limit=100000", "kind=bogus", "since=1"] {
        let r = gw.get(&format!("/api/audit?{bad}"), &token).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
    }
    let v = gw.get("/api/audit/verify", &token).await.json();
    assert_eq!(v["intact"], true, "{v}");
    assert_eq!(v["report"]["entries"].as_u64(), seqs.last().copied());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_search_finds_pages() {
    let gw = start(&replies(1), "supervised").await;
    let token = gw.chatter().await;
    pincer_runtime::person::write_memory(
        &gw.t.home,
        "human:cli",
        pincer_memory::NewPage {
            id: None,
            title: "Garden care".into(),
            tags: vec![],
            source: "test".into(),
            pinned: false,
            body: "Tomatoes: water every two days.".into(),
        },
    )
    .expect("page");
    let v = gw.get("/api/memory/search?q=tomatoes", &token).await.json();
    assert_eq!(v["hits"][0]["title"], "Garden care", "{v}");
    assert_eq!(gw.get("/api/memory/search", &token).await.status, 400);
    assert_eq!(
        gw.get("/api/memory/search?q=x&limit=nine", &token)
            .await
            .status,
        400
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hardware_reads_are_recorded_under_the_token() {
    let gw = start(&replies(1), "supervised").await;
    let token = gw.chatter().await;
    let id = gw.get("/api/whoami", &token).await.json()["id"]
        .as_str()
        .expect("id")
        .to_string();
    let info = gw.get("/api/hardware", &token).await.json();
    assert_eq!(info["backend"], "sim", "{info}");
    let gpio = gw.get("/api/hardware/gpio", &token).await.json();
    let pins = gpio["pins"].as_array().expect("pins");
    assert!(!pins.is_empty());
    assert!(pins.iter().all(|p| p["level"].is_u64()), "{gpio}");
    let ops = crate::support::entries(&gw, "hw.op");
    assert_eq!(ops.len(), 2, "hw_info and the snapshot");
    assert!(ops.iter().all(|e| e.actor == format!("token:{id}")));
    assert_eq!(crate::support::entries(&gw, "hw.result").len(), 1);
}

/// A Python with the `prometheus_client` package (Debian's
/// `python3-prometheus-client`): `$PINCER_TEST_PYTHON`, `python3` or
/// `/usr/bin/python3`, the first that has it. `None` skips the test, unless
/// `PINCER_REQUIRE_PROMETHEUS_PARSER=1` (CI sets it) makes that a failure.
fn prometheus_python() -> Option<String> {
    let mut candidates = vec!["python3".to_string(), "/usr/bin/python3".to_string()];
    if let Ok(p) = std::env::var("PINCER_TEST_PYTHON") {
        candidates.insert(0, p);
    }
    for py in &candidates {
        let ok = Command::new(py)
            .args(["-c", "import prometheus_client.parser"])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(py.clone());
        }
    }
    assert!(
        std::env::var("PINCER_REQUIRE_PROMETHEUS_PARSER").as_deref() != Ok("1"),
        "none of {candidates:?} has the `prometheus_client` package (PINCER_REQUIRE_PROMETHEUS_PARSER=1)"
    );
    eprintln!("skipped: no python3 with `prometheus_client`");
    None
}

/// `/metrics` as Prometheus's own client library parses it: every sample
/// line accepted, every family typed, the counts and the histogram right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_parse_with_the_reference_parser() {
    let gw = start(
        &json!({"turns": [
            {"tool_calls": [{"id": "s", "name": "i2c_scan", "arguments": {}}]},
            {"text": "ok"},
            {"text": "again"}
        ]}),
        "supervised",
    )
    .await;
    let token = gw.chatter().await;
    gw.post("/api/chat", &token, r#"{"message": "scan"}"#).await;
    gw.post(
        "/api/chat",
        &token,
        r#"{"session": "two", "message": "hi"}"#,
    )
    .await;
    let text = gw.get("/metrics", &token).await.body;
    let Some(py) = prometheus_python() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("metrics.txt");
    std::fs::write(&file, &text).expect("write");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/parse_metrics.py");
    let out = Command::new(&py)
        .arg(&script)
        .arg(&file)
        .output()
        .expect("python");
    assert!(
        out.status.success(),
        "the parser refused it: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let families: Vec<Value> = serde_json::from_slice(&out.stdout).expect("json");
    let samples: Vec<&Value> = families
        .iter()
        .flat_map(|f| f["samples"].as_array().into_iter().flatten())
        .collect();
    let lines = text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count();
    assert_eq!(samples.len(), lines, "every sample line was read:\n{text}");
    let kind = |name: &str| {
        families
            .iter()
            .find(|f| f["name"] == name)
            .and_then(|f| f["type"].as_str())
            .unwrap_or_else(|| panic!("no family {name} in {families:?}"))
            .to_string()
    };
    for f in &families {
        assert_ne!(f["type"], "unknown", "a family without # TYPE: {f}");
    }
    // The client library names a counter's family without `_total`.
    assert_eq!(kind("pincer_turns"), "counter");
    assert_eq!(kind("pincer_tool_calls"), "counter");
    assert_eq!(kind("pincer_provider_latency_seconds"), "histogram");
    assert_eq!(kind("pincer_approvals_pending"), "gauge");
    assert_eq!(kind("pincer_audit_entries"), "gauge");
    let value = |name: &str, labels: Value| {
        samples
            .iter()
            .find(|s| s["name"] == name && s["labels"] == labels)
            .and_then(|s| s["value"].as_f64())
            .unwrap_or_else(|| panic!("no sample {name} {labels}"))
    };
    assert_eq!(value("pincer_turns_total", json!({"outcome": "done"})), 2.0);
    assert_eq!(
        value("pincer_tool_calls_total", json!({"decision": "ok"})),
        1.0
    );
    // The histogram: buckets never decrease, +Inf is the count.
    let mut last = 0.0;
    let mut buckets = 0;
    for s in samples
        .iter()
        .filter(|s| s["name"] == "pincer_provider_latency_seconds_bucket")
    {
        let v = s["value"].as_f64().expect("value");
        assert!(v >= last, "a bucket below the one before: {s}");
        last = v;
        buckets += 1;
    }
    assert!(buckets > 1);
    let count = value(
        "pincer_provider_latency_seconds_count",
        json!({"provider": "scripted"}),
    );
    assert_eq!(count, 3.0);
    assert_eq!(
        value(
            "pincer_provider_latency_seconds_bucket",
            json!({"provider": "scripted", "le": "+Inf"})
        ),
        count
    );
}
