use crate::{assert_field, mem, new_page};
use pincer_memory::{Backend, MemoryIndex, NewPage, PageStore, SearchResult, fts5_available};
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use tempfile::TempDir;

fn ids(r: &SearchResult) -> Vec<String> {
    r.hits.iter().map(|h| h.id.clone()).collect()
}

fn id_set(r: &SearchResult) -> BTreeSet<String> {
    r.hits.iter().map(|h| h.id.clone()).collect()
}

fn put(store: &PageStore, id: &str, title: &str, tags: &[&str], body: &str) {
    store
        .upsert(NewPage {
            id: Some(id.into()),
            title: title.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            body: body.into(),
            ..NewPage::default()
        })
        .expect("write page");
}

/// A small corpus whose words share no Porter stem with each other, so the
/// scan (no stemmer) and FTS5 agree on simple term queries.
fn corpus() -> (TempDir, PageStore) {
    let (d, store) = mem();
    put(
        &store,
        "greenhouse",
        "Greenhouse notes",
        &["garden", "sensors"],
        "The humidity probe sits near the tomato bench. Vent opens at noon.",
    );
    put(
        &store,
        "wifi",
        "Home wifi",
        &["network"],
        "Router lives in the hallway closet; channel six is quiet.",
    );
    put(
        &store,
        "tomato",
        "Tomato plan",
        &["garden"],
        "Sow tomato seeds in March, move them to the greenhouse in May.",
    );
    put(
        &store,
        "camera",
        "Camera board",
        &["hardware"],
        "The camera board speaks over serial at 115200 baud.",
    );
    put(
        &store,
        "bench",
        "Workbench",
        &[],
        "Soldering iron, multimeter, spare probe wires on the bench.",
    );
    put(
        &store,
        "recipes",
        "Soup",
        &["food"],
        "Roast tomato soup with basil and garlic.",
    );
    (d, store)
}

fn memory_dir(store: &PageStore) -> &Path {
    store.memory_dir()
}

#[test]
fn finds_and_reports_what_it_examined() {
    let (_d, store) = corpus();
    let mut idx = MemoryIndex::open(memory_dir(&store)).expect("open");
    let r = idx.search("tomato", 10).expect("search");
    assert_eq!(
        id_set(&r),
        ["greenhouse", "recipes", "tomato"].map(String::from).into()
    );
    assert_eq!(r.examined, 6);
    assert_eq!(r.hits[0].id, "tomato", "title match ranks first: {r:?}");
    assert!(
        r.hits[0].snippet.contains("[Tomato]") || r.hits[0].snippet.contains("[tomato]"),
        "{r:?}"
    );
    if fts5_available() {
        assert_eq!(r.backend, Backend::Fts5);
        assert_eq!(r.reindexed, 6);
        let again = idx.search("tomato", 10).expect("search");
        assert_eq!(again.reindexed, 0, "nothing changed");
        assert_eq!(ids(&again), ids(&r));
    } else {
        assert_eq!(r.backend, Backend::Scan);
        assert!(r.warnings.iter().any(|w| w.contains("FTS5")), "{r:?}");
    }
}

#[test]
fn all_words_first_then_any_word_with_a_warning() {
    let (_d, store) = corpus();
    let mut idx = MemoryIndex::open(memory_dir(&store)).expect("open");
    let r = idx.search("tomato greenhouse", 10).expect("search");
    assert_eq!(
        id_set(&r),
        ["greenhouse", "tomato"].map(String::from).into()
    );
    assert!(r.warnings.is_empty() || !fts5_available(), "{r:?}");
    let r = idx.search("router basil", 10).expect("search");
    assert_eq!(id_set(&r), ["recipes", "wifi"].map(String::from).into());
    assert!(r.warnings.iter().any(|w| w.contains("any")), "{r:?}");
}

