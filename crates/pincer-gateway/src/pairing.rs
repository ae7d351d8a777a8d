//! Pairing codes and the lockout that keeps them from being guessed.
//!
//! A code is six decimal digits from the operating system's random source,
//! valid for [`CODE_TTL`] (5 minutes) and for one pairing. It is shown only
//! where the person who runs pincer reads it — the gateway's terminal at
//! start, `pincer pair` — never sent over a chat channel or the API.
//!
//! # Files
//!
//! `PINCER_HOME/gateway/codes/HASH.json` (directory 0700, files 0600), where
//! `HASH` is the SHA-256 of the code: `{role, created, expires}`. Any
//! process can issue a code (`pincer pair` beside a running gateway) and the
//! gateway finds it by its hash. Redeeming *removes* the file: of two
//! requests with the same code exactly one removes it, so a code pairs one
//! device. The hash is not a secret (a million codes are hashed in a
//! moment); the directory's mode is what keeps codes from other users, and
//! `PINCER_HOME` is hidden from the agent's tools.
//!
//! # Lockout
//!
//! Six digits are a million codes; [`Lockout`] makes guessing them
//! hopeless. Every attempt *reserves* a slot before the code is looked at,
//! so attempts that arrive together are counted together (fifty requests
//! sent at once are not fifty guesses). Once a peer address has `after`
//! (5) attempts failed or in flight, pairing is locked for that address for
//! `lock_for` (5 minutes); once `after_overall` (20) have, from any
//! addresses, it is locked for everyone — what stops an attacker who
//! rotates addresses, at the price that such an attacker can keep pairing
//! locked (paired devices are not affected). While locked, even the right
//! code is refused. A success clears the counts of its address and the
//! overall count. So at most 20 guesses per 5 minutes reach the codes: the
//! chance to hit a live code within its 5 minutes is 20 in a million.

use crate::tokens::{Role, TokenError, check_private, open_private_dir};
use pincer_core::message::Timestamp;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::net::IpAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a pairing code is valid.
pub const CODE_TTL: Duration = Duration::from_secs(5 * 60);

