//! Rate limits: a token bucket per key (a peer address for pairing, a token
//! id for the API), bounded in the number of keys it tracks.
//!
//! A bucket holds up to `per_minute` requests and refills at `per_minute`
//! per minute, so a client may burst a minute's worth and then goes at the
//! steady rate. Buckets that are full again are forgotten first when the
//! map reaches its bound; if every tracked key is busy, an untracked key is
//! refused (an attacker who floods the map with addresses is refused, the
//! keys already being served are not evicted).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// A request over the limit; the client may retry after `retry_after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limited {
    pub retry_after: Duration,
}

/// A token bucket per key.
#[derive(Debug)]
pub struct RateLimiter<K> {
    per_minute: u32,
    max_keys: usize,
    buckets: Mutex<HashMap<K, Bucket>>,
}

impl<K: Hash + Eq + Clone> RateLimiter<K> {
    pub fn new(per_minute: u32, max_keys: usize) -> RateLimiter<K> {
        RateLimiter {
            per_minute: per_minute.max(1),
            max_keys: max_keys.max(1),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    fn rate_per_sec(&self) -> f64 {
        f64::from(self.per_minute) / 60.0
    }

    fn refill(&self, b: &mut Bucket, now: Instant) {
        let cap = f64::from(self.per_minute);
        b.tokens =
            (b.tokens + now.duration_since(b.at).as_secs_f64() * self.rate_per_sec()).min(cap);
        b.at = now;
    }

    /// Takes one request for `key`.
    pub fn check(&self, key: &K) -> Result<(), Limited> {
        let now = Instant::now();
        let cap = f64::from(self.per_minute);
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if !buckets.contains_key(key) && buckets.len() >= self.max_keys {
            buckets.retain(|_, b| {
                let full =
                    (b.tokens + now.duration_since(b.at).as_secs_f64() * (cap / 60.0)) >= cap;
                !full
            });
            if buckets.len() >= self.max_keys {
                return Err(Limited {
                    retry_after: Duration::from_secs(60),
                });
            }
        }
        let b = buckets.entry(key.clone()).or_insert(Bucket {
            tokens: cap,
            at: now,
        });
        self.refill(b, now);
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            let wait = (1.0 - b.tokens) / self.rate_per_sec();
            Err(Limited {
                retry_after: Duration::from_secs_f64(wait.max(0.001)),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_refused_per_key() {
        let l = RateLimiter::new(5, 100);
        for _ in 0..5 {
            l.check(&"a").expect("within the burst");
        }
        let e = l.check(&"a").expect_err("over");
        assert!(e.retry_after > Duration::ZERO && e.retry_after <= Duration::from_secs(12));
        l.check(&"b").expect("another key has its own bucket");
    }

    #[test]
    fn a_full_map_refuses_new_keys_but_serves_tracked_ones() {
        let l = RateLimiter::new(2, 2);
        l.check(&1).expect("1");
        l.check(&2).expect("2");
        assert!(l.check(&3).is_err(), "both tracked keys are busy");
        l.check(&1).expect("a tracked key is still served");
    }
}
