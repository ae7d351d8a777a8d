//! The agent's signing key: one Ed25519 key in `PINCER_HOME/keys/`,
//! which signs the agent manifest.
//!
//! # File
//!
//! `keys/agent.ed25519` holds the 32-byte secret seed as 64 lowercase hex
//! characters and a newline; the public key is derived from it (`pincer
//! keys show`). The directory is mode 0700 and the file 0600, owned by the
//! user pincer runs as. The key is loaded only through [`load`], which
//! refuses — and says how to fix it — a file or directory that others can
//! read or write, a file owned by someone else, a symlink, or a file of the
//! wrong length: a signing key anyone on the machine can read signs for
//! anyone. [`generate`] writes a fresh key with `create_new` (it never
//! overwrites one) from the operating system's random source.
//!
//! `PINCER_HOME/keys` is protected from the agent's tools (see
//! `pincer_core::home::LAYOUT`): no file tool or sandboxed command reads it.

use ed25519_dalek::SigningKey;
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
#[cfg(test)]
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use zeroize::Zeroize;

/// The key file's name under `PINCER_HOME/keys`.
pub const KEY_FILE: &str = "agent.ed25519";

/// Why the key could not be used; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error(
        "no signing key at {}: run `pincer keys generate`",
        path.display()
    )]
    Missing { path: PathBuf },
    #[error(
        "{} has mode {mode:04o}: a signing key others can read signs for anyone; run `chmod {want:o} {}` (pincer will not use it as it is)",
        path.display(),
        path.display()
    )]
    Permissions { path: PathBuf, mode: u32, want: u32 },
    #[error(
        "{} is owned by uid {owner}, not by the user pincer runs as (uid {me}); run `chown {me} {}`",
        path.display(),
        path.display()
    )]
    Owner { path: PathBuf, owner: u32, me: u32 },
    #[error("{} is not a regular file (a symlink or a directory); replace it with the key file itself", path.display())]
    NotAFile { path: PathBuf },
    #[error("{}: {detail}; restore it from a backup or remove it and run `pincer keys generate`", path.display())]
    Corrupt { path: PathBuf, detail: String },
    #[error("a signing key already exists at {}; pincer never overwrites one (remove it first if you really mean to replace it)", path.display())]
    Exists { path: PathBuf },
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

fn io_err(path: &Path, action: &'static str) -> impl FnOnce(io::Error) -> KeyError {
    let path = path.to_path_buf();
    move |source| KeyError::Io {
        path,
        action,
        source,
    }
}

/// The key file of the keys directory `dir`.
pub fn key_path(dir: &Path) -> PathBuf {
    dir.join(KEY_FILE)
}

/// `path` (a directory or a file) must be owned by us and not reachable by
/// group or others; `want` is the mode to suggest.
fn check_private(path: &Path, meta: &fs::Metadata, want: u32) -> Result<(), KeyError> {
    crate::private::check(meta).map_err(|l| match l {
        crate::private::Loose::Mode { mode } => KeyError::Permissions {
            path: path.to_path_buf(),
            mode,
            want,
        },
        crate::private::Loose::Owner { owner, me } => KeyError::Owner {
            path: path.to_path_buf(),
            owner,
            me,
        },
    })
}

/// Loads the key of the keys directory `dir`, refusing loose permissions.
pub fn load(dir: &Path) -> Result<SigningKey, KeyError> {
    let path = key_path(dir);
    let dir_meta = match fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(KeyError::Missing { path }),
        Err(e) => return Err(io_err(dir, "inspect the keys directory")(e)),
    };
    if !dir_meta.is_dir() {
        return Err(KeyError::NotAFile {
            path: dir.to_path_buf(),
        });
    }
    check_private(dir, &dir_meta, 0o700)?;
    // O_NOFOLLOW: a symlink planted in place of the key is refused, not
    // followed; the checks below are on the file actually opened.
    let mut file = match OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(KeyError::Missing { path }),
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            return Err(KeyError::NotAFile { path });
        }
        Err(e) => return Err(io_err(&path, "open the signing key")(e)),
    };
    let meta = file
        .metadata()
        .map_err(io_err(&path, "inspect the signing key"))?;
    if !meta.is_file() {
        return Err(KeyError::NotAFile { path });
    }
    check_private(&path, &meta, 0o600)?;
    let mut text = String::new();
    (&mut file)
        .take(1024)
        .read_to_string(&mut text)
        .map_err(|e| KeyError::Corrupt {
            path: path.clone(),
            detail: format!("not text: {e}"),
        })?;
    let parsed = parse_hex32(text.trim_end_matches('\n'));
    let found = text.len();
    text.zeroize();
    let mut seed = parsed.ok_or_else(|| KeyError::Corrupt {
        path: path.clone(),
        detail: format!(
            "expected 64 lowercase hex characters and a newline, found {found} characters"
        ),
    })?;
    let key = SigningKey::from_bytes(&seed);
    seed.zeroize();
    Ok(key)
}