/// A code just issued, to show the person once.
#[derive(Debug, Clone)]
pub struct IssuedCode {
    pub code: String,
    pub role: Role,
    pub expires: Timestamp,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CodeFile {
    role: Role,
    created: Timestamp,
    expires: Timestamp,
}

/// Why a code did not pair. The gateway answers every one of these the
/// same way: which it was is not the caller's business.
#[derive(Debug, thiserror::Error)]
pub enum RedeemError {
    #[error("not a pairing code (six digits)")]
    Malformed,
    #[error("unknown or already used")]
    Unknown,
    #[error("expired at {0}")]
    Expired(Timestamp),
    #[error(transparent)]
    Store(#[from] TokenError),
}

/// The pairing codes of one gateway directory.
#[derive(Debug, Clone)]
pub struct CodeBook {
    dir: PathBuf,
}

fn io_err(path: &Path, action: &'static str) -> impl FnOnce(io::Error) -> TokenError {
    let path = path.to_path_buf();
    move |source| TokenError::Io {
        path,
        action,
        source,
    }
}

fn code_hash(code: &str) -> String {
    crate::keys::hex(&Sha256::digest(format!("pincer-pairing:{code}").as_bytes()))
}

/// Six digits, uniformly drawn.
fn draw_code() -> Result<String, TokenError> {
    loop {
        let mut b = [0u8; 4];
        getrandom::fill(&mut b).map_err(|e| TokenError::Random(e.to_string()))?;
        let n = u32::from_le_bytes(b);
        // Rejection sampling: 4_294_000_000 is the largest multiple of a
        // million below 2^32, so every code is equally likely.
        if n < 4_294_000_000 {
            return Ok(format!("{:06}", n % 1_000_000));
        }
    }
}

fn after(t: Timestamp, d: Duration) -> Timestamp {
    let ms = t
        .as_millis()
        .saturating_add(u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let st = std::time::UNIX_EPOCH + Duration::from_millis(ms);
    Timestamp::parse(&humantime::format_rfc3339_millis(st).to_string()).unwrap_or(t)
}

impl CodeBook {
    /// Opens `gateway_dir/codes` (created 0700), refusing loose modes.
    pub fn open(gateway_dir: &Path) -> Result<CodeBook, TokenError> {
        open_private_dir(gateway_dir)?;
        let dir = gateway_dir.join("codes");
        open_private_dir(&dir)?;
        Ok(CodeBook { dir })
    }

    fn path(&self, code: &str) -> PathBuf {
        self.dir.join(format!("{}.json", code_hash(code)))
    }

    /// Issues a code for `role`, valid for `ttl`. Durable before it returns.
    pub fn issue(&self, role: Role, ttl: Duration) -> Result<IssuedCode, TokenError> {
        let _ = self.prune();
        let created = Timestamp::now();
        let expires = after(created, ttl);
        let body = CodeFile {
            role,
            created,
            expires,
        };
        let mut line = serde_json::to_vec(&body).unwrap_or_default();
        line.push(b'\n');
        loop {
            let code = draw_code()?;
            let path = self.path(&code);
            let mut f = match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(f) => f,
                // A live code with these digits: draw again.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io_err(&path, "write the pairing code")(e)),
            };
            f.write_all(&line)
                .and_then(|()| f.sync_all())
                .map_err(io_err(&path, "write the pairing code"))?;
            pincer_core::fsutil::sync_dir(&self.dir)
                .map_err(io_err(&self.dir, "sync the codes directory"))?;
            return Ok(IssuedCode {
                code,
                role,
                expires,
            });
        }
    }

    /// Redeems `code` once: the role it pairs, or why not.
    pub fn redeem(&self, code: &str) -> Result<Role, RedeemError> {
        if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
            return Err(RedeemError::Malformed);
        }
        let path = self.path(code);
        let meta = match fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(RedeemError::Unknown),
            Err(e) => return Err(io_err(&path, "read the pairing code")(e).into()),
        };
        check_private(&path, &meta, 0o600)?;
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(RedeemError::Unknown),
            Err(e) => return Err(io_err(&path, "read the pairing code")(e).into()),
        };
        // Whoever removes the file redeems the code; everyone else finds
        // it gone.
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(RedeemError::Unknown),
            Err(e) => return Err(io_err(&path, "use up the pairing code")(e).into()),
        }
        let _ = pincer_core::fsutil::sync_dir(&self.dir);
        let file: CodeFile = serde_json::from_slice(&bytes).map_err(|e| {
            RedeemError::Store(TokenError::Corrupt {
                path: path.clone(),
                detail: e.to_string(),
            })
        })?;
        if Timestamp::now() >= file.expires {
            return Err(RedeemError::Expired(file.expires));
        }
        Ok(file.role)
    }

    /// Removes expired code files; how many.
    pub fn prune(&self) -> Result<usize, TokenError> {
        let now = Timestamp::now();
        let mut removed = 0;
        let rd = fs::read_dir(&self.dir).map_err(io_err(&self.dir, "read the codes directory"))?;
        for e in rd.flatten() {
            let p = e.path();
            let expired = fs::read(&p)
                .ok()
                .and_then(|b| serde_json::from_slice::<CodeFile>(&b).ok())
                .is_some_and(|f| now >= f.expires);
            if expired && fs::remove_file(&p).is_ok() {
                removed += 1;
            }
        }
        Ok(removed)
    }
}

/// Failed (and in-flight) attempts of one peer, or of everyone.
#[derive(Debug, Default, Clone, Copy)]
struct Count {
    failures: u32,
    in_flight: u32,
    locked_until: Option<Instant>,
}

