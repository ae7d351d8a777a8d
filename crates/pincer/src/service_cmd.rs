//! `pincer service install|uninstall|status`: the systemd unit for
//! `pincer serve`, made from the one in the repository
//! (contrib/systemd/pincer.service, compiled in so the binary and the file
//! cannot disagree) for this binary's path and this PINCER_HOME.
//!
//! Two flavours: system-wide (`/etc/systemd/system`, needs root; runs as
//! the user `pincer` unless `--run-as`) and `--user`
//! (`~/.config/systemd/user`), which drops what a user manager cannot do
//! (`User=`, and the mount-namespace hardening, which needs privileges
//! there). Paths are written in systemd's own syntax: `%` doubled (it
//! starts a specifier), ExecStart's `$` doubled (it starts a variable),
//! quotes and backslashes escaped inside double quotes; a path with a
//! control character is refused. An existing unit that differs is never
//! overwritten without `--force`. Nothing here runs systemctl: the next
//! step is printed.

use anyhow::{Context, Result, bail};
use pincer_core::home::Home;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The unit in the repository, as the binary carries it.
pub const TEMPLATE: &str = include_str!("../../../contrib/systemd/pincer.service");

/// The unit's file name.
pub const UNIT_NAME: &str = "pincer.service";

#[derive(clap::Args, Debug, Clone)]
pub struct Where {
    /// A user unit (~/.config/systemd/user) instead of a system one
    /// (/etc/systemd/system, needs root).
    #[arg(long)]
    user: bool,
    /// Write into this directory instead (a test, a packaging root).
    #[arg(long, value_name = "DIR")]
    unit_dir: Option<PathBuf>,
}

#[derive(clap::Subcommand, Debug)]
pub enum ServiceCmd {
    /// Write the systemd unit for this binary and PINCER_HOME.
    Install {
        #[command(flatten)]
        at: Where,
        /// Print the unit instead of writing it.
        #[arg(long)]
        dry_run: bool,
        /// Replace an existing unit that differs.
        #[arg(long)]
        force: bool,
        /// The user a system unit runs as (default: pincer, as the unit in
        /// the repository).
        #[arg(long, value_name = "USER", conflicts_with = "user")]
        run_as: Option<String>,
        /// Print `{"unit": PATH, "changed": BOOL, "exe", "home", "run_as",
        /// "next"}`.
        #[arg(long, conflicts_with = "dry_run")]
        json: bool,
    },
    /// Remove the unit (it must be one `install` would write, or --force).
    Uninstall {
        #[command(flatten)]
        at: Where,
        #[arg(long)]
        force: bool,
        /// Print `{"unit": PATH, "removed": BOOL, "next"}`.
        #[arg(long)]
        json: bool,
    },
    /// Whether the unit is installed, and whether it is the one `install`
    /// would write now.
    Status {
        #[command(flatten)]
        at: Where,
        #[arg(long)]
        json: bool,
    },
}

/// What the unit is made for.
#[derive(Debug, Clone)]
pub struct UnitSpec<'a> {
    pub exe: &'a Path,
    pub home: &'a Home,
    pub user_unit: bool,
    pub run_as: Option<&'a str>,
}

fn utf8<'a>(what: &str, p: &'a Path) -> Result<&'a str> {
    let s = p.to_str().with_context(|| {
        format!(
            "{what} {} is not UTF-8; a unit file cannot name it",
            p.display()
        )
    })?;
    if s.chars().any(char::is_control) {
        bail!(
            "{what} {} holds a control character (a newline?); a unit file cannot name it",
            s.escape_debug()
        );
    }
    if !p.is_absolute() {
        bail!("{what} {s} is not an absolute path");
    }
    Ok(s)
}

