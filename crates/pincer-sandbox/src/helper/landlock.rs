//! Landlock in the init, just before the command starts: one ruleset for
//! the filesystem, TCP and scope layers, built for what the kernel offers
//! and applied as a hard requirement (the crate's best-effort mode would
//! quietly leave out what the kernel lacks; here a missing part is a layer
//! that failed, decided like any other).

use super::{Fatal, LayerLog};
use crate::spec::{Layer, Spec};
use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, LandlockStatus,
    PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use std::path::{Path, PathBuf};

/// The ABI levels whose features differ (7 and 8 only add logging and
/// thread-sync flags, which pincer does not use), with their numbers.
const LEVELS: [(ABI, u32); 8] = [
    (ABI::V1, 1),
    (ABI::V2, 2),
    (ABI::V3, 3),
    (ABI::V4, 4),
    (ABI::V5, 5),
    (ABI::V6, 6),
    (ABI::V9, 9),
    (ABI::V10, 10),
];

fn accepts(abi: ABI, n: u32) -> bool {
    let build = || -> Result<_, landlock::RulesetError> {
        let mut rs = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi))?;
        if n >= 4 {
            rs = rs.handle_access(AccessNet::from_all(abi))?;
        }
        if n >= 6 {
            rs = rs.scope(Scope::AbstractUnixSocket | Scope::Signal)?;
        }
        rs.create()
    };
    build().is_ok()
}

/// The highest ABI level whose features this kernel accepts (the exact ABI
/// is known only once a ruleset is applied, in the helper's report).
fn level() -> Option<(ABI, u32)> {
    let mut best = None;
    for (abi, n) in LEVELS {
        if accepts(abi, n) {
            best = Some((abi, n));
        } else {
            break;
        }
    }
    best
}

/// [`level`] as a number, for the static probe.
pub(crate) fn probe_abi() -> Option<u32> {
    level().map(|(_, n)| n)
}

/// The rules: what the command may touch. The private `/tmp`, `HOME`,
/// `/dev/shm` and `/proc` are granted only when they really are the
/// sandbox's own (`have`): degraded, those paths would be the host's.
fn rules(spec: &Spec, abi: ABI, have: &[Layer]) -> Vec<(PathBuf, BitFlags<AccessFs>)> {
    let rw = AccessFs::from_all(abi);
    let ro = AccessFs::from_read(abi);
    let file =
        AccessFs::ReadFile | AccessFs::WriteFile | (AccessFs::from_file(abi) & AccessFs::Truncate);
    let mut out = vec![
        (spec.workspace.clone(), rw),
        (PathBuf::from("/dev"), BitFlags::from(AccessFs::ReadDir)),
    ];
    if have.contains(&Layer::PrivateTmp) {
        out.push((PathBuf::from("/tmp"), rw));
        if !spec.home.starts_with("/tmp") {
            out.push((spec.home.clone(), rw));
        }
    }
    if have.contains(&Layer::Devices) {
        out.push((PathBuf::from("/dev/shm"), rw));
    }
    if have.contains(&Layer::Proc) {
        out.push((
            PathBuf::from("/proc"),
            AccessFs::ReadFile | AccessFs::ReadDir,
        ));
    }
    for dev in ["null", "zero", "urandom", "tty"] {
        out.push((Path::new("/dev").join(dev), file));
    }
    for p in &spec.read_only {
        out.push((p.clone(), ro));
    }
    out
}

