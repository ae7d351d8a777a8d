//! Skills (AG3): markdown files in `PINCER_HOME/skills/` that extend
//! the system prompt, in file-name order.

use serde::Serialize;
use std::io;
use std::path::{Path, PathBuf};

/// Skills larger than this are refused: a skill is instructions, not data.
pub const MAX_SKILL_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skill {
    /// The file name without `.md`.
    pub name: String,
    pub path: PathBuf,
    pub bytes: usize,
    #[serde(skip)]
    pub content: String,
}

/// A skill file that could not be used, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillProblem {
    pub path: PathBuf,
    pub reason: String,
}

/// Reads every `*.md` in `dir` (a missing directory has no skills). A file
/// that is not UTF-8 or is too large is reported, never silently skipped.
pub fn load(dir: &Path) -> io::Result<(Vec<Skill>, Vec<SkillProblem>)> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), Vec::new())),
        Err(e) => return Err(e),
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md") && p.is_file())
        .collect();
    paths.sort();
    let mut skills = Vec::new();
    let mut problems = Vec::new();
    for path in paths {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        match std::fs::read(&path) {
            Ok(b) if b.len() > MAX_SKILL_BYTES => problems.push(SkillProblem {
                path,
                reason: format!("{} bytes, more than {MAX_SKILL_BYTES}", b.len()),
            }),
            Ok(b) => match String::from_utf8(b) {
                Ok(content) => skills.push(Skill {
                    name,
                    bytes: content.len(),
                    path,
                    content,
                }),
                Err(_) => problems.push(SkillProblem {
                    path,
                    reason: "not UTF-8 text".into(),
                }),
            },
            Err(e) => problems.push(SkillProblem {
                path,
                reason: e.to_string(),
            }),
        }
    }
    Ok((skills, problems))
}

/// The system prompt with every skill appended under its own heading.
pub fn system_prompt(base: &str, skills: &[Skill]) -> String {
    let mut out = base.trim_end().to_string();
    for s in skills {
        out.push_str("\n\n# Skill: ");
        out.push_str(&s.name);
        out.push('\n');
        out.push_str(s.content.trim_end());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_load_in_name_order_and_problems_are_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("b-weather.md"), "Use metric units.").expect("w");
        std::fs::write(dir.path().join("a-greenhouse.md"), "Vents open above 28 C.").expect("w");
        std::fs::write(dir.path().join("notes.txt"), "not a skill").expect("w");
        std::fs::write(dir.path().join("bad.md"), [0xff, 0xfe]).expect("w");
        let (skills, problems) = load(dir.path()).expect("load");
        let names: Vec<_> = skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a-greenhouse", "b-weather"]);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].reason.contains("UTF-8"));
        let prompt = system_prompt("Base.", &skills);
        assert_eq!(
            prompt,
            "Base.\n\n# Skill: a-greenhouse\nVents open above 28 C.\n\n# Skill: b-weather\nUse metric units."
        );
        assert_eq!(load(&dir.path().join("missing")).expect("ok").0, vec![]);
    }
}