impl Count {
    /// Ends an expired lock; `Some(left)` while locked.
    fn locked(&mut self, now: Instant) -> Option<Duration> {
        match self.locked_until {
            Some(t) if now < t => Some(t - now),
            Some(_) => {
                *self = Count {
                    in_flight: self.in_flight,
                    ..Count::default()
                };
                None
            }
            None => None,
        }
    }

    fn busy(&self) -> bool {
        self.failures > 0 || self.in_flight > 0 || self.locked_until.is_some()
    }
}

/// Pairing is locked; try again after `retry_after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Locked {
    pub retry_after: Duration,
}

/// The most peer addresses tracked at once; beyond it, new addresses are
/// counted only in the overall count (which locks everyone anyway).
const MAX_PEERS: usize = 4096;

#[derive(Debug, Default)]
struct LockState {
    all: Count,
    peers: HashMap<IpAddr, Count>,
}

/// The pairing lockout; see the module doc.
#[derive(Debug)]
pub struct Lockout {
    after: u32,
    after_overall: u32,
    lock_for: Duration,
    state: Mutex<LockState>,
}

/// One reserved attempt; say how it went with [`Attempt::failed`] or
/// [`Attempt::succeeded`]. Dropped without either, it counts as failed.
#[derive(Debug)]
pub struct Attempt<'a> {
    lockout: &'a Lockout,
    peer: IpAddr,
    done: bool,
}

impl Attempt<'_> {
    pub fn failed(mut self) {
        self.finish(false);
    }

    pub fn succeeded(mut self) {
        self.finish(true);
    }

    fn finish(&mut self, ok: bool) {
        if self.done {
            return;
        }
        self.done = true;
        self.lockout.finish(self.peer, ok);
    }
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        self.finish(false);
    }
}

impl Lockout {
    /// Locks an address for `lock_for` once `after` of its attempts failed,
    /// and everyone once `after_overall` did.
    pub fn new(after: u32, after_overall: u32, lock_for: Duration) -> Lockout {
        Lockout {
            after: after.max(1),
            after_overall: after_overall.max(1),
            lock_for,
            state: Mutex::new(LockState::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, LockState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reserves an attempt for `peer`, or says how long pairing is locked.
    pub fn begin(&self, peer: IpAddr) -> Result<Attempt<'_>, Locked> {
        let now = Instant::now();
        let mut st = self.state();
        let lock_for = self.lock_for;
        let (after, after_overall) = (self.after, self.after_overall);
        let full = |c: &Count, n: u32| c.failures + c.in_flight >= n;
        if let Some(left) = st.all.locked(now) {
            return Err(Locked { retry_after: left });
        }
        if st.peers.len() >= MAX_PEERS && !st.peers.contains_key(&peer) {
            st.peers.retain(|_, c| {
                c.locked(now);
                c.busy()
            });
        }
        let tracked = st.peers.len() < MAX_PEERS || st.peers.contains_key(&peer);
        if tracked {
            let c = st.peers.entry(peer).or_default();
            if let Some(left) = c.locked(now) {
                return Err(Locked { retry_after: left });
            }
            if full(c, after) {
                // Earlier attempts are still in flight: wait for them.
                return Err(Locked {
                    retry_after: lock_for,
                });
            }
        }
        if full(&st.all, after_overall) {
            return Err(Locked {
                retry_after: lock_for,
            });
        }
        st.all.in_flight += 1;
        if tracked && let Some(c) = st.peers.get_mut(&peer) {
            c.in_flight += 1;
        }
        Ok(Attempt {
            lockout: self,
            peer,
            done: false,
        })
    }

    fn finish(&self, peer: IpAddr, ok: bool) {
        let now = Instant::now();
        let mut st = self.state();
        let lock_for = self.lock_for;
        let settle = |c: &mut Count, after: u32| {
            c.in_flight = c.in_flight.saturating_sub(1);
            if ok {
                c.failures = 0;
            } else {
                c.failures += 1;
                if c.failures >= after {
                    c.locked_until = Some(now + lock_for);
                }
            }
        };
        settle(&mut st.all, self.after_overall);
        if let Some(c) = st.peers.get_mut(&peer) {
            settle(c, self.after);
        }
    }

    /// Whether pairing is locked for everyone now.
    pub fn locked_for_all(&self) -> bool {
        self.state().all.locked(Instant::now()).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, n])
    }

