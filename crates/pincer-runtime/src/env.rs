//! What pincer takes from its environment, read once by the binary
//! ([`Env::from_vars`] over a snapshot) and passed down. Nothing below the
//! binary reads an environment variable.

use pincer_core::hooks::HookEnv;
use pincer_tools::ShellEnv;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

/// The environment, as far as pincer uses it. Its `Debug` never prints a
/// key.
#[derive(Clone, Default)]
pub struct Env {
    /// `PINCER_WORKSPACE`.
    pub workspace: Option<PathBuf>,
    pub openai_key: Option<String>,
    pub openai_base_url: Option<String>,
    pub anthropic_key: Option<String>,
    pub anthropic_base_url: Option<String>,
    /// `PINCER_MODEL`: the model for a zero-config provider.
    pub model: Option<String>,
    /// Every variable with a name a configured provider's `api_key_env`
    /// could use, by name (only those named are ever read from it).
    vars: Vec<(String, String)>,
    /// PATH and locale for the shell tool's cleared environment.
    pub shell: ShellEnv,
    /// PATH, HOME and LANG for external hooks' cleared environment.
    pub hooks: HookEnv,
    /// `PINCER_BOARD`: `sim`, `jetson`, `rpi` or `auto`.
    pub board: Option<String>,
    /// `PINCER_DEVICE_TREE`: where the board's `compatible` strings are
    /// read (default `/proc/device-tree/compatible`; a container or a test
    /// can name another file).
    pub device_tree: Option<PathBuf>,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |k: &Option<String>| if k.is_some() { "<set>" } else { "<unset>" };
        f.debug_struct("Env")
            .field("workspace", &self.workspace)
            .field("openai_key", &set(&self.openai_key))
            .field("openai_base_url", &self.openai_base_url)
            .field("anthropic_key", &set(&self.anthropic_key))
            .field("anthropic_base_url", &self.anthropic_base_url)
            .field("model", &self.model)
            .field("board", &self.board)
            .finish_non_exhaustive()
    }
}

impl Env {
    /// Picks what pincer uses out of a snapshot of the environment (e.g.
    /// `std::env::vars_os()`). An empty value counts as unset.
    pub fn from_vars<I, K, V>(vars: I) -> Env
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        let all: Vec<(OsString, OsString)> = vars
            .into_iter()
            .map(|(k, v)| (k.as_ref().to_os_string(), v.as_ref().to_os_string()))
            .collect();
        let text = |k: &str| {
            all.iter()
                .find(|(n, _)| n == k)
                .and_then(|(_, v)| v.to_str())
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        Env {
            workspace: all
                .iter()
                .find(|(n, v)| n == "PINCER_WORKSPACE" && !v.is_empty())
                .map(|(_, v)| PathBuf::from(v)),
            openai_key: text("OPENAI_API_KEY"),
            openai_base_url: text("OPENAI_BASE_URL"),
            anthropic_key: text("ANTHROPIC_API_KEY"),
            anthropic_base_url: text("ANTHROPIC_BASE_URL"),
            model: text("PINCER_MODEL"),
            board: text("PINCER_BOARD"),
            device_tree: all
                .iter()
                .find(|(n, v)| n == "PINCER_DEVICE_TREE" && !v.is_empty())
                .map(|(_, v)| PathBuf::from(v)),
            vars: all
                .iter()
                .filter_map(|(k, v)| {
                    let k = k.to_str()?;
                    let v = v.to_str()?;
                    (pincer_core::config::is_env_name(k) && !v.is_empty())
                        .then(|| (k.to_string(), v.to_string()))
                })
                .collect(),
            shell: ShellEnv::from_vars(all.iter().map(|(k, v)| (k, v))),
            hooks: HookEnv::from_vars(all.iter().cloned()),
        }
    }

    /// The value of the variable `name` (a provider's `api_key_env`).
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Values of pincer's environment no command may ever see: the API keys
    /// (the zero-config ones, each configured provider's `api_key_env`)
    /// and every variable whose name says it holds a secret (`*KEY*`,
    /// `*TOKEN*`, `*SECRET*`, `*PASSWORD*`). Values under 8 characters are
    /// left out: they would match ordinary text. `pincer sandbox check`
    /// proves none reaches a sandboxed command.
    pub fn secrets(&self, settings: &crate::Settings) -> Vec<String> {
        let named: Vec<&str> = settings
            .providers
            .iter()
            .filter_map(|p| p.api_key_env.as_deref())
            .collect();
        let secret_name = |k: &str| {
            let k = k.to_ascii_uppercase();
            named.contains(&k.as_str())
                || ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD"]
                    .iter()
                    .any(|w| k.contains(w))
        };
        let mut out: Vec<String> = [&self.openai_key, &self.anthropic_key]
            .into_iter()
            .flatten()
            .cloned()
            .chain(
                self.vars
                    .iter()
                    .filter(|(k, _)| secret_name(k))
                    .map(|(_, v)| v.clone()),
            )
            .filter(|v| v.len() >= 8)
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The board `PINCER_BOARD` would name (the demo pins the simulated
    /// one).
    pub fn with_board(mut self, board: &str) -> Env {
        self.board = Some(board.to_string());
        self
    }

    /// Sets `name` (tests and front-ends that build an `Env` by hand).
    pub fn with_var(mut self, name: &str, value: &str) -> Env {
        self.vars.retain(|(k, _)| k != name);
        self.vars.push((name.to_string(), value.to_string()));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_prints_a_key() {
        let env = Env::from_vars([
            ("OPENAI_API_KEY", "sk-secret"),
            ("MY_KEY", "also-secret"),
            ("PINCER_MODEL", "m"),
        ]);
        let shown = format!("{env:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert_eq!(env.var("MY_KEY"), Some("also-secret"));
        assert_eq!(env.model.as_deref(), Some("m"));
        assert_eq!(Env::from_vars([("PINCER_MODEL", "")]).model, None);
    }

    #[test]
    fn secrets_are_the_keys_and_secret_named_variables() {
        let env = Env::from_vars([
            ("OPENAI_API_KEY", "sk-openai-123"),
            ("GITHUB_TOKEN", "ghp-123456789"),
            ("DB_PASSWORD", "hunter2-long"),
            ("SHORT_KEY", "abc"),
            ("PATH", "/usr/bin:/bin:/sbin"),
            ("LANG", "C.UTF-8-long-value"),
        ]);
        let got = env.secrets(&crate::Settings::defaults(std::path::Path::new("x")));
        assert_eq!(got, ["ghp-123456789", "hunter2-long", "sk-openai-123"]);
    }
}
