use pincer_core::home::Home;
use std::path::{Path, PathBuf};

/// A temporary `PINCER_HOME`, removed when dropped, with helpers to write
/// its config and a scripted model.
#[derive(Debug)]
pub struct TempHome {
    dir: tempfile::TempDir,
    pub home: Home,
}

impl Default for TempHome {
    fn default() -> Self {
        Self::new()
    }
}

impl TempHome {
    pub fn new() -> TempHome {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path().join("home"));
        home.ensure().unwrap();
        TempHome { dir, home }
    }

    /// The home directory.
    pub fn path(&self) -> &Path {
        self.home.root()
    }

    /// A directory next to the home (not inside it), created: a workspace
    /// or a place for files the tests need.
    pub fn sibling(&self, name: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    /// Writes `config.toml`.
    pub fn config(&self, text: &str) -> &Self {
        std::fs::write(self.home.config_path(), text).unwrap();
        self
    }

    /// Writes `script` (the scripted provider's JSON) beside the home and
    /// a config using it as the only provider, with `extra` appended.
    pub fn scripted(&self, script: &serde_json::Value, extra: &str) -> &Self {
        let path = self.dir.path().join("script.json");
        std::fs::write(&path, script.to_string()).unwrap();
        self.config(&format!(
            "[providers.scripted]\nkind = \"scripted\"\nscript = {:?}\n{extra}",
            path.display().to_string()
        ))
    }
}