#[test]
fn hand_edited_page_appears_in_the_next_search_even_same_size_same_second() {
    let (_d, store) = corpus();
    let mut idx = MemoryIndex::open(memory_dir(&store)).expect("open");
    assert!(idx.search("zebra", 5).expect("search").hits.is_empty());
    let path = store.path_of("wifi").expect("path");
    let before = fs::metadata(&path).expect("stat");
    // Same size, and the mtime put back: only the racy-hash rule sees it.
    let text = fs::read_to_string(&path)
        .expect("read")
        .replace("quiet", "zebra");
    fs::write(&path, &text).expect("hand edit");
    let f = fs::File::options().write(true).open(&path).expect("open");
    f.set_modified(before.modified().expect("mtime"))
        .expect("set mtime");
    drop(f);
    assert_eq!(fs::metadata(&path).expect("stat").len(), before.len());
    let r = idx.search("zebra", 5).expect("search");
    assert_eq!(ids(&r), ["wifi"]);
    assert!(idx.search("quiet", 5).expect("search").hits.is_empty());

    // A size-changing edit too.
    let text = text.replace("zebra", "zebra and a giraffe");
    fs::write(&path, text).expect("hand edit");
    assert_eq!(ids(&idx.search("giraffe", 5).expect("search")), ["wifi"]);
}

/// Past the racy window, (size, mtime, inode) decide whether a page is
/// read again. An in-place edit at the same size keeps the size and the
/// inode: only the mtime tells, and it must be enough. (The mtimes are set
/// by hand, both long past, so no sleep is needed.)
#[test]
fn a_same_size_in_place_edit_seen_only_by_its_mtime_is_reindexed() {
    use std::os::unix::fs::{FileExt, MetadataExt};
    use std::time::{Duration, SystemTime};
    let (_d, store) = corpus();
    let path = store.path_of("wifi").expect("path");
    let set_mtime = |t: SystemTime| {
        fs::File::options()
            .write(true)
            .open(&path)
            .expect("open")
            .set_modified(t)
            .expect("mtime");
    };
    let long_ago = SystemTime::now() - Duration::from_secs(600);
    set_mtime(long_ago);
    let mut idx = MemoryIndex::open(memory_dir(&store)).expect("open");
    idx.sync().expect("sync");
    assert!(idx.search("zebra", 5).expect("search").hits.is_empty());
    let before = fs::metadata(&path).expect("stat");

    let text = fs::read_to_string(&path)
        .expect("read")
        .replace("quiet", "zebra");
    fs::File::options()
        .write(true)
        .open(&path)
        .expect("open")
        .write_all_at(text.as_bytes(), 0)
        .expect("edit in place");
    set_mtime(long_ago + Duration::from_secs(60));
    let after = fs::metadata(&path).expect("stat");
    assert_eq!((after.len(), after.ino()), (before.len(), before.ino()));
    assert_ne!(after.mtime(), before.mtime());

    let r = idx.search("zebra", 5).expect("search");
    assert_eq!(ids(&r), ["wifi"], "{r:?}");
    assert!(idx.search("quiet", 5).expect("search").hits.is_empty());
}

#[test]
fn old_unchanged_pages_are_not_reread() {
    let (_d, store) = corpus();
    // Age every page past the racy window.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    for e in fs::read_dir(store.pages_dir()).expect("ls") {
        let f = fs::File::options()
            .write(true)
            .open(e.expect("e").path())
            .expect("open");
        f.set_modified(old).expect("mtime");
    }
    let mut idx = MemoryIndex::open(memory_dir(&store)).expect("open");
    let first = idx.sync().expect("sync");
    let second = idx.sync().expect("sync");
    assert_eq!(second.examined, 6);
    assert_eq!(second.reindexed, 0);
    if fts5_available() {
        assert_eq!(first.reindexed, 6);
    }
}

#[test]
fn deleted_page_disappears() {
    let (_d, store) = corpus();
    let mut idx = MemoryIndex::open(memory_dir(&store)).expect("open");
    assert_eq!(idx.search("router", 5).expect("search").hits.len(), 1);
    fs::remove_file(store.path_of("wifi").expect("path")).expect("rm");
    let r = idx.search("router", 5).expect("search");
    assert!(r.hits.is_empty(), "{r:?}");
    assert_eq!(r.examined, 5);
    store.delete("tomato").expect("delete");
    assert_eq!(
        id_set(&idx.search("tomato", 5).expect("search")),
        ["greenhouse", "recipes"].map(String::from).into()
    );
}

