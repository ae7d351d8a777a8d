//! The gate from the config (policy, deny lists, `[[hooks]]`), and the
//! `config.load` / `policy.change` entries that record what it was built
//! from.

use crate::{Env, RuntimeError, Settings};
use pincer_core::actor;
use pincer_core::approvals::Approver;
use pincer_core::audit::Audit;
use pincer_core::audit::schema::{ConfigLoad, PolicyChange};
use pincer_core::gate::{Gate, GatePolicy};
use pincer_core::hooks::{ExternalHook, HookKind};
use std::sync::Arc;
use std::time::Duration;

/// The gate for `actor`, asking `approver` for approvals no approval hook
/// answers.
pub fn build(
    settings: &Settings,
    env: &Env,
    audit: Arc<Audit>,
    approver: Arc<dyn Approver>,
    actor: &str,
) -> Gate {
    let policy = &settings.core.policy;
    let mut gate = Gate::new(
        GatePolicy {
            autonomy: policy.autonomy,
            approval_timeout: Duration::from_secs(policy.approval_timeout_secs),
            deny_tools: policy.deny_tools.clone(),
        },
        actor,
        audit,
        approver,
    );
    // Every spec was validated when the config loaded.
    for spec in &settings.core.hooks {
        let hook = Arc::new(ExternalHook::new(spec.clone()).with_env(env.hooks.clone()));
        gate = match spec.kind {
            HookKind::Interceptor => gate.with_interceptor(hook),
            HookKind::Observer => gate.with_observer(hook),
            HookKind::Approval => gate.with_approval_hook(spec.tools.clone(), hook),
        };
    }
    gate
}

/// The file a hook's `program` runs: an absolute path, or a bare name found
/// in the hooks' `PATH`; `None` when there is no executable file there.
pub fn hook_program(program: &str, env: &Env) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.starts_with('/') {
        let p = std::path::PathBuf::from(program);
        return runnable(&p).then_some(p);
    }
    std::env::split_paths(&env.hooks.path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|p| runnable(p))
}

/// Every configured hook's program can run: a hook whose command does not
/// exist is an error when pincer starts, not when a tool is first called.
pub fn check_hooks(settings: &Settings, env: &Env) -> Result<(), RuntimeError> {
    for (i, h) in settings.core.hooks.iter().enumerate() {
        let program = h.command.first().map(String::as_str).unwrap_or_default();
        if hook_program(program, env).is_none() {
            return Err(RuntimeError::HookProgram {
                key: format!("hooks[{i}].command"),
                name: h.name.clone(),
                program: program.to_string(),
            });
        }
    }
    Ok(())
}

/// The part of the config that decides what the agent may do.
pub fn policy_fingerprint(settings: &Settings) -> serde_json::Value {
    let p = &settings.core.policy;
    serde_json::json!({
        "autonomy": p.autonomy,
        "approval_timeout_secs": p.approval_timeout_secs,
        "deny_tools": p.deny_tools,
        "deny_commands": p.deny_commands,
        "hooks": settings.core.hooks,
        "shell": settings.shell,
    })
}

/// A `config.load` entry (file, its hash, the policy in force, what the
/// person was warned of at this start), and a `policy.change` entry when
/// the policy differs from the last load's.
pub fn record_config_load(
    settings: &Settings,
    audit: &Audit,
    warnings: &[String],
) -> Result<(), RuntimeError> {
    let policy = policy_fingerprint(settings);
    let before = audit
        .log(
            Some(1),
            Some(pincer_core::audit::schema::Kind::ConfigLoad.as_str()),
        )?
        .pop()
        .and_then(|e| e.payload::<ConfigLoad>().and_then(Result::ok))
        .map(|c| c.policy);
    audit.record(
        actor::SYSTEM,
        &ConfigLoad {
            path: settings.path.display().to_string(),
            found: settings.found,
            sha256: settings.sha256.clone(),
            policy: policy.clone(),
            warnings: warnings.to_vec(),
        },
    )?;
    if let Some(before) = before
        && before != policy
    {
        audit.record(
            actor::SYSTEM,
            &PolicyChange {
                before,
                after: policy,
            },
        )?;
    }
    Ok(())
}