/// Applies the three Landlock layers; returns the kernel's ABI.
/// `have`: the layers in place whose paths get rules (see [`rules`]).
pub(super) fn apply(
    spec: &Spec,
    log: &mut LayerLog<'_>,
    have: &[Layer],
) -> Result<Option<u32>, Fatal> {
    let injected = |l: Layer| spec.inject_failure == Some(l);
    let Some((abi, n)) = level() else {
        let why = "Landlock is not available in this kernel (not built in, or not enabled at boot: it must be in the lsm= list)".to_string();
        log.fail(Layer::LandlockFs, why.clone())?;
        if !spec.network {
            log.fail(Layer::LandlockNet, why.clone())?;
        }
        log.fail(Layer::LandlockScope, why)?;
        return Ok(None);
    };
    // Which parts go into the ruleset; `fs_partial` when the filesystem
    // part is applied but cannot be complete (the layer then counts as
    // degraded — allowed only if the spec says so).
    let mut fs = true;
    let mut fs_partial = false;
    if injected(Layer::LandlockFs) {
        log.fail(
            Layer::LandlockFs,
            "failure injected for this run (spec.inject_failure)".into(),
        )?;
        fs = false;
    } else if n < 3 {
        log.fail(
            Layer::LandlockFs,
            format!("Landlock ABI {n} cannot control truncate(2) (needs ABI 3); applied what ABI {n} can"),
        )?;
        fs_partial = true;
    }
    let mut net = !spec.network;
    if spec.network {
        log.skip(Layer::LandlockNet, "network on for this run");
    } else if injected(Layer::LandlockNet) || n < 4 {
        log.fail(
            Layer::LandlockNet,
            if n < 4 {
                format!("TCP rules need Landlock ABI 4, this kernel has {n}")
            } else {
                "failure injected for this run (spec.inject_failure)".into()
            },
        )?;
        net = false;
    }
    let mut scope = true;
    if injected(Layer::LandlockScope) || n < 6 {
        log.fail(
            Layer::LandlockScope,
            if n < 6 {
                format!("scopes need Landlock ABI 6, this kernel has {n}")
            } else {
                "failure injected for this run (spec.inject_failure)".into()
            },
        )?;
        scope = false;
    }
    if !fs && !net && !scope {
        return Ok(Some(n));
    }

    let restrict = || -> Result<(RulesetStatus, LandlockStatus), String> {
        let e = |e: landlock::RulesetError| e.to_string();
        let mut rs = Ruleset::default().set_compatibility(CompatLevel::HardRequirement);
        if fs {
            rs = rs.handle_access(AccessFs::from_all(abi)).map_err(e)?;
        }
        if net {
            rs = rs.handle_access(AccessNet::from_all(abi)).map_err(e)?;
        }
        if scope {
            rs = rs
                .scope(Scope::AbstractUnixSocket | Scope::Signal)
                .map_err(e)?;
        }
        let mut created = rs.create().map_err(e)?;
        if fs {
            for (path, access) in rules(spec, abi, have) {
                let fd = PathFd::new(&path)
                    .map_err(|err| format!("cannot open {} for a rule: {err}", path.display()))?;
                created = created
                    .add_rule(PathBeneath::new(fd, access))
                    .map_err(|err| format!("rule for {}: {err}", path.display()))?;
            }
        }
        let status = created.restrict_self().map_err(e)?;
        Ok((status.ruleset, status.landlock))
    };
    let kernel_abi = match restrict() {
        Ok((
            RulesetStatus::FullyEnforced,
            LandlockStatus::Available {
                effective_abi,
                kernel_abi,
            },
        )) => kernel_abi
            .and_then(|k| u32::try_from(k).ok())
            .unwrap_or(effective_abi as u32),
        Ok((status, _)) => {
            let why = format!("Landlock reported the ruleset as {status:?}");
            return fail_all(log, fs, net, scope, why).map(|()| Some(n));
        }
        Err(why) => return fail_all(log, fs, net, scope, why).map(|()| Some(n)),
    };
    if fs && !fs_partial {
        let dirs = spec.read_only.len();
        log.apply(Layer::LandlockFs, || {
            Ok((
                (),
                format!(
                    "ABI {kernel_abi}: workspace read-write, /tmp and HOME read-write, {dirs} system directories read-only, /proc read-only, 4 devices; everything else denied"
                ),
            ))
        })?;
    }
    if net {
        log.apply(Layer::LandlockNet, || {
            Ok(((), format!("ABI {kernel_abi}: no TCP bind or connect")))
        })?;
    }
    if scope {
        log.apply(Layer::LandlockScope, || {
            Ok((
                (),
                format!(
                    "ABI {kernel_abi}: no abstract Unix socket and no signal outside the sandbox"
                ),
            ))
        })?;
    }
    Ok(Some(kernel_abi))
}

fn fail_all(
    log: &mut LayerLog<'_>,
    fs: bool,
    net: bool,
    scope: bool,
    why: String,
) -> Result<(), Fatal> {
    for (on, layer) in [
        (fs, Layer::LandlockFs),
        (net, Layer::LandlockNet),
        (scope, Layer::LandlockScope),
    ] {
        if on {
            log.fail(layer, why.clone())?;
        }
    }
    Ok(())
}
