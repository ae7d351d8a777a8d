//! The system prompt of a session: the configured prompt, the skills, the
//! pinned facts, and for a new session the handoff of the last one. What
//! could not be included is said in [`Prompt::warnings`], never dropped
//! silently.

use crate::Settings;
use pincer_core::home::Home;
use pincer_core::session::SessionStore;
use pincer_core::text::terminal_safe;
use pincer_memory::PageStore;
use pincer_memory::handoff::{self, MemoryFacts};
use pincer_memory::prompt::{PINNED_MAX_CHARS, facts, pinned_section};

/// A system prompt and what it could not hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prompt {
    pub text: String,
    /// Each a sentence a front-end can show as a warning.
    pub warnings: Vec<String>,
    /// True when the handoff of an earlier session is in it.
    pub handoff: bool,
}

/// Builds the prompt for session `key`; `new_session` adds the handoff (when
/// `[agent] handoff` is on and there is an earlier session to resume).
pub fn build(home: &Home, settings: &Settings, key: &str, new_session: bool) -> Prompt {
    let mut warnings = Vec::new();
    let skills = match pincer_core::skills::load(&home.skills_dir()) {
        Ok((skills, problems)) => {
            for p in &problems {
                warnings.push(format!(
                    "skill {} not loaded: {}",
                    p.path.display(),
                    p.reason
                ));
            }
            skills
        }
        Err(e) => {
            warnings.push(format!(
                "skills not loaded: {}: {e}",
                home.skills_dir().display()
            ));
            Vec::new()
        }
    };
    let mut text = pincer_core::skills::system_prompt(&settings.core.agent.system_prompt, &skills);
    let store = PageStore::open(home.memory_dir());
    // Pinned facts ride in the system prompt, which trimming never drops;
    // the section is capped and says so when a fact did not fit.
    match store
        .as_ref()
        .map_err(ToString::to_string)
        .and_then(|s| pinned_section(s, PINNED_MAX_CHARS).map_err(|e| e.to_string()))
    {
        Ok(section) => {
            if !section.text.is_empty() {
                text.push_str("\n\n");
                text.push_str(&section.text);
            }
            if section.left_out > 0 {
                warnings.push(format!(
                    "{} pinned fact(s) left out of the prompt: the pinned section is capped at {PINNED_MAX_CHARS} characters",
                    section.left_out
                ));
            }
            for p in section.problems {
                warnings.push(format!("memory page not read: {}", terminal_safe(&p)));
            }
        }
        Err(e) => warnings.push(format!("pinned facts not loaded: {e}")),
    }
    let mut with_handoff = false;
    if new_session && settings.core.agent.handoff {
        // Pinned facts are already in the prompt (capped); the handoff adds
        // only the recent pages.
        let memory = match store
            .as_ref()
            .map_err(ToString::to_string)
            .and_then(|s| facts(s).map_err(|e| e.to_string()))
        {
            Ok(f) => MemoryFacts {
                pinned: Vec::new(),
                recent: f.recent,
            },
            Err(e) => {
                warnings.push(format!("memory not read for the handoff: {e}"));
                MemoryFacts::default()
            }
        };
        match handoff::build(home, None, Some(key), memory) {
            Ok(h) if h.session.is_some() => {
                text.push_str("\n\n");
                text.push_str(&handoff::render(&h));
                with_handoff = true;
            }
            Ok(_) => {}
            Err(e) => warnings.push(format!("no handoff: {e}")),
        }
    }
    Prompt {
        text,
        warnings,
        handoff: with_handoff,
    }
}

/// Whether `key` is a session that does not exist yet.
pub fn is_new(store: &SessionStore, key: &str) -> Result<bool, pincer_core::session::SessionError> {
    Ok(!store.exists(key)?)
}
