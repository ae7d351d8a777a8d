//! `pincer service install | status | uninstall` as a person runs them,
//! always into a temporary `--unit-dir` (never the machine's systemd), and
//! `systemd-analyze verify` on what it writes for a path systemd would
//! misread if it were not escaped.

use crate::{fails, json, ok, pincer};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

fn install(home: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["service", "install"];
    all.extend_from_slice(args);
    pincer(home, &all, "")
}

#[test]
fn install_writes_the_unit_once_and_refuses_to_clobber_another() {
    let tmp = tempfile::tempdir().expect("tmp");
    let home = tmp.path().join("home");
    let units = tmp.path().join("units");
    let dir = units.to_str().expect("utf8");
    let unit_path = units.join("pincer.service");

    // The dry run prints the unit for this binary and home, writes nothing.
    let dry = ok(install(&home, &["--user", "--dry-run", "--unit-dir", dir]));
    let exe = env!("CARGO_BIN_EXE_pincer");
    assert!(
        dry.contains(&format!("ExecStart=\"{exe}\" serve\n")),
        "{dry}"
    );
    assert!(
        dry.contains(&format!("Environment=\"PINCER_HOME={}\"\n", home.display())),
        "{dry}"
    );
    assert!(dry.contains("WantedBy=default.target"), "{dry}");
    assert!(!dry.contains("User="), "a user unit has no User=: {dry}");
    assert!(!unit_path.exists());

    let out = ok(install(&home, &["--user", "--unit-dir", dir]));
    assert!(
        out.contains("systemctl --user daemon-reload && systemctl --user enable --now pincer"),
        "{out}"
    );
    let written = std::fs::read_to_string(&unit_path).expect("written");
    assert_eq!(written, dry);
    let mode = std::fs::metadata(&unit_path)
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644);
    let st = json(&ok(pincer(
        &home,
        &["service", "status", "--user", "--unit-dir", dir, "--json"],
        "",
    )));
    assert_eq!(st["installed"], true, "{st}");
    assert_eq!(st["current"], true, "{st}");

    // The same again: left alone. The system flavour differs: refused.
    let again = ok(install(&home, &["--user", "--unit-dir", dir]));
    assert!(again.contains("unchanged"), "{again}");
    let err = fails(install(&home, &["--unit-dir", dir]));
    assert!(err.contains("differs") && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read_to_string(&unit_path).expect("kept"), written);
    let st = json(&ok(pincer(
        &home,
        &["service", "status", "--unit-dir", dir, "--json"],
        "",
    )));
    assert_eq!(st["current"], false, "{st}");
    ok(install(
        &home,
        &["--unit-dir", dir, "--force", "--run-as", "svc"],
    ));
    let system = std::fs::read_to_string(&unit_path).expect("replaced");
    assert!(system.contains("User=svc\n"), "{system}");
    assert!(system.contains("WantedBy=multi-user.target"), "{system}");
    assert!(system.contains("ReadWritePaths=\"-"), "{system}");
    let err = fails(install(
        &home,
        &["--unit-dir", dir, "--force", "--run-as", "a b"],
    ));
    assert!(err.contains("--run-as"), "{err}");

    // Uninstall removes only a unit install wrote.
    ok(pincer(
        &home,
        &["service", "uninstall", "--unit-dir", dir],
        "",
    ));
    assert!(!unit_path.exists());
    std::fs::write(&unit_path, "[Unit]\nDescription=someone else's\n").expect("foreign");
    let err = fails(pincer(
        &home,
        &["service", "uninstall", "--unit-dir", dir],
        "",
    ));
    assert!(err.contains("--force"), "{err}");
    assert!(unit_path.exists());
}

/// A binary under `dir with space %x/` and a home under `home 100%`: the
/// unit names them so that systemd finds the binary (verify checks that
/// ExecStart's program exists and is executable) and expands no `%`.
#[test]
fn the_unit_for_an_awkward_path_verifies() {
    let Ok(probe) = Command::new("systemd-analyze").arg("--version").output() else {
        println!("SKIPPED: systemd-analyze is not installed on this machine");
        return;
    };
    assert!(probe.status.success());
    let tmp = tempfile::tempdir().expect("tmp");
    let bin_dir = tmp.path().join("dir with space %x");
    std::fs::create_dir_all(&bin_dir).expect("bin dir");
    let exe = bin_dir.join("pincer");
    std::fs::copy(env!("CARGO_BIN_EXE_pincer"), &exe).expect("copy the binary");
    let home = tmp.path().join("home 100%");
    let units = tmp.path().join("units");
    let o = Command::new(&exe)
        .args(["--home"])
        .arg(&home)
        .args(["service", "install", "--unit-dir"])
        .arg(&units)
        .output()
        .expect("run the copy");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let unit = units.join("pincer.service");
    let text = std::fs::read_to_string(&unit).expect("unit");
    assert!(text.contains("dir with space %%x/pincer\" serve"), "{text}");
    let verify = |path: &Path| {
        let o = Command::new("systemd-analyze")
            .args(["verify", "--man=no"])
            .arg(path)
            .output()
            .expect("systemd-analyze");
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (good, err) = verify(&unit);
    assert!(good, "{err}\n{text}");
    assert!(
        !err.contains("pincer.service"),
        "systemd-analyze warns about the unit: {err}\n{text}"
    );
    // The user unit too, checked by a user manager's rules (it needs a
    // runtime directory of its own).
    let user_units = tmp.path().join("user units");
    let o = Command::new(&exe)
        .args(["--home"])
        .arg(&home)
        .args(["service", "install", "--user", "--unit-dir"])
        .arg(&user_units)
        .output()
        .expect("run the copy");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = tmp.path().join("run");
    std::fs::create_dir(&run).expect("runtime dir");
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let o = Command::new("systemd-analyze")
        .args(["--user", "verify", "--man=no"])
        .arg(user_units.join("pincer.service"))
        .env("XDG_RUNTIME_DIR", &run)
        .output()
        .expect("systemd-analyze --user");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        !err.contains("pincer.service"),
        "warns about the user unit: {err}"
    );
    // The control: the same unit with the `%` left single is misread.
    let bad = tmp.path().join("bad").join("pincer.service");
    std::fs::create_dir_all(bad.parent().expect("parent")).expect("bad dir");
    std::fs::write(&bad, text.replace("%%x", "%x")).expect("bad unit");
    let (good, err) = verify(&bad);
    assert!(
        !good || err.contains("pincer.service"),
        "a single % went unnoticed: {err}"
    );
}

