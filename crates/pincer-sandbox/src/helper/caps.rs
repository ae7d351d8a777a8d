//! Dropping every capability, verified by reading the sets back.

use super::errno;
use rustix::thread::{CapabilitiesSecureBits, CapabilitySet, CapabilitySets};

/// The highest capability number this kernel knows.
fn last_cap() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(40)
        .min(63)
}

/// Locks root out of capabilities (secure bits), empties the bounding and
/// ambient sets, then the permitted, effective and inheritable sets, and
/// checks that all of them read back empty. After this, not even an exec of
/// a setuid-root or file-capability program can give one back (and
/// `no_new_privs` is set as well).
pub(super) fn drop_all() -> Result<((), String), String> {
    let last = last_cap();
    rustix::thread::set_capabilities_secure_bits(
        CapabilitiesSecureBits::NO_ROOT
            | CapabilitiesSecureBits::NO_ROOT_LOCKED
            | CapabilitiesSecureBits::NO_SETUID_FIXUP
            | CapabilitiesSecureBits::NO_SETUID_FIXUP_LOCKED
            | CapabilitiesSecureBits::KEEP_CAPS_LOCKED,
    )
    .map_err(|e| format!("setting the secure bits: {}", errno(e)))?;
    for n in 0..=last {
        match rustix::thread::remove_capability_from_bounding_set(CapabilitySet::from_bits_retain(
            1 << n,
        )) {
            Ok(()) | Err(rustix::io::Errno::INVAL) => {}
            Err(e) => {
                return Err(format!(
                    "dropping capability {n} from the bounding set: {}",
                    errno(e)
                ));
            }
        }
    }
    rustix::thread::clear_ambient_capability_set()
        .map_err(|e| format!("clearing the ambient set: {}", errno(e)))?;
    let none = CapabilitySet::empty();
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: none,
            permitted: none,
            inheritable: none,
        },
    )
    .map_err(|e| format!("capset: {}", errno(e)))?;

    let now = rustix::thread::capabilities(None).map_err(|e| format!("capget: {}", errno(e)))?;
    if !now.effective.is_empty() || !now.permitted.is_empty() || !now.inheritable.is_empty() {
        return Err(format!("capabilities remain after capset: {now:?}"));
    }
    for n in 0..=last {
        if rustix::thread::capability_is_in_bounding_set(CapabilitySet::from_bits_retain(1 << n))
            .unwrap_or(false)
        {
            return Err(format!("capability {n} is still in the bounding set"));
        }
    }
    Ok((
        (),
        format!(
            "all {} capabilities dropped from every set (bounding, ambient, permitted, effective, inheritable); secure bits noroot, locked",
            last + 1
        ),
    ))
}
