//! Paired devices' tokens, stored hashed in `PINCER_HOME/gateway/tokens.json`.
//!
//! A token is `pincer_ID_SECRET`: `ID` is 12 lowercase hex characters, the
//! public half that names the token (`pincer tokens list`, the audit
//! trail's `token:ID`); `SECRET` is 64 lowercase hex characters (256 bits
//! from the operating system's random source). Only the SHA-256 of the
//! secret is stored: a copy of the file lets nobody in, and a 256-bit
//! secret cannot be guessed, so the check needs no rate limit of its own.
//! The presented secret's hash is compared in constant time.
//!
//! Each token has a [`Role`]: `approver` may answer approvals, `chat` may
//! do everything else. The role is fixed when the token is issued.
//!
//! # File and concurrency
//!
//! The file is one JSON object (`{"version": 1, "tokens": [...]}`), mode
//! 0600, in a directory of mode 0700; a file or directory others can touch
//! is refused (a writable token file lets anyone add a token). Changes
//! (issue, revoke) take an exclusive `flock` on `tokens.lock`, read the
//! file, and replace it with `write_atomic` (temp file, fsync, rename,
//! directory fsync), so `pincer tokens revoke` in another process and the
//! gateway never lose each other's changes. The gateway reads the file
//! again whenever its inode, size or mtime changed, so a revocation takes
//! effect on the next request (and closes open WebSockets at their next
//! message).

use crate::private::{self, Loose};
use pincer_core::message::Timestamp;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Everything `chat` may, and answer approvals.
    Approver,
    /// Chat, read sessions, the trail, memory, hardware and status; never
    /// answer an approval.
    Chat,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Approver => "approver",
            Role::Chat => "chat",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "approver" => Some(Role::Approver),
            "chat" => Some(Role::Chat),
            _ => None,
        }
    }
}

/// One stored token (never its secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenRecord {
    pub id: String,
    /// Lowercase hex SHA-256 of the secret.
    pub sha256: String,
    pub role: Role,
    pub created: Timestamp,
    /// The peer address the pairing came from.
    pub paired_from: String,
}

impl TokenRecord {
    /// The principal recorded in the audit trail: `token:ID`.
    pub fn principal(&self) -> String {
        pincer_core::actor::token(&self.id)
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenFile {
    version: u32,
    tokens: Vec<TokenRecord>,
}

/// A token just issued: the secret is shown once, to the device that
/// paired, and never stored.
#[derive(Debug)]
pub struct Issued {
    pub token: String,
    pub record: TokenRecord,
}

/// Errors of the token store; each names the file or the id.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error(
        "{} has mode {mode:04o}; the gateway's token store must be private: run `chmod {want:o} {}`",
        path.display(),
        path.display()
    )]
    Permissions { path: PathBuf, mode: u32, want: u32 },
    #[error("{} is owned by uid {owner}, not by the user pincer runs as (uid {me})", path.display())]
    Owner { path: PathBuf, owner: u32, me: u32 },
    #[error("{}: unreadable token store: {detail}", path.display())]
    Corrupt { path: PathBuf, detail: String },
    #[error("no token `{id}`; `pincer tokens list` shows the ids")]
    Unknown { id: String },
    #[error("invalid token id `{id}`: an id is 12 lowercase hex characters")]
    BadId { id: String },
    #[error("the operating system's random source failed: {0}")]
    Random(String),
    #[error("{}: cannot {action}: {source}", path.display())]
    Io {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: io::Error,
    },
}

fn io_err(path: &Path, action: &'static str) -> impl FnOnce(io::Error) -> TokenError {
    let path = path.to_path_buf();
    move |source| TokenError::Io {
        path,
        action,
        source,
    }
}

pub(crate) fn check_private(path: &Path, meta: &fs::Metadata, want: u32) -> Result<(), TokenError> {
    private::check(meta).map_err(|l| match l {
        Loose::Mode { mode } => TokenError::Permissions {
            path: path.to_path_buf(),
            mode,
            want,
        },
        Loose::Owner { owner, me } => TokenError::Owner {
            path: path.to_path_buf(),
            owner,
            me,
        },
    })
}

/// Opens `dir` (created 0700 if missing) and checks it is private.
pub(crate) fn open_private_dir(dir: &Path) -> Result<(), TokenError> {
    pincer_core::fsutil::create_private_dir(dir).map_err(io_err(dir, "create the directory"))?;
    let meta = fs::symlink_metadata(dir).map_err(io_err(dir, "inspect the directory"))?;
    check_private(dir, &meta, 0o700)
}

/// Length of a token id, in hex characters.
pub const ID_LEN: usize = 12;
const SECRET_LEN: usize = 64;
const PREFIX: &str = "pincer_";

