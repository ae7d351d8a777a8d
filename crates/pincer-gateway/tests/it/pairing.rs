//! Pairing as an attacker tries it: wrong, reused and expired codes, brute
//! force from one address, from many, and all at once.

use crate::support::{replies, start, start_with};
use pincer_gateway::{Limits, Role};
use std::net::Ipv4Addr;
use std::time::Duration;

fn lo(n: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 0, n)
}

/// A six-digit code that is not `code`.
fn wrong(code: &str, n: u32) -> String {
    let c: u32 = code.parse().expect("digits");
    format!("{:06}", (c + 1 + n) % 1_000_000)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_pairs_once_and_the_pairing_is_recorded() {
    let gw = start(&replies(1), "supervised").await;
    let r = gw.pair_from(lo(1), &gw.code).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["role"], "approver");
    let token = v["token"].as_str().expect("token");
    assert_eq!(gw.get("/api/whoami", token).await.status, 200);
    // The same code again: refused, exactly as a wrong one.
    let again = gw.pair_from(lo(1), &gw.code).await;
    let guess = gw.pair_from(lo(1), &wrong(&gw.code, 0)).await;
    assert_eq!(again.status, 401);
    assert_eq!(again.body, guess.body, "a used code looks like a wrong one");
    assert!(again.json().get("token").is_none());
    let pairs = crate::support::entries(&gw, "gateway.pair");
    assert_eq!(pairs.len(), 1);
    assert_eq!(
        pairs[0].actor,
        format!("token:{}", v["id"].as_str().expect("id"))
    );
    assert_eq!(pairs[0].data["from"], "127.0.0.1");
    // The trail records that a code was issued, never the code.
    let codes = crate::support::entries(&gw, "gateway.code");
    assert!(!codes.is_empty());
    let trail = std::fs::read_to_string(gw.t.home.audit_dir().join("trail.jsonl")).expect("trail");
    assert!(!trail.contains(&gw.code), "the code is not in the trail");
    // Nor is the token (only its id).
    assert!(!trail.contains(token));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_code_does_not_pair() {
    let gw = start(&replies(1), "supervised").await;
    let code = pincer_gateway::issue_code(&gw.t.home, Role::Chat, Duration::ZERO, "test")
        .expect("code")
        .code;
    let r = gw.pair_from(lo(1), &code).await;
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(r.body, r#"{"error":"invalid or expired pairing code"}"#);
    // And it stays dead: no second chance once it was tried.
    assert_eq!(gw.pair_from(lo(1), &code).await.status, 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_failures_lock_that_address_even_for_the_right_code() {
    let gw = start(&replies(1), "supervised").await;
    for n in 0..5 {
        let r = gw.pair_from(lo(2), &wrong(&gw.code, n)).await;
        assert_eq!(r.status, 401, "guess {n}: {}", r.body);
    }
    let r = gw.pair_from(lo(2), &gw.code).await;
    assert_eq!(r.status, 429, "locked: {}", r.body);
    assert!(r.header("retry-after").is_some());
    assert!(r.json().get("token").is_none());
    // Malformed codes count as failures too (no free probing).
    let gw2 = start(&replies(1), "supervised").await;
    for bad in ["", "12345", "abcdef", "1234567", "{}"] {
        let r = gw2.pair_from(lo(3), bad).await;
        assert_eq!(r.status, 401, "{bad}");
    }
    assert_eq!(gw2.pair_from(lo(3), &gw2.code).await.status, 429);
    // Another address still pairs with the right code.
    assert_eq!(gw.pair_from(lo(4), &gw.code).await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_from_many_addresses_lock_everyone() {
    let gw = start(&replies(1), "supervised").await;
    let mut n = 0;
    for peer in 10..14u8 {
        for _ in 0..5 {
            let r = gw.pair_from(lo(peer), &wrong(&gw.code, n)).await;
            assert_eq!(r.status, 401);
            n += 1;
        }
    }
    // Twenty failures overall: a fresh address with the right code waits.
    let r = gw.pair_from(lo(99), &gw.code).await;
    assert_eq!(r.status, 429, "{}", r.body);
    let token = {
        // Paired devices are not affected.
        let code = pincer_gateway::issue_code(&gw.t.home, Role::Chat, Duration::from_secs(60), "t")
            .expect("code");
        code.code
    };
    assert_eq!(gw.pair_from(lo(98), &token).await.status, 429);
}

/// Fifty guesses sent at once from one address are at most five guesses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_guesses_is_counted_before_any_is_answered() {
    let gw = std::sync::Arc::new(
        start_with(
            &replies(1),
            "supervised",
            Limits {
                pair_per_minute: 1000,
                ..Limits::default()
            },
        )
        .await,
    );
    let mut tasks = Vec::new();
    for n in 0..50 {
        let gw = gw.clone();
        tasks.push(tokio::spawn(async move {
            let w = wrong(&gw.code, n);
            gw.pair_from(lo(5), &w).await.status
        }));
    }
    let mut by_status = std::collections::BTreeMap::new();
    for t in tasks {
        *by_status.entry(t.await.expect("join")).or_insert(0) += 1;
    }
    let checked = by_status.get(&401).copied().unwrap_or(0);
    assert!(checked <= 5, "{by_status:?}");
    assert_eq!(
        checked + by_status.get(&429).copied().unwrap_or(0),
        50,
        "{by_status:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairing_attempts_are_rate_limited_per_address() {
    let gw = start_with(
        &replies(1),
        "supervised",
        Limits {
            pair_per_minute: 3,
            lockout_after: 100,
            lockout_overall_after: 100,
            ..Limits::default()
        },
    )
    .await;
    for n in 0..3 {
        assert_eq!(gw.pair_from(lo(6), &wrong(&gw.code, n)).await.status, 401);
    }
    let r = gw.pair_from(lo(6), &gw.code).await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert!(r.body.contains("too many pairing attempts"), "{}", r.body);
    assert_eq!(gw.pair_from(lo(7), &gw.code).await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_ends() {
    let gw = start_with(
        &replies(1),
        "supervised",
        Limits {
            lockout_for: Duration::from_millis(300),
            ..Limits::default()
        },
    )
    .await;
    for n in 0..5 {
        gw.pair_from(lo(8), &wrong(&gw.code, n)).await;
    }
    assert_eq!(gw.pair_from(lo(8), &gw.code).await.status, 429);
    let code = gw.code.clone();
    let gw = &gw;
    crate::support::eventually(10, "the lock ends", || {
        let code = code.clone();
        async move { gw.pair_from(lo(8), &code).await.status == 200 }
    })
    .await;
}