#[test]
fn deleted_index_rebuilds_identically() {
    let (_d, store) = corpus();
    for i in 0..40 {
        put(
            &store,
            &format!("extra-{i:02}"),
            &format!("Extra {i}"),
            &["bulk"],
            &format!(
                "tomato probe bench garlic note {i} {}",
                "filler ".repeat(i % 7)
            ),
        );
    }
    let queries = [
        "tomato",
        "probe bench",
        "garlic",
        "extra",
        "serial baud",
        "bulk",
    ];
    let mut idx = MemoryIndex::open(memory_dir(&store)).expect("open");
    // Build incrementally, with churn, so rowids differ from a fresh build.
    idx.search("tomato", 5).expect("search");
    store.delete("extra-03").expect("delete");
    put(
        &store,
        "extra-05",
        "Extra five",
        &["bulk"],
        "rewritten tomato",
    );
    let before: Vec<SearchResult> = queries
        .iter()
        .map(|q| idx.search(q, 100).expect("search"))
        .collect();
    drop(idx);
    for f in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"] {
        let _ = fs::remove_file(memory_dir(&store).join(f));
    }
    let mut fresh = MemoryIndex::open(memory_dir(&store)).expect("reopen");
    let after: Vec<SearchResult> = queries
        .iter()
        .map(|q| fresh.search(q, 100).expect("search"))
        .collect();
    let rebuilt_report = fresh.rebuild().expect("rebuild");
    assert_eq!(rebuilt_report.examined, 45);
    let rebuilt: Vec<SearchResult> = queries
        .iter()
        .map(|q| fresh.search(q, 100).expect("search"))
        .collect();
    for ((b, a), r) in before.iter().zip(&after).zip(&rebuilt) {
        assert!(!b.hits.is_empty());
        assert_eq!(b.hits, a.hits, "same hits, same order, same scores");
        assert_eq!(b.hits, r.hits);
    }
}

#[test]
fn corrupt_page_is_excluded_with_a_warning_and_the_rest_stays_searchable() {
    let (_d, store) = corpus();
    let mut idx = MemoryIndex::open(memory_dir(&store)).expect("open");
    assert_eq!(idx.search("router", 5).expect("search").hits.len(), 1);
    let wifi = store.path_of("wifi").expect("path");
    let good = fs::read(&wifi).expect("read");
    // Break an indexed page's front matter, and add a page with bad UTF-8.
    fs::write(
        &wifi,
        String::from_utf8_lossy(&good).replace("pinned: false", "pinned: maybe"),
    )
    .expect("break");
    let mut bad_utf8 = b"---\nid: latin\ntitle: Latin\ntags: []\nsource:\npinned: false\ncreated: 2026-11-30T10:00:00Z\n---\nrouter caf\xe9\n".to_vec();
    fs::write(store.pages_dir().join("latin.md"), &bad_utf8).expect("write");
    for _ in 0..2 {
        let r = idx.search("router", 5).expect("search");
        assert!(r.hits.is_empty(), "corrupt pages are not hits: {r:?}");
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("wifi.md") && w.contains("pinned")),
            "{r:?}"
        );
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("latin.md") && w.contains("UTF-8")),
            "{r:?}"
        );
        assert_eq!(r.examined, 7);
        let r = idx.search("tomato", 5).expect("search");
        assert_eq!(r.hits.len(), 3, "the rest is searchable");
    }
    // Fixing the files brings them back.
    fs::write(&wifi, &good).expect("fix");
    bad_utf8.truncate(bad_utf8.len() - 2);
    bad_utf8.extend_from_slice(b"e\n");
    fs::write(store.pages_dir().join("latin.md"), &bad_utf8).expect("fix");
    let r = idx.search("router", 5).expect("search");
    assert_eq!(id_set(&r), ["latin", "wifi"].map(String::from).into());
    assert!(!r.warnings.iter().any(|w| w.contains(".md")), "{r:?}");
}

#[test]
fn symlinked_page_is_refused() {
    let (d, store) = corpus();
    let outside = d.path().join("outside.md");
    fs::write(&outside, "---\nid: outside\ntitle: x\ntags: []\nsource:\npinned: false\ncreated: 2026-11-30T10:00:00Z\n---\nsecretword\n").expect("write");
    std::os::unix::fs::symlink(&outside, store.pages_dir().join("outside.md")).expect("symlink");
    let mut idx = MemoryIndex::open(memory_dir(&store)).expect("open");
    let r = idx.search("secretword", 5).expect("search");
    assert!(r.hits.is_empty());
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("outside.md") && w.contains("regular file")),
        "{r:?}"
    );
}