pub fn validate_id(id: &str) -> Result<(), TokenError> {
    if id.len() == ID_LEN && is_lower_hex(id) {
        Ok(())
    } else {
        let shown: String = id.chars().take(40).collect();
        Err(TokenError::BadId {
            id: shown.escape_debug().to_string(),
        })
    }
}

fn is_lower_hex(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `(id, secret)` of a presented token, if it has the token's shape.
fn split(presented: &str) -> Option<(&str, &str)> {
    let rest = presented.strip_prefix(PREFIX)?;
    let (id, secret) = rest.split_once('_')?;
    (id.len() == ID_LEN && secret.len() == SECRET_LEN && is_lower_hex(id) && is_lower_hex(secret))
        .then_some((id, secret))
}

fn sha256_hex(s: &str) -> String {
    crate::keys::hex(&Sha256::digest(s.as_bytes()))
}

/// Equality whose time does not depend on where the inputs differ.
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What identifies one version of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    ino: u64,
    len: u64,
    mtime: i64,
    mtime_nsec: i64,
}

/// The records as read, and the file version they came from (None: no
/// file).
type Cached = (Option<Stamp>, Arc<Vec<TokenRecord>>);

/// The token store of one gateway directory.
#[derive(Debug)]
pub struct TokenStore {
    dir: PathBuf,
    cache: Mutex<Option<Cached>>,
}

impl TokenStore {
    /// Opens the store in `dir` (normally `PINCER_HOME/gateway`), creating
    /// the directory; refuses a directory or file others can touch.
    pub fn open(dir: &Path) -> Result<TokenStore, TokenError> {
        open_private_dir(dir)?;
        let store = TokenStore {
            dir: dir.to_path_buf(),
            cache: Mutex::new(None),
        };
        store.current()?;
        Ok(store)
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join("tokens.json")
    }

    fn stamp(&self) -> Result<Option<Stamp>, TokenError> {
        let path = self.path();
        match fs::symlink_metadata(&path) {
            Ok(m) => {
                check_private(&path, &m, 0o600)?;
                Ok(Some(Stamp {
                    ino: m.ino(),
                    len: m.len(),
                    mtime: m.mtime(),
                    mtime_nsec: m.mtime_nsec(),
                }))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err(&path, "inspect the token store")(e)),
        }
    }