/// A planted symlink at the unit's path, or (as root) a unit directory
/// others may write, is refused, and the file a link points at is untouched.
#[test]
fn a_planted_symlink_or_a_shared_directory_is_refused() {
    let tmp = tempfile::tempdir().expect("tmp");
    let home = tmp.path().join("home");
    let units = tmp.path().join("units");
    std::fs::create_dir_all(&units).expect("units");
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, "precious\n").expect("victim");
    std::os::unix::fs::symlink(&victim, units.join("pincer.service")).expect("link");
    let dir = units.to_str().expect("utf8");
    let err = fails(install(&home, &["--user", "--unit-dir", dir, "--force"]));
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&victim).expect("victim"),
        "precious\n"
    );

    if rustix::process::geteuid().is_root() {
        let shared = tmp.path().join("shared");
        std::fs::create_dir_all(&shared).expect("shared");
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let err = fails(install(
            &home,
            &["--user", "--unit-dir", shared.to_str().expect("utf8")],
        ));
        assert!(err.contains("only root can change"), "{err}");
        assert!(!shared.join("pincer.service").exists());
    }
}

/// As root, a system unit for a binary another user could replace, or one
/// that runs the agent as root, is refused unless `--force` says it is meant.
#[test]
fn a_system_unit_for_a_replaceable_binary_or_root_is_refused() {
    if !rustix::process::geteuid().is_root() {
        println!("SKIPPED: the system-unit checks apply to root");
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let open_dir = tmp.path().join("anyone-writes");
    std::fs::create_dir_all(&open_dir).expect("dir");
    std::fs::set_permissions(&open_dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let exe = open_dir.join("pincer");
    std::fs::copy(env!("CARGO_BIN_EXE_pincer"), &exe).expect("copy the binary");
    let units = tmp.path().join("units");
    let run = |bin: &Path, extra: &[&str]| {
        Command::new(bin)
            .arg("--home")
            .arg(tmp.path().join("home"))
            .args(["service", "install", "--unit-dir"])
            .arg(&units)
            .args(extra)
            .output()
            .expect("run")
    };
    let o = run(&exe, &[]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("anyone-writes") && err.contains("--force"),
        "{err}"
    );
    assert!(!units.join("pincer.service").exists());
    let o = run(
        Path::new(env!("CARGO_BIN_EXE_pincer")),
        &["--run-as", "root"],
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("every power"));
    assert!(run(&exe, &["--force"]).status.success());
}

/// `--json` on `install` and `uninstall` prints one object each: the unit's
/// path, whether it changed (or was removed), and the next step; with
/// `--dry-run` it is refused (that prints the unit itself).
#[test]
fn install_and_uninstall_json_are_one_object_each() {
    let tmp = tempfile::tempdir().expect("tmp");
    let home = tmp.path().join("home");
    let units = tmp.path().join("units");
    let dir = units.to_str().expect("utf8");
    let unit = units.join("pincer.service");
    let one = |out: std::process::Output| {
        let text = ok(out);
        assert_eq!(text.lines().count(), 1, "{text}");
        json(&text)
    };

    let doc = one(install(&home, &["--user", "--unit-dir", dir, "--json"]));
    assert_eq!(doc["unit"], unit.to_str().expect("utf8"), "{doc}");
    assert_eq!(doc["changed"], true, "{doc}");
    assert_eq!(doc["exe"], env!("CARGO_BIN_EXE_pincer"), "{doc}");
    assert_eq!(doc["run_as"], serde_json::Value::Null, "{doc}");
    assert_eq!(
        doc["next"],
        "systemctl --user daemon-reload && systemctl --user enable --now pincer"
    );
    assert!(unit.is_file());
    let doc = one(install(&home, &["--user", "--unit-dir", dir, "--json"]));
    assert_eq!(doc["changed"], false, "{doc}");
    let doc = one(install(
        &home,
        &["--unit-dir", dir, "--force", "--run-as", "svc", "--json"],
    ));
    assert_eq!(doc["changed"], true, "{doc}");
    assert_eq!(doc["run_as"], "svc", "{doc}");
    let err = fails(install(&home, &["--dry-run", "--json", "--unit-dir", dir]));
    assert!(err.contains("--json") && err.contains("--dry-run"), "{err}");

    let doc = one(pincer(
        &home,
        &["service", "uninstall", "--unit-dir", dir, "--json"],
        "",
    ));
    assert_eq!(doc["removed"], true, "{doc}");
    assert!(
        doc["next"]
            .as_str()
            .is_some_and(|n| n.starts_with("systemctl disable --now pincer")),
        "{doc}"
    );
    assert!(!unit.exists());
    let doc = one(pincer(
        &home,
        &["service", "uninstall", "--unit-dir", dir, "--json"],
        "",
    ));
    assert_eq!(doc["removed"], false, "{doc}");
    assert_eq!(doc["next"], serde_json::Value::Null, "{doc}");
}
