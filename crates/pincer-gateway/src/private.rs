//! Files only the user pincer runs as may touch: the signing key, the token
//! store, the pairing codes. One check, so every store refuses the same
//! things and says the same fix.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

/// What is wrong with a file that should be private.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loose {
    /// Group or others have some access: `mode` is the file's mode.
    Mode { mode: u32 },
    /// Owned by another user.
    Owner { owner: u32, me: u32 },
}

/// `meta` (of a directory or a file) must be owned by the effective user and
/// give group and others no access at all.
pub fn check(meta: &fs::Metadata) -> Result<(), Loose> {
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(Loose::Mode { mode });
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(Loose::Owner {
            owner: meta.uid(),
            me,
        });
    }
    Ok(())
}