    #[test]
    fn a_code_pairs_once_and_expires() {
        let tmp = tempfile::tempdir().expect("tmp");
        let book = CodeBook::open(&tmp.path().join("gw")).expect("open");
        let c = book.issue(Role::Approver, CODE_TTL).expect("issue");
        assert_eq!(c.code.len(), 6);
        assert_eq!(book.redeem(&c.code).expect("redeem"), Role::Approver);
        assert!(matches!(book.redeem(&c.code), Err(RedeemError::Unknown)));
        let short = book.issue(Role::Chat, Duration::ZERO).expect("issue");
        assert!(matches!(
            book.redeem(&short.code),
            Err(RedeemError::Expired(_))
        ));
        assert!(matches!(
            book.redeem(&short.code),
            Err(RedeemError::Unknown)
        ));
        for bad in ["", "12345", "1234567", "12345a", "../../x", "１２３４５６"] {
            assert!(
                matches!(book.redeem(bad), Err(RedeemError::Malformed)),
                "{bad}"
            );
        }
    }

    #[test]
    fn codes_are_spread_over_all_six_digits() {
        let mut firsts = std::collections::BTreeSet::new();
        for _ in 0..400 {
            let c = draw_code().expect("draw");
            assert_eq!(c.len(), 6);
            firsts.insert(c.as_bytes()[0]);
        }
        assert_eq!(firsts.len(), 10, "every leading digit shows up");
    }

    #[test]
    fn five_failures_lock_the_peer_but_not_everyone() {
        let l = Lockout::new(5, 20, Duration::from_secs(300));
        for _ in 0..5 {
            l.begin(ip(1)).expect("open").failed();
        }
        assert!(l.begin(ip(1)).is_err(), "the peer is locked");
        l.begin(ip(2)).expect("another address is not").succeeded();
        assert!(!l.locked_for_all());
    }

    #[test]
    fn spread_over_addresses_the_overall_count_locks_everyone() {
        let l = Lockout::new(5, 20, Duration::from_secs(300));
        for n in 0..20 {
            l.begin(ip(n / 4)).expect("open").failed();
        }
        assert!(l.begin(ip(99)).is_err());
        assert!(l.locked_for_all());
    }

    #[test]
    fn attempts_in_flight_count_before_they_fail() {
        let l = Lockout::new(5, 20, Duration::from_secs(300));
        let held: Vec<_> = (0..5).map(|_| l.begin(ip(1)).expect("open")).collect();
        assert!(l.begin(ip(1)).is_err(), "a sixth concurrent guess waits");
        let others: Vec<_> = (0..15)
            .map(|n| l.begin(ip(10 + n)).expect("open"))
            .collect();
        assert!(l.begin(ip(50)).is_err(), "twenty in flight hold everyone");
        drop(held);
        drop(others);
        assert!(l.locked_for_all(), "dropped attempts count as failures");
    }

    #[test]
    fn a_success_clears_the_count_and_a_lock_ends() {
        let l = Lockout::new(3, 20, Duration::from_millis(1));
        l.begin(ip(1)).expect("open").failed();
        l.begin(ip(1)).expect("open").failed();
        l.begin(ip(1)).expect("open").succeeded();
        l.begin(ip(1)).expect("open").failed();
        l.begin(ip(1)).expect("open").failed();
        l.begin(ip(1)).expect("still open: the success reset it");
        let deadline = Instant::now() + Duration::from_secs(5);
        while l.begin(ip(1)).is_err() {
            assert!(Instant::now() < deadline, "the lock never ended");
        }
    }
}
