//! The heartbeat (`[heartbeat] every_secs`): a periodic check-in turn, in
//! its own session `heartbeat`, whose prompt is `PINCER_HOME/HEARTBEAT.md`
//! (the convention OpenClaw and PicoClaw users know). It is quiet unless it
//! has something to say: the agent is told to reply `HEARTBEAT_OK` when
//! nothing needs attention, and such a reply goes nowhere (it is still in
//! the session and the trail). A missing or empty HEARTBEAT.md (only
//! headings, comments or blank lines) runs no turn at all, and the status
//! says so.

use crate::cron::Trigger;
use crate::cron::runner_api::{RunSpec, run_prompt};
use crate::service::{BoxFuture, Service, ServiceCtx, ServiceError};
use std::time::Duration;

/// What a reply with nothing to say is.
pub const QUIET: &str = "HEARTBEAT_OK";

/// Added to the file's text.
const INSTRUCTION: &str = "\n\n---\nThis is a scheduled heartbeat check. Do what the checklist above asks. \
If nothing needs the owner's attention, reply with exactly HEARTBEAT_OK and nothing else.";

/// The heartbeat service.
#[derive(Debug, Clone)]
pub struct HeartbeatService {
    pub every: Duration,
    pub notify: Option<String>,
}

/// The checklist in `text`, or `None` when it holds nothing to check.
pub fn checklist(text: &str) -> Option<&str> {
    let has_content = text.lines().any(|l| {
        let l = l.trim();
        let comment = l.starts_with("<!--") && l.ends_with("-->");
        !(l.is_empty() || l.starts_with('#') || comment)
    });
    has_content.then_some(text)
}

impl Service for HeartbeatService {
    fn name(&self) -> &str {
        "heartbeat"
    }

    fn run(&self, ctx: ServiceCtx) -> BoxFuture<'_, Result<(), ServiceError>> {
        Box::pin(async move {
            let mut shutdown = ctx.shutdown.clone();
            let path = ctx.runtime.home().heartbeat_path();
            ctx.status
                .running(format!("every {} s", self.every.as_secs()));
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(self.every) => {}
                    _ = shutdown.wait() => return Ok(()),
                }
                let text = match std::fs::read_to_string(&path) {
                    Ok(t) => t,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                    Err(e) => {
                        return Err(ServiceError::new(format!(
                            "cannot read {}: {e}",
                            path.display()
                        )));
                    }
                };
                let Some(list) = checklist(&text) else {
                    ctx.status.detail(format!(
                        "every {} s; {} has nothing to check, so no turn runs",
                        self.every.as_secs(),
                        path.display()
                    ));
                    continue;
                };
                let prompt = format!("{list}{INSTRUCTION}");
                let out = run_prompt(
                    &ctx.runtime,
                    Some(&ctx.hub),
                    &ctx.turns,
                    RunSpec {
                        job: "heartbeat",
                        session: "heartbeat".into(),
                        prompt: &prompt,
                        notify: self.notify.as_deref(),
                        trigger: Trigger::Heartbeat,
                        scheduled: None,
                        missed: 0,
                    },
                    Some(QUIET),
                )
                .await
                .map_err(|e| ServiceError::new(e.to_string()))?;
                let said = match (&out.error, &out.delivered_to, &out.delivery_error) {
                    (Some(e), _, _) => format!("last check failed: {e}"),
                    (None, Some(to), _) => format!("last check said something, sent to {to}"),
                    (None, None, Some(e)) => format!("last check said something; {e}"),
                    (None, None, None) => "last check: nothing to say".to_string(),
                };
                ctx.status
                    .detail(format!("every {} s; {said}", self.every.as_secs()));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_checklist_runs_nothing() {
        assert_eq!(checklist(""), None);
        assert_eq!(checklist("# Heartbeat\n\n<!-- add checks -->\n"), None);
        assert!(checklist("# Heartbeat\n- is the greenhouse above 30 °C?\n").is_some());
    }
}
