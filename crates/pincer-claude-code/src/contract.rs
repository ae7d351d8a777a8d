//! The names pincer uses of Claude Code's hook protocol, from one data file
//! (`contract.json`, beside this module) that `scripts/claude-code-contract.sh`
//! also reads to check each name against the installed client. The tool
//! table below is read from it; the protocol's field names are serde
//! attributes in `hook.rs` and `input.rs`, and the tests of this module
//! check that those are exactly the file's.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The file's text, as compiled in.
pub const CONTRACT_JSON: &str = include_str!("contract.json");

/// How pincer judges a Claude Code tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolClass {
    /// Through the shell classifier; the value names the command field.
    Shell(&'static str),
    /// Writes the file its path field names.
    Write(&'static str),
    /// Reads the file its path field names.
    Read(&'static str),
    /// Lists or searches beneath the directory its path field names (the
    /// session's directory when absent).
    Search(&'static str),
    /// Changes nothing outside Claude Code's own session state (its todo
    /// list, plan mode, a subagent whose own calls come through the hooks
    /// again): low risk.
    Low,
    /// Reaches the network: high risk, as the shell classifier rates it.
    Network,
}

#[derive(Debug, Default, Deserialize)]
struct Tools {
    #[serde(default)]
    shell: BTreeMap<String, String>,
    #[serde(default)]
    write: BTreeMap<String, String>,
    #[serde(default)]
    read: BTreeMap<String, String>,
    #[serde(default)]
    search: BTreeMap<String, String>,
    #[serde(default)]
    low: Vec<String>,
    #[serde(default)]
    network: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Optional {
    #[serde(default)]
    tools: Tools,
}

/// The parsed file.
#[derive(Debug, Default, Deserialize)]
pub struct Contract {
    pub client: String,
    pub tested_version: String,
    pub events: Vec<String>,
    pub input_fields: BTreeMap<String, Vec<String>>,
    pub output_fields: Vec<String>,
    pub permission_decisions: Vec<String>,
    pub tool_response_fields: Vec<String>,
    pub settings_fields: Vec<String>,
    pub settings_values: Vec<String>,
    pub settings_files: Vec<String>,
    pub environment: Vec<String>,
    tools: Tools,
    #[serde(default)]
    optional: Optional,
}

/// The contract, parsed once. The file is compiled in and a test parses
/// it, so the empty fallback (every tool unknown, which answers `ask`) is
/// never reached in a build whose tests passed.
pub fn contract() -> &'static Contract {
    static C: OnceLock<Contract> = OnceLock::new();
    C.get_or_init(|| serde_json::from_str(CONTRACT_JSON).unwrap_or_default())
}

impl Contract {
    /// How pincer judges tool `name`; `None` for a tool pincer does not
    /// know (it gets `[claude_code] unknown_tools`).
    pub fn tool_class(&'static self, name: &str) -> Option<ToolClass> {
        for t in [&self.tools, &self.optional.tools] {
            let field = |m: &'static BTreeMap<String, String>| m.get(name).map(|f| f.as_str());
            if let Some(f) = field(&t.shell) {
                return Some(ToolClass::Shell(f));
            }
            if let Some(f) = field(&t.write) {
                return Some(ToolClass::Write(f));
            }
            if let Some(f) = field(&t.read) {
                return Some(ToolClass::Read(f));
            }
            if let Some(f) = field(&t.search) {
                return Some(ToolClass::Search(f));
            }
            if t.low.iter().any(|n| n == name) {
                return Some(ToolClass::Low);
            }
            if t.network.iter().any(|n| n == name) {
                return Some(ToolClass::Network);
            }
        }
        None
    }

    /// Every tool name the contract requires of the installed client.
    pub fn required_tools(&self) -> Vec<&str> {
        let t = &self.tools;
        let mut v: Vec<&str> = [&t.shell, &t.write, &t.read, &t.search]
            .iter()
            .flat_map(|m| m.keys().map(String::as_str))
            .chain(t.low.iter().map(String::as_str))
            .chain(t.network.iter().map(String::as_str))
            .collect();
        v.sort_unstable();
        v
    }

    /// Whether `event` is one of the five hook points pincer handles.
    pub fn handles(&self, event: &str) -> bool {
        self.events.iter().any(|e| e == event)
    }
}