#[test]
fn scan_gives_the_same_hits_as_fts5_and_says_so() {
    let (_d, store) = corpus();
    let mut fts = MemoryIndex::open(memory_dir(&store)).expect("open");
    let mut scan = MemoryIndex::open_scan(memory_dir(&store)).expect("open scan");
    assert_eq!(scan.backend(), Backend::Scan);
    for q in [
        "tomato",
        "probe",
        "garden",
        "bench",
        "camera",
        "greenhouse",
        "basil",
        "channel",
        "March",
        "noon vent",
        "serial baud",
        "tom",
        "hallway",
    ] {
        let a = fts.search(q, 20).expect("fts");
        let b = scan.search(q, 20).expect("scan");
        assert_eq!(id_set(&a), id_set(&b), "query {q:?}");
        assert_eq!(b.backend, Backend::Scan);
        assert_eq!(b.examined, 6);
        assert_eq!(
            a.backend,
            if fts5_available() {
                Backend::Fts5
            } else {
                Backend::Scan
            }
        );
    }
    assert!(
        !memory_dir(&store).join("index.sqlite").exists() || fts5_available(),
        "scan writes no index"
    );
}

#[test]
fn query_syntax_is_never_injected() {
    let (_d, store) = corpus();
    let mut idx = MemoryIndex::open(memory_dir(&store)).expect("open");
    let mut scan = MemoryIndex::open_scan(memory_dir(&store)).expect("open scan");
    let attempts = [
        "\"",
        "\"tomato",
        "tomato\"",
        "*",
        "tomato*",
        "NEAR(",
        "NEAR(tomato bench)",
        "-",
        "-tomato",
        ":",
        "title:tomato",
        "tomato:",
        "OR",
        "tomato OR",
        "AND",
        "NOT tomato",
        "(",
        ")",
        "((tomato",
        "tomato)",
        "^tomato",
        "{title}: tomato",
        "'; DROP TABLE pages; --",
        "+",
        "tomato + bench",
        "\0",
        "🍅 tomato",
    ];
    for q in attempts {
        for i in [&mut idx, &mut scan] {
            match i.search(q, 10) {
                Ok(r) => {
                    if q.to_lowercase().contains("tomato") && !q.contains("DROP") {
                        assert!(
                            !r.hits.is_empty()
                                || q.contains("NEAR")
                                || q.contains("NOT")
                                || q.contains("title")
                                || q.contains('+'),
                            "{q:?}: {r:?}"
                        );
                    }
                }
                Err(e) => {
                    assert_eq!(e.field(), Some("query"), "{q:?}: {e}");
                    assert!(
                        e.to_string().contains("no words") || e.to_string().contains("empty"),
                        "{e}"
                    );
                }
            }
        }
    }
    // Still intact afterwards.
    assert_eq!(idx.search("tomato", 10).expect("search").hits.len(), 3);
}

#[test]
fn bad_query_and_limit_name_the_field() {
    let (_d, store) = corpus();
    let mut idx = MemoryIndex::open(memory_dir(&store)).expect("open");
    assert_field(idx.search("", 10), "query");
    assert_field(idx.search("   \t\n", 10), "query");
    assert_field(idx.search(&"a".repeat(2000), 10), "query");
    assert_field(idx.search("tomato", 0), "limit");
    assert_field(idx.search("tomato", 101), "limit");
    assert_eq!(idx.search("tomato", 1).expect("limit 1").hits.len(), 1);
    idx.search("tomato", 100).expect("limit 100");
}

#[test]
fn pinned_flag_and_title_rank_reach_the_hits() {
    let (_d, store) = mem();
    let mut p = new_page("Probe wiring", "red is power");
    p.pinned = true;
    p.id = Some("wiring".into());
    store.write(p).expect("write");
    put(
        &store,
        "other",
        "Misc",
        &[],
        "the probe the probe the probe is somewhere",
    );
    let mut idx = MemoryIndex::open(memory_dir(&store)).expect("open");
    let r = idx.search("probe", 10).expect("search");
    assert_eq!(ids(&r), ["wiring", "other"], "title outranks body");
    assert!(r.hits[0].pinned && !r.hits[1].pinned);
    assert!(r.hits[0].score >= r.hits[1].score);
}