    fn read_file(&self) -> Result<TokenFile, TokenError> {
        let path = self.path();
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(TokenFile {
                    version: 1,
                    tokens: Vec::new(),
                });
            }
            Err(e) => return Err(io_err(&path, "read the token store")(e)),
        };
        let de = &mut serde_json::Deserializer::from_slice(&bytes);
        let file: TokenFile =
            serde_path_to_error::deserialize(de).map_err(|e| TokenError::Corrupt {
                path: path.clone(),
                detail: format!("field `{}`: {}", e.path(), e.inner()),
            })?;
        if file.version != 1 {
            return Err(TokenError::Corrupt {
                path,
                detail: format!("field `version`: {} is not 1", file.version),
            });
        }
        Ok(file)
    }

    /// The records as the file holds them now (read again if it changed).
    fn current(&self) -> Result<Arc<Vec<TokenRecord>>, TokenError> {
        let stamp = self.stamp()?;
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((s, records)) = cache.as_ref()
            && *s == stamp
        {
            return Ok(records.clone());
        }
        let records = Arc::new(self.read_file()?.tokens);
        *cache = Some((stamp, records.clone()));
        Ok(records)
    }

    /// Every token, oldest first.
    pub fn list(&self) -> Result<Vec<TokenRecord>, TokenError> {
        Ok(self.current()?.as_ref().clone())
    }

    /// The token `presented` names, if it is one of ours. A store that
    /// cannot be read authenticates nobody (and says why in the log).
    pub fn verify(&self, presented: &str) -> Option<TokenRecord> {
        let (id, secret) = split(presented)?;
        let records = match self.current() {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(error = %e, "the token store cannot be read: every request is refused");
                return None;
            }
        };
        let want = sha256_hex(secret);
        records
            .iter()
            .find(|r| r.id == id)
            .filter(|r| ct_eq(r.sha256.as_bytes(), want.as_bytes()))
            .cloned()
    }

    /// Whether token `id` is still in the store.
    pub fn exists(&self, id: &str) -> bool {
        self.current()
            .is_ok_and(|records| records.iter().any(|r| r.id == id))
    }

    /// Runs `change` on the file's records under the store's lock and writes
    /// the result.
    fn change<T>(
        &self,
        change: impl FnOnce(&mut Vec<TokenRecord>) -> Result<T, TokenError>,
    ) -> Result<T, TokenError> {
        let lock_path = self.dir.join("tokens.lock");
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&lock_path)
            .map_err(io_err(&lock_path, "open the token store's lock"))?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| io_err(&lock_path, "lock the token store")(e.into()))?;
        self.stamp()?;
        let mut file = self.read_file()?;
        let out = change(&mut file.tokens)?;
        let mut bytes = serde_json::to_vec_pretty(&file).unwrap_or_default();
        bytes.push(b'\n');
        let path = self.path();
        pincer_core::fsutil::write_atomic(&path, &bytes)
            .map_err(io_err(&path, "write the token store"))?;
        drop::<File>(lock);
        Ok(out)
    }

    /// Issues a token with `role` to a device pairing from `from`.
    pub fn issue(&self, role: Role, from: &str) -> Result<Issued, TokenError> {
        let mut secret_bytes = [0u8; 32];
        getrandom::fill(&mut secret_bytes).map_err(|e| TokenError::Random(e.to_string()))?;
        let secret = crate::keys::hex(&secret_bytes);
        self.change(|tokens| {
            let mut id_bytes = [0u8; ID_LEN / 2];
            let id = loop {
                getrandom::fill(&mut id_bytes).map_err(|e| TokenError::Random(e.to_string()))?;
                let id = crate::keys::hex(&id_bytes);
                if !tokens.iter().any(|t| t.id == id) {
                    break id;
                }
            };
            let record = TokenRecord {
                id: id.clone(),
                sha256: sha256_hex(&secret),
                role,
                created: Timestamp::now(),
                paired_from: from.to_string(),
            };
            tokens.push(record.clone());
            Ok(Issued {
                token: format!("{PREFIX}{id}_{secret}"),
                record,
            })
        })
    }

    /// Removes token `id`.
    pub fn revoke(&self, id: &str) -> Result<TokenRecord, TokenError> {
        validate_id(id)?;
        self.change(|tokens| {
            let i = tokens
                .iter()
                .position(|t| t.id == id)
                .ok_or_else(|| TokenError::Unknown { id: id.to_string() })?;
            Ok(tokens.remove(i))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn issued_tokens_verify_and_wrong_ones_do_not() {
        let tmp = tempfile::tempdir().expect("tmp");
        let store = TokenStore::open(&tmp.path().join("gw")).expect("open");
        let a = store.issue(Role::Approver, "127.0.0.1").expect("issue");
        let b = store.issue(Role::Chat, "127.0.0.1").expect("issue");
        assert_eq!(store.verify(&a.token).map(|r| r.role), Some(Role::Approver));
        assert_eq!(store.verify(&b.token).map(|r| r.role), Some(Role::Chat));
        // The secret never reaches the file.
        let text = fs::read_to_string(store.path()).expect("read");
        assert!(!text.contains(&a.token[PREFIX.len() + ID_LEN + 1..]));
        // A's id with B's secret, a flipped character, a truncation, junk.
        let (a_id, _) = split(&a.token).expect("split");
        let (_, b_secret) = split(&b.token).expect("split");
        let mut flipped = a.token.clone();
        let last = flipped.pop().expect("char");
        flipped.push(if last == '0' { '1' } else { '0' });
        for wrong in [
            format!("{PREFIX}{a_id}_{b_secret}"),
            flipped,
            a.token[..a.token.len() - 1].to_string(),
            String::new(),
            "Bearer x".into(),
            format!("{}X", a.token),
        ] {
            assert!(store.verify(&wrong).is_none(), "{wrong}");
        }
        // Revoked: gone for this store and for one opened earlier.
        let other = TokenStore::open(&tmp.path().join("gw")).expect("open");
        assert!(other.verify(&a.token).is_some());
        store.revoke(&a.record.id).expect("revoke");
        assert!(store.verify(&a.token).is_none());
        assert!(other.verify(&a.token).is_none());
        assert!(other.verify(&b.token).is_some());
        assert!(matches!(
            store.revoke(&a.record.id),
            Err(TokenError::Unknown { .. })
        ));
    }

    #[test]
    fn a_store_others_can_touch_is_refused() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("gw");
        let store = TokenStore::open(&dir).expect("open");
        let a = store.issue(Role::Chat, "x").expect("issue");
        fs::set_permissions(store.path(), fs::Permissions::from_mode(0o666)).expect("chmod");
        assert!(matches!(
            TokenStore::open(&dir),
            Err(TokenError::Permissions { .. })
        ));
        // An open store stops authenticating too.
        assert!(store.verify(&a.token).is_none());
        fs::set_permissions(store.path(), fs::Permissions::from_mode(0o600)).expect("chmod");
        assert!(store.verify(&a.token).is_some());
    }
}