/// `s` inside double quotes, as systemd unquotes it (C escapes), with
/// every `%` doubled so no specifier is expanded.
pub fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '%' => out.push_str("%%"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A word of `ExecStart=`: [`quoted`], and `$` doubled (ExecStart expands
/// `$VAR`).
pub fn exec_word(s: &str) -> String {
    quoted(s).replace('$', "$$")
}

/// The unit for `spec`, from [`TEMPLATE`].
pub fn render(spec: &UnitSpec<'_>) -> Result<String> {
    let exe = utf8("the binary", spec.exe)?;
    let home = utf8("PINCER_HOME", spec.home.root())?;
    let workspace = spec.home.default_workspace();
    let workspace = utf8("the default workspace", &workspace)?;
    if let Some(u) = spec.run_as
        && (u.is_empty()
            || u.len() > 32
            || !u
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.'))
    {
        bail!(
            "--run-as `{}`: a user name is letters, digits, `_`, `-` and `.`",
            u.escape_debug()
        );
    }
    // Lines a user manager cannot honour: it runs as its user already, and
    // these need a mount namespace, which it may only set up with
    // privileges (or user namespaces, which the shell sandbox needs for
    // itself).
    const SYSTEM_ONLY: &[&str] = &[
        "User=",
        "Group=",
        "ProtectSystem=",
        "ProtectHome=",
        "ReadWritePaths=",
        "PrivateTmp=",
        "ProtectKernelTunables=",
        "ProtectClock=",
        "ProtectHostname=",
        "After=network-online.target",
        "Wants=network-online.target",
    ];
    let (kind, u) = if spec.user_unit {
        ("user", " --user")
    } else {
        ("system", "")
    };
    let mut out = format!(
        "# pincer serve as a {kind} service, written by `pincer service install{u}`\n\
         # from contrib/systemd/pincer.service (docs/serve.md). `pincer service\n\
         # install{u} --force` writes it again; `systemctl{u} reload pincer` sends\n\
         # SIGHUP (the config is re-read); `systemctl{u} stop pincer` drains.\n"
    );
    let body = TEMPLATE
        .find("\n[Unit]")
        .map(|i| &TEMPLATE[i + 1..])
        .context("the compiled-in unit has no [Unit] section")?;
    let mut seen_exec = false;
    for line in body.lines() {
        if spec.user_unit && SYSTEM_ONLY.iter().any(|k| line.starts_with(k)) {
            continue;
        }
        let line = if line.starts_with("ExecStart=") {
            seen_exec = true;
            format!("ExecStart={} serve", exec_word(exe))
        } else if line.starts_with("Environment=PINCER_HOME=") {
            format!("Environment={}", quoted(&format!("PINCER_HOME={home}")))
        } else if line.starts_with("ReadWritePaths=") {
            // `-`: a workspace not made yet is no reason to fail the start.
            format!(
                "ReadWritePaths={} {}",
                quoted(&format!("-{home}")),
                quoted(&format!("-{workspace}"))
            )
        } else if line.starts_with("EnvironmentFile=") && spec.user_unit {
            // %h: the user's home, as systemd expands it.
            "EnvironmentFile=-%h/.config/pincer/env".to_string()
        } else if line.starts_with("User=") {
            match spec.run_as {
                Some(u) => format!("User={u}"),
                None => line.to_string(),
            }
        } else if line.starts_with("Group=") && spec.run_as.is_some() {
            // The user's own group.
            continue;
        } else if line.starts_with("WantedBy=") && spec.user_unit {
            "WantedBy=default.target".to_string()
        } else {
            line.to_string()
        };
        out.push_str(&line);
        out.push('\n');
    }
    if !seen_exec {
        bail!("the compiled-in unit has no ExecStart= line");
    }
    Ok(out)
}

fn unit_dir(at: &Where) -> Result<PathBuf> {
    if let Some(d) = &at.unit_dir {
        return Ok(d.clone());
    }
    if at.user {
        let config = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
            Some(c) => PathBuf::from(c),
            None => PathBuf::from(
                std::env::var_os("HOME")
                    .filter(|h| !h.is_empty())
                    .context("HOME is not set; pass --unit-dir DIR")?,
            )
            .join(".config"),
        };
        return Ok(config.join("systemd").join("user"));
    }
    if !rustix::process::geteuid().is_root() {
        bail!(
            "a system unit goes in /etc/systemd/system, which needs root: run it with sudo, or pass --user for a user unit"
        );
    }
    Ok(PathBuf::from("/etc/systemd/system"))
}

fn next_step(user: bool) -> String {
    let u = if user { " --user" } else { "" };
    format!("next: systemctl{u} daemon-reload && systemctl{u} enable --now pincer")
}

pub fn run(home: Home, cmd: ServiceCmd) -> Result<ExitCode> {
    let exe = std::env::current_exe().context("cannot tell where this binary is")?;
    let root = std::path::absolute(home.root())
        .with_context(|| format!("cannot make {} absolute", home.root().display()))?;
    let home = Home::new(root);
    match cmd {
        ServiceCmd::Install {
            at,
            dry_run,
            force,
            run_as,
            json,
        } => {
            let unit = render(&UnitSpec {
                exe: &exe,
                home: &home,
                user_unit: at.user,
                run_as: run_as.as_deref(),
            })?;
            if dry_run {
                print!("{unit}");
                return Ok(ExitCode::SUCCESS);
            }
            let dir = unit_dir(&at)?;
            let path = dir.join(UNIT_NAME);
            // A system unit, for real (as root, or into the machine's own
            // directory); a person's `--unit-dir` (a packaging root) is
            // theirs to judge.
            if !at.user && (at.unit_dir.is_none() || rustix::process::geteuid().is_root()) {
                system_unit_is_safe(&exe, run_as.as_deref(), force)?;
            }
            // A system unit runs as this user; a user unit as its owner.
            let runs_as = (!at.user).then(|| run_as.as_deref().unwrap_or("pincer"));
            let said = |changed: bool| {
                serde_json::json!({
                    "unit": path,
                    "changed": changed,
                    "exe": exe,
                    "home": home.root(),
                    "run_as": runs_as,
                    "next": next_step(at.user).trim_start_matches("next: "),
                })
            };
            match std::fs::read_to_string(&path) {
                Ok(old) if old == unit => {
                    if json {
                        println!("{}", said(false));
                    } else {
                        println!("{} is already this unit; unchanged", path.display());
                        println!("{}", next_step(at.user));
                    }
                    return Ok(ExitCode::SUCCESS);
                }
                Ok(_) if !force => bail!(
                    "{} exists and differs from the unit this pincer would write; pass --force to replace it (--dry-run prints the new one)",
                    path.display()
                ),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
            }
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            safe_to_write(&dir, &path)?;
            pincer_core::fsutil::write_atomic(&path, unit.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
            // systemd reads it as root, a person may read it too: 0644 as
            // the unit's own header says.
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o644))
                .with_context(|| format!("cannot make {} readable", path.display()))?;
            if json {
                println!("{}", said(true));
                return Ok(ExitCode::SUCCESS);
            }
            println!("wrote {}", path.display());
            println!(
                "  runs {} serve with PINCER_HOME={}",
                exe.display(),
                home.root().display()
            );
            if let Some(user) = runs_as {
                println!(
                    "  as the user `{user}`, who must exist and own {} (docs/serve.md says how)",
                    home.root().display()
                );
            }
            println!("{}", next_step(at.user));
            Ok(ExitCode::SUCCESS)
        }
        ServiceCmd::Uninstall { at, force, json } => {
            let path = unit_dir(&at)?.join(UNIT_NAME);
            let u = if at.user { " --user" } else { "" };
            let next = format!(
                "systemctl{u} disable --now pincer; systemctl{u} daemon-reload (if it was enabled)"
            );
            let old = match std::fs::read_to_string(&path) {
                Ok(o) => o,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if json {
                        println!(
                            "{}",
                            serde_json::json!({"unit": path, "removed": false, "next": null})
                        );
                    } else {
                        println!("{} is not there; nothing to remove", path.display());
                    }
                    return Ok(ExitCode::SUCCESS);
                }
                Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
            };
            if !force && !old.contains("written by `pincer service install") {
                bail!(
                    "{} was not written by `pincer service install`; pass --force to remove it anyway",
                    path.display()
                );
            }
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({"unit": path, "removed": true, "next": next})
                );
            } else {
                println!("removed {}", path.display());
                println!("next: {next}");
            }
            Ok(ExitCode::SUCCESS)
        }
        ServiceCmd::Status { at, json } => {
            let path = unit_dir(&at)?.join(UNIT_NAME);
            let want = render(&UnitSpec {
                exe: &exe,
                home: &home,
                user_unit: at.user,
                run_as: None,
            })?;
            let (installed, current) = match std::fs::read_to_string(&path) {
                Ok(o) => (true, o == want),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => (false, false),
                Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
            };
            if json {
                println!(
                    "{}",
                    serde_json::json!({"unit": path, "installed": installed, "current": current})
                );
            } else if !installed {
                println!("{} is not installed", path.display());
            } else if current {
                println!(
                    "{} is installed and is the unit `pincer service install` writes now",
                    path.display()
                );
            } else {
                println!(
                    "{} is installed but differs from the unit `pincer service install` writes now (another binary, PINCER_HOME or --run-as; `install --dry-run` shows it)",
                    path.display()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A system unit starts its binary at every boot as the user holding the
/// API keys: a binary (or a directory above it) that another user can
/// replace would run their code as that user, so it is refused, as is
/// running the daemon as root, unless `--force` says it is meant.
fn system_unit_is_safe(exe: &std::path::Path, run_as: Option<&str>, force: bool) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    if force {
        return Ok(());
    }
    if matches!(run_as, Some("root" | "0")) {
        bail!(
            "--run-as root runs the agent with every power on this machine; pass --force if that is meant"
        );
    }
    let exe = exe
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", exe.display()))?;
    for p in exe.ancestors() {
        let meta = std::fs::metadata(p).with_context(|| format!("cannot read {}", p.display()))?;
        // A sticky directory (/tmp) lets nobody replace what others own.
        let sticky = meta.is_dir() && meta.mode() & 0o1000 != 0;
        if meta.uid() != 0 || (meta.mode() & 0o022 != 0 && !sticky) {
            bail!(
                "{} (uid {}, mode {:04o}) can be changed by someone other than root, and the unit would run {} at every boot; install pincer where only root can write (scripts/install.sh puts it in /usr/local/bin), or pass --force",
                p.display(),
                meta.uid(),
                meta.mode() & 0o7777,
                exe.display()
            );
        }
    }
    Ok(())
}

/// Root writes a unit only into a directory nobody else can change: in one
/// that another user may write (a `--unit-dir`, a `--user` under sudo with
/// that user's HOME), a planted `pincer.service.tmp` or `pincer.service`
/// symlink would have root overwrite the file it points at. Anyone refuses
/// a unit path that is a symlink.
fn safe_to_write(dir: &std::path::Path, path: &std::path::Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    if let Ok(meta) = std::fs::symlink_metadata(path)
        && meta.file_type().is_symlink()
    {
        bail!(
            "{} is a symbolic link; pincer will not write a unit through one (remove it first)",
            path.display()
        );
    }
    if !rustix::process::geteuid().is_root() {
        return Ok(());
    }
    let meta = std::fs::metadata(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    if meta.uid() != 0 || meta.mode() & 0o022 != 0 {
        bail!(
            "{} is owned by uid {} with mode {:04o}: as root, pincer writes a unit only into a directory only root can change",
            dir.display(),
            meta.uid(),
            meta.mode() & 0o7777
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_follows_systemd_syntax() {
        assert_eq!(quoted("/a b"), "\"/a b\"");
        assert_eq!(quoted("/100%"), "\"/100%%\"");
        assert_eq!(quoted(r#"/a"b\c"#), r#""/a\"b\\c""#);
        assert_eq!(exec_word("/a$HOME"), "\"/a$$HOME\"");
        assert_eq!(quoted("/a$HOME"), "\"/a$HOME\"");
    }

    #[test]
    fn a_system_unit_names_the_binary_and_home() {
        let home = Home::new("/srv/my pincer/.pincer");
        let unit = render(&UnitSpec {
            exe: Path::new("/opt/p%n/pincer"),
            home: &home,
            user_unit: false,
            run_as: None,
        })
        .expect("renders");
        assert!(
            unit.contains("ExecStart=\"/opt/p%%n/pincer\" serve\n"),
            "{unit}"
        );
        assert!(
            unit.contains("Environment=\"PINCER_HOME=/srv/my pincer/.pincer\"\n"),
            "{unit}"
        );
        assert!(
            unit.contains(
                "ReadWritePaths=\"-/srv/my pincer/.pincer\" \"-/srv/my pincer/.pincer-workspace\"\n"
            ),
            "{unit}"
        );
        assert!(unit.contains("User=pincer\nGroup=pincer\n"), "{unit}");
        assert!(unit.contains("WantedBy=multi-user.target\n"), "{unit}");
        assert!(
            unit.contains("ExecReload=/bin/kill -HUP $MAINPID\n"),
            "{unit}"
        );
        assert!(!unit.contains("/usr/local/bin/pincer"), "{unit}");
    }

    #[test]
    fn a_user_unit_drops_what_a_user_manager_cannot_do() {
        let home = Home::new("/home/me/.pincer");
        let unit = render(&UnitSpec {
            exe: Path::new("/home/me/.local/bin/pincer"),
            home: &home,
            user_unit: true,
            run_as: None,
        })
        .expect("renders");
        for gone in [
            "User=",
            "Group=",
            "ProtectSystem=",
            "ReadWritePaths=",
            "network-online",
        ] {
            assert!(!unit.contains(gone), "{gone} in {unit}");
        }
        assert!(unit.contains("WantedBy=default.target\n"), "{unit}");
        assert!(
            unit.contains("EnvironmentFile=-%h/.config/pincer/env\n"),
            "{unit}"
        );
        assert!(unit.contains("NoNewPrivileges=yes\n"), "{unit}");
    }

    #[test]
    fn unnameable_paths_and_users_are_refused() {
        let home = Home::new("/h");
        let spec = |exe: &'static str, run_as: Option<&'static str>| UnitSpec {
            exe: Path::new(exe),
            home: &home,
            user_unit: false,
            run_as,
        };
        let e = render(&spec("/a\nb", None)).expect_err("newline");
        assert!(e.to_string().contains("control character"), "{e}");
        let e = render(&spec("pincer", None)).expect_err("relative");
        assert!(e.to_string().contains("absolute"), "{e}");
        let e = render(&spec("/p", Some("a b"))).expect_err("user");
        assert!(e.to_string().contains("--run-as"), "{e}");
        let ok = render(&spec("/p", Some("svc"))).expect("user");
        assert!(ok.contains("User=svc\n") && !ok.contains("Group="), "{ok}");
    }
}