#[test]
fn result_json_shape_is_stable() {
    let (_d, store) = corpus();
    let mut idx = MemoryIndex::open_scan(memory_dir(&store)).expect("open");
    let r = idx.search("router", 5).expect("search");
    let v = serde_json::to_value(&r).expect("json");
    assert_eq!(v["backend"], "scan");
    assert_eq!(v["examined"], 6);
    assert_eq!(v["reindexed"], 0);
    assert_eq!(v["hits"][0]["id"], "wifi");
    assert_eq!(v["hits"][0]["pinned"], false);
    assert!(v["hits"][0]["score"].is_number() && v["hits"][0]["snippet"].is_string());
    assert!(v["warnings"].as_array().is_some_and(|w| w.is_empty()));
    let page = store.read("wifi").expect("read");
    let v = serde_json::to_value(&page).expect("json");
    assert_eq!(v["id"], "wifi");
    assert_eq!(v["tags"][0], "network");
    assert!(v["created"].as_str().is_some_and(|c| c.ends_with('Z')));
    assert!(v.get("updated").is_none() || v["updated"].is_string());
}

#[cfg(feature = "fts5")]
mod fts5_only {
    use super::*;

    #[test]
    fn garbage_index_file_is_deleted_and_rebuilt_with_a_warning() {
        let (_d, store) = corpus();
        let path = memory_dir(&store).join("index.sqlite");
        fs::write(&path, vec![0x42; 8192]).expect("garbage");
        let mut idx = MemoryIndex::open(memory_dir(&store)).expect("open");
        let r = idx.search("tomato", 10).expect("search");
        assert_eq!(r.hits.len(), 3);
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("index.sqlite") && w.contains("rebuild")),
            "{r:?}"
        );
        let r = idx.search("tomato", 10).expect("search");
        assert!(r.warnings.is_empty(), "said once: {r:?}");
    }

    #[test]
    fn other_schema_version_is_rebuilt_with_a_warning() {
        let (_d, store) = corpus();
        drop(MemoryIndex::open(memory_dir(&store)).expect("create"));
        let path = memory_dir(&store).join("index.sqlite");
        let conn = rusqlite::Connection::open(&path).expect("open");
        conn.pragma_update(None, "user_version", 99).expect("bump");
        drop(conn);
        let mut idx = MemoryIndex::open(memory_dir(&store)).expect("open");
        let r = idx.search("tomato", 10).expect("search");
        assert_eq!(r.hits.len(), 3);
        assert!(
            r.warnings.iter().any(|w| w.contains("schema version 99")),
            "{r:?}"
        );
    }

    #[test]
    fn index_damaged_mid_life_is_rebuilt() {
        let (_d, store) = corpus();
        let mut idx = MemoryIndex::open(memory_dir(&store)).expect("open");
        idx.search("tomato", 10).expect("search");
        let conn = rusqlite::Connection::open(idx.index_path()).expect("open");
        conn.execute_batch("DROP TABLE pages").expect("damage");
        drop(conn);
        let r = idx.search("tomato", 10).expect("search");
        assert_eq!(r.hits.len(), 3);
        assert!(r.warnings.iter().any(|w| w.contains("rebuilt")), "{r:?}");
    }
}

#[cfg(not(feature = "fts5"))]
#[test]
fn without_fts5_every_result_says_scan() {
    assert!(!fts5_available());
    let (_d, store) = corpus();
    let mut idx = MemoryIndex::open(memory_dir(&store)).expect("open");
    assert_eq!(idx.backend(), Backend::Scan);
    for _ in 0..2 {
        let r = idx.search("tomato", 10).expect("search");
        assert_eq!(r.backend, Backend::Scan);
        assert!(
            r.warnings.iter().any(|w| w.contains("no SQLite FTS5")),
            "{r:?}"
        );
    }
    assert!(!memory_dir(&store).join("index.sqlite").exists());
}
