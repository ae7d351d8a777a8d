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
/// that is not a regular file, lives on a kernel pseudo-filesystem, is too
/// large or is not UTF-8 is reported, never silently skipped — and never
/// read past [`MAX_SKILL_BYTES`]: a symlink to `/proc/self/pagemap`, a
/// FIFO or a device is refused before anything is read from it.
pub fn load(dir: &Path) -> io::Result<(Vec<Skill>, Vec<SkillProblem>)> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), Vec::new())),
        Err(e) => return Err(e),
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    paths.sort();
    let mut skills = Vec::new();
    let mut problems = Vec::new();
    for path in paths {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        match read_skill(&path) {
            Ok(content) => skills.push(Skill {
                name,
                bytes: content.len(),
                path,
                content,
            }),
            Err(reason) => problems.push(SkillProblem { path, reason }),
        }
    }
    Ok((skills, problems))
}

/// `f_type` of filesystems whose files are not data: sizes are made up (0
/// or a page) and a read may never end (`/proc/self/pagemap`) or have
/// effects.
const PSEUDO_FILESYSTEMS: &[(u64, &str)] = &[
    (0x9fa0, "proc"),
    (0x6265_6572, "sysfs"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0x7363_6673, "securityfs"),
    (0x0027_e0eb, "cgroup"),
    (0x6367_7270, "cgroup2"),
    (0xcafe_4a11, "bpf"),
    (0x6265_6570, "configfs"),
    (0xde5e_81e4, "efivarfs"),
];

fn kind(ft: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// One skill file: checked by type, filesystem and size before a byte is
/// read, then read with a bound whatever it claimed.
fn read_skill(path: &Path) -> Result<String, String> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    // What the path (symlinks followed) is, before opening it: opening a
    // device or a FIFO can block or have effects.
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.file_type().is_file() {
        return Err(format!("{}, not a regular file", kind(meta.file_type())));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32)
        .open(path)
        .map_err(|e| e.to_string())?;
    // And what was opened: the same file, still regular (not swapped since).
    let opened = file.metadata().map_err(|e| e.to_string())?;
    if !opened.file_type().is_file() || (opened.dev(), opened.ino()) != (meta.dev(), meta.ino()) {
        return Err("changed while being opened".into());
    }
    let fs = rustix::fs::fstatfs(&file).map_err(|e| e.to_string())?;
    let f_type = fs.f_type as u64;
    if let Some((_, name)) = PSEUDO_FILESYSTEMS.iter().find(|(t, _)| *t == f_type) {
        return Err(format!(
            "a file of the kernel's {name} filesystem, not a skill (its size is not real and reading it may never end)"
        ));
    }
    if opened.len() > MAX_SKILL_BYTES as u64 {
        return Err(format!(
            "{} bytes, more than {MAX_SKILL_BYTES}",
            opened.len()
        ));
    }
    let mut buf = Vec::new();
    file.take(MAX_SKILL_BYTES as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| e.to_string())?;
    if buf.len() > MAX_SKILL_BYTES {
        return Err(format!(
            "more than {MAX_SKILL_BYTES} bytes (it grew while being read)"
        ));
    }
    String::from_utf8(buf).map_err(|_| "not UTF-8 text".to_string())
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

    fn problem_of<'a>(problems: &'a [SkillProblem], name: &str) -> &'a str {
        problems
            .iter()
            .find(|p| p.path.file_name().is_some_and(|n| n == name))
            .map(|p| p.reason.as_str())
            .unwrap_or_else(|| panic!("no problem for {name}: {problems:?}"))
    }

    /// Links and special files are judged by what they lead to, and never
    /// read without a bound: /proc/self/pagemap would otherwise be read
    /// until memory runs out, a FIFO would block the load forever.
    #[test]
    fn special_files_are_refused_before_they_are_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        std::os::unix::fs::symlink("/proc/self/pagemap", d.join("pagemap.md")).expect("ln");
        std::os::unix::fs::symlink("/proc/self/status", d.join("status.md")).expect("ln");
        std::os::unix::fs::symlink("/dev/zero", d.join("zero.md")).expect("ln");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            d.join("fifo.md"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");
        std::fs::create_dir(d.join("dir.md")).expect("mkdir");
        std::fs::write(d.join("big.md"), vec![b'a'; MAX_SKILL_BYTES + 1]).expect("w");
        std::fs::write(d.join("real.txt"), "Water at dawn.").expect("w");
        std::os::unix::fs::symlink(d.join("real.txt"), d.join("linked.md")).expect("ln");
        let (skills, problems) = load(d).expect("load");
        let names: Vec<_> = skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["linked"], "{problems:?}");
        assert_eq!(skills[0].content, "Water at dawn.");
        assert!(problem_of(&problems, "pagemap.md").contains("proc filesystem"));
        assert!(problem_of(&problems, "status.md").contains("proc filesystem"));
        assert!(problem_of(&problems, "zero.md").contains("character device"));
        assert!(problem_of(&problems, "fifo.md").contains("FIFO"));
        assert!(problem_of(&problems, "dir.md").contains("directory"));
        assert!(problem_of(&problems, "big.md").contains("more than"));
        assert_eq!(problems.len(), 6, "{problems:?}");
    }
}
