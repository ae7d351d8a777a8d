//! What this machine offers, for `pincer doctor`: each layer available or
//! not and why, the Landlock ABI, the cgroup version in use. Static checks
//! only (nothing is run); [`crate::Sandbox::check_live`] runs `true` in the
//! sandbox and reports what was actually applied.

use crate::cgroup::{CgroupProbe, Controller};
use crate::spec::Layer;
use serde::Serialize;
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayerProbe {
    pub layer: Layer,
    pub available: bool,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Probe {
    /// pincer has CAP_SYS_ADMIN (root): no user namespace is needed.
    pub root: bool,
    /// The highest Landlock ABI level whose features the kernel accepts
    /// (7 and 8 add nothing pincer uses, so a 7 kernel shows 6 here; the
    /// live check reports the exact number).
    pub landlock_abi: Option<u32>,
    /// "v1", "v2", "v1+v2" or "none".
    pub cgroup_version: &'static str,
    pub cgroup: CgroupProbe,
    pub layers: Vec<LayerProbe>,
}

fn ns(name: &str) -> bool {
    Path::new("/proc/self/ns").join(name).exists()
}

fn read_num(path: &str) -> Option<i64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn layer(layer: Layer, available: bool, detail: impl Into<String>) -> LayerProbe {
    LayerProbe {
        layer,
        available,
        detail: detail.into(),
    }
}

/// Static checks of every layer.
pub fn probe(cgroup: &CgroupProbe) -> Probe {
    let root = rustix::thread::capabilities(None)
        .map(|c| {
            c.effective
                .contains(rustix::thread::CapabilitySet::SYS_ADMIN)
        })
        .unwrap_or(false);
    let abi = crate::helper::probe_abi();
    let mut layers = Vec::new();
    let always = |l: Layer, d: &str| layer(l, true, d);
    layers.push(always(Layer::NoNewPrivs, "prctl(PR_SET_NO_NEW_PRIVS)"));
    layers.push(always(
        Layer::ParentDeath,
        "PR_SET_PDEATHSIG and a watch on pincer's control socket (pidfd)",
    ));
    let userns_max = read_num("/proc/sys/user/max_user_namespaces");
    let debian_gate = read_num("/proc/sys/kernel/unprivileged_userns_clone");
    let apparmor_gate = read_num("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
    let user = if root {
        layer(
            Layer::UserNamespace,
            true,
            "not needed: pincer is root (CAP_SYS_ADMIN)",
        )
    } else if !ns("user") || userns_max == Some(0) {
        layer(
            Layer::UserNamespace,
            false,
            "user namespaces are disabled (user.max_user_namespaces = 0 or not built in)",
        )
    } else if debian_gate == Some(0) {
        layer(
            Layer::UserNamespace,
            false,
            "kernel.unprivileged_userns_clone = 0",
        )
    } else if apparmor_gate == Some(1) {
        layer(
            Layer::UserNamespace,
            false,
            "kernel.apparmor_restrict_unprivileged_userns = 1 (AppArmor blocks unprivileged user namespaces)",
        )
    } else {
        layer(
            Layer::UserNamespace,
            true,
            "unprivileged user namespaces allowed",
        )
    };
    layers.push(user);
    for (l, name) in [
        (Layer::MountNamespace, "mnt"),
        (Layer::PidNamespace, "pid"),
        (Layer::NetworkNamespace, "net"),
        (Layer::IpcNamespace, "ipc"),
        (Layer::UtsNamespace, "uts"),
        (Layer::CgroupNamespace, "cgroup"),
    ] {
        let ok = ns(name);
        layers.push(layer(
            l,
            ok,
            if ok {
                format!("/proc/self/ns/{name} exists")
            } else {
                format!("the kernel has no {name} namespace")
            },
        ));
    }
    let mnt = ns("mnt");
    for (l, d) in [
        (Layer::Proc, "a /proc mounted for the new PID namespace"),
        (Layer::Devices, "a /dev tmpfs with null, zero, urandom, tty"),
        (Layer::PrivateTmp, "a tmpfs /tmp and HOME per run"),
        (Layer::HiddenState, "pincer's state and /run mounted over"),
    ] {
        layers.push(layer(
            l,
            mnt,
            if mnt { d } else { "needs the mount namespace" },
        ));
    }
    let n = abi.unwrap_or(0);
    let ll = |l: Layer, need: u32, what: &str| {
        let ok = n >= need;
        layer(
            l,
            ok,
            if abi.is_none() {
                "Landlock is not available in this kernel".to_string()
            } else if ok {
                format!("{what} (ABI {n} ≥ {need})")
            } else {
                format!("{what} needs Landlock ABI {need}; this kernel has {n}")
            },
        )
    };
    layers.push(ll(
        Layer::LandlockFs,
        3,
        "filesystem rules with truncate control",
    ));
    layers.push(ll(Layer::LandlockNet, 4, "TCP bind/connect rules"));
    layers.push(ll(
        Layer::LandlockScope,
        6,
        "abstract Unix socket and signal scopes",
    ));
    for (l, c) in [
        (Layer::CgroupMemory, &cgroup.memory),
        (Layer::CgroupPids, &cgroup.pids),
    ] {
        layers.push(match c {
            Controller::Available(h) => layer(
                l,
                true,
                format!("cgroup {} under {}", h.version, h.parent.display()),
            ),
            Controller::Unavailable { why } => layer(l, false, why.clone()),
        });
    }
    layers.push(always(
        Layer::Rlimits,
        "setrlimit: CPU time, open files, file size, core",
    ));
    layers.push(always(
        Layer::Capabilities,
        "bounding, ambient and all capability sets emptied",
    ));
    layers.push(always(Layer::NoTerminal, "setsid"));
    layers.push(always(Layer::Environment, "cleared to the allowlist"));
    Probe {
        root,
        landlock_abi: abi,
        cgroup_version: cgroup.version_used(),
        cgroup: cgroup.clone(),
        layers,
    }
}