fn parse_hex32(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 || !s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        use std::fmt::Write as _;
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Writes a fresh key into the keys directory `dir` (created 0700 if
/// missing), never over an existing one. The file is fsynced, then the
/// directory.
pub fn generate(dir: &Path) -> Result<SigningKey, KeyError> {
    pincer_core::fsutil::create_private_dir(dir)
        .map_err(io_err(dir, "create the keys directory"))?;
    let meta = fs::symlink_metadata(dir).map_err(io_err(dir, "inspect the keys directory"))?;
    check_private(dir, &meta, 0o700)?;
    let path = key_path(dir);
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| KeyError::Random(e.to_string()))?;
    let key = SigningKey::from_bytes(&seed);
    let mut line = hex(&seed);
    line.push('\n');
    seed.zeroize();
    let mut f = match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            return Err(KeyError::Exists { path });
        }
        Err(e) => return Err(io_err(&path, "create the signing key")(e)),
    };
    let written = f.write_all(line.as_bytes()).and_then(|()| f.sync_all());
    // The hex copy of the secret is wiped before it is freed.
    line.zeroize();
    written.map_err(io_err(&path, "write the signing key"))?;
    pincer_core::fsutil::sync_dir(dir).map_err(io_err(dir, "sync the keys directory"))?;
    Ok(key)
}

/// The key of `dir`, generated first if there is none. `Ok((key, true))`
/// when it was just generated.
pub fn load_or_generate(dir: &Path) -> Result<(SigningKey, bool), KeyError> {
    match load(dir) {
        Ok(k) => Ok((k, false)),
        Err(KeyError::Missing { .. }) => match generate(dir) {
            Ok(k) => Ok((k, true)),
            // Another process generated it between our load and create.
            Err(KeyError::Exists { .. }) => load(dir).map(|k| (k, false)),
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    }
}

/// The public key of `key` as lowercase hex.
pub fn public_hex(key: &SigningKey) -> String {
    hex(key.verifying_key().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generate_then_load_gives_the_same_key_and_never_overwrites() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("keys");
        let k = generate(&dir).expect("generate");
        let mode = fs::metadata(key_path(&dir))
            .expect("meta")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        let loaded = load(&dir).expect("load");
        assert_eq!(loaded.to_bytes(), k.to_bytes());
        assert!(matches!(generate(&dir), Err(KeyError::Exists { .. })));
        assert_eq!(load(&dir).expect("load").to_bytes(), k.to_bytes());
    }

    #[test]
    fn loose_modes_are_refused_with_the_fix() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("keys");
        generate(&dir).expect("generate");
        let path = key_path(&dir);
        for mode in [0o644, 0o640, 0o604, 0o660] {
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).expect("chmod");
            let e = load(&dir).expect_err("refused");
            assert!(matches!(e, KeyError::Permissions { .. }), "{e}");
            assert!(e.to_string().contains("chmod 600"), "{e}");
        }
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod");
        let e = load(&dir).expect_err("refused");
        assert!(e.to_string().contains("chmod 700"), "{e}");
    }

    #[test]
    fn a_symlink_and_a_bad_file_are_refused() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("keys");
        pincer_core::fsutil::create_private_dir(&dir).expect("dir");
        let elsewhere = tmp.path().join("k");
        fs::write(&elsewhere, format!("{}\n", "ab".repeat(32))).expect("write");
        fs::set_permissions(&elsewhere, fs::Permissions::from_mode(0o600)).expect("chmod");
        std::os::unix::fs::symlink(&elsewhere, key_path(&dir)).expect("symlink");
        assert!(matches!(load(&dir), Err(KeyError::NotAFile { .. })));
        fs::remove_file(key_path(&dir)).expect("rm");
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(key_path(&dir))
            .expect("create");
        f.write_all(b"not a key\n").expect("write");
        let e = load(&dir).expect_err("refused");
        assert!(matches!(e, KeyError::Corrupt { .. }), "{e}");
    }
}
