//! Architecture rules checked on the sources themselves: a change that
//! breaks one fails here, not in a review.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files(dir: &Path, ext: &[&str], out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let p = e.path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if p.is_dir() {
            if !matches!(name, "target" | ".git" | "node_modules") {
                files(&p, ext, out);
            }
        } else if ext.iter().any(|x| name.ends_with(x)) {
            out.push(p);
        }
    }
}

/// The binary decides nothing a gateway would also decide: it never
/// assembles a gate, tools, a workspace or a provider of its own.
#[test]
fn the_binary_assembles_no_agent_of_its_own() {
    let mut srcs = Vec::new();
    files(&root().join("crates/pincer/src"), &[".rs"], &mut srcs);
    assert!(!srcs.is_empty());
    for f in srcs {
        let text = std::fs::read_to_string(&f).expect("read");
        for banned in [
            "Gate::new",
            "kernel_tools",
            "Workspace::open",
            "Agent::new",
            "build_router",
            "ScriptedProvider",
            "record_config_load",
        ] {
            assert!(
                !text.contains(banned),
                "{} uses `{banned}`: assemble agents in pincer-runtime",
                f.display()
            );
        }
    }
}

/// Vendor defaults live only in pincer-providers.
#[test]
fn only_the_providers_crate_names_a_vendor_url() {
    let mut srcs = Vec::new();
    files(&root().join("crates"), &[".rs"], &mut srcs);
    for f in srcs {
        if f.components().any(|c| c.as_os_str() == "pincer-providers") || f.ends_with("tidy.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&f).expect("read");
        for url in [
            "api.openai.com",
            "api.anthropic.com",
            "gpt-4o-mini",
            "claude-sonnet",
        ] {
            assert!(
                !text.contains(url),
                "{} names `{url}`: vendor defaults belong in pincer-providers",
                f.display()
            );
        }
    }
}

/// The repository stands alone: nothing in it points outside it.
#[test]
fn nothing_cites_files_outside_the_repository() {
    let mut all = Vec::new();
    files(
        &root(),
        &[".rs", ".md", ".toml", ".sh", ".tsv", ".json"],
        &mut all,
    );
    let outside = ["../shared", "DESIGN.md", "(DESIGN "];
    for f in all {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        for needle in outside {
            if f.ends_with("tests/it/tidy.rs") {
                continue;
            }
            assert!(
                !text.contains(needle),
                "{} cites `{needle}`, which is not in the repository",
                f.display()
            );
        }
    }
}
