//! The manifest served by a running gateway verifies with pincer's check
//! and with an independent implementation (Python's `cryptography`).

use crate::support::{replies, start};
use std::path::Path;
use std::process::Command;

/// The Python to run: `$PINCER_TEST_PYTHON`, else `python3`. `None` when it
/// or its `cryptography` package is missing — then the test is skipped,
/// unless `PINCER_REQUIRE_PYTHON_CRYPTO=1` (CI sets it) makes that a
/// failure.
fn python() -> Option<String> {
    let py = std::env::var("PINCER_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = Command::new(&py)
        .args([
            "-c",
            "import cryptography.hazmat.primitives.asymmetric.ed25519",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(py);
    }
    assert!(
        std::env::var("PINCER_REQUIRE_PYTHON_CRYPTO").as_deref() != Ok("1"),
        "{py} with the `cryptography` package is required (PINCER_REQUIRE_PYTHON_CRYPTO=1)"
    );
    eprintln!("skipped: {py} with `cryptography` is not installed");
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_served_manifest_verifies_independently() {
    let gw = start(&replies(1), "supervised").await;
    // Public: no token needed.
    let r = gw
        .req("GET", "/.well-known/asap/manifest.json", None, "")
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let doc = r.json();
    pincer_gateway::manifest::verify(&doc).expect("pincer verifies it");
    let m = &doc["manifest"];
    assert!(
        m["id"]
            .as_str()
            .unwrap_or("")
            .starts_with("urn:pincer:agent:")
    );
    assert_eq!(m["endpoints"]["http"], format!("http://{}/api", gw.host()));
    assert!(m["capabilities"].as_array().is_some_and(|c| !c.is_empty()));
    // The key in the manifest is the key in PINCER_HOME/keys.
    let key = pincer_gateway::keys::load(&gw.t.home.keys_dir()).expect("key");
    let hex = pincer_gateway::keys::public_hex(&key);
    let b64 = doc["public_key"].as_str().expect("key");
    assert_eq!(
        pincer_gateway::keys::hex(&base64_decode(b64)),
        hex,
        "the served key is the stored one"
    );
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("manifest.json");
    std::fs::write(&file, &r.body).expect("write");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/verify_manifest.py");
    let out = Command::new(&py)
        .arg(&script)
        .arg(&file)
        .output()
        .expect("python");
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "verified",
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // And Python refuses a tampered one: the check can fail.
    let mut bad = doc.clone();
    bad["manifest"]["endpoints"]["http"] = serde_json::json!("http://evil.example/api");
    std::fs::write(&file, bad.to_string()).expect("write");
    let out = Command::new(&py)
        .arg(&script)
        .arg(&file)
        .output()
        .expect("python");
    assert!(!out.status.success(), "a tampered manifest must not verify");
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .expect("base64")
}
