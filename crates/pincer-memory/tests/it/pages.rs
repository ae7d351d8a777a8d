use crate::{assert_field, mem, new_page};
use pincer_memory::page::MAX_BODY_BYTES;
use pincer_memory::{MemoryError, NewPage, Page, parse_page};
use proptest::prelude::*;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// One write-side rule: (what, page, field named in the error).
fn write_case(f: impl FnOnce(&mut NewPage)) -> NewPage {
    let mut p = new_page("Fine title", "body");
    f(&mut p);
    p
}

#[test]
fn write_validation_table_names_the_field() {
    let cases: Vec<(&str, NewPage, &str)> = vec![
        (
            "empty title",
            write_case(|p| p.title = String::new()),
            "title",
        ),
        (
            "newline in title",
            write_case(|p| p.title = "a\nb".into()),
            "title",
        ),
        (
            "CR in title",
            write_case(|p| p.title = "a\rb".into()),
            "title",
        ),
        (
            "tab in title",
            write_case(|p| p.title = "a\tb".into()),
            "title",
        ),
        (
            "NUL in title",
            write_case(|p| p.title = "a\0b".into()),
            "title",
        ),
        (
            "padded title",
            write_case(|p| p.title = " a".into()),
            "title",
        ),
        (
            "long title",
            write_case(|p| p.title = "x".repeat(201)),
            "title",
        ),
        (
            "newline in source",
            write_case(|p| p.source = "a\nb".into()),
            "source",
        ),
        (
            "DEL in source",
            write_case(|p| p.source = "a\u{7f}".into()),
            "source",
        ),
        (
            "padded source",
            write_case(|p| p.source = "a ".into()),
            "source",
        ),
        (
            "comma in tag",
            write_case(|p| p.tags = vec!["a,b".into()]),
            "tags",
        ),
        (
            "empty tag",
            write_case(|p| p.tags = vec![String::new()]),
            "tags",
        ),
        (
            "space in tag",
            write_case(|p| p.tags = vec!["a b".into()]),
            "tags",
        ),
        (
            "uppercase tag",
            write_case(|p| p.tags = vec!["Garden".into()]),
            "tags",
        ),
        (
            "bracket in tag",
            write_case(|p| p.tags = vec!["a]".into()]),
            "tags",
        ),
        (
            "duplicate tag",
            write_case(|p| p.tags = vec!["a".into(), "a".into()]),
            "tags",
        ),
        (
            "long tag",
            write_case(|p| p.tags = vec!["t".repeat(33)]),
            "tags",
        ),
        (
            "too many tags",
            write_case(|p| p.tags = (0..33).map(|i| format!("t{i}")).collect()),
            "tags",
        ),
        ("bad id", write_case(|p| p.id = Some("Bad".into())), "id"),
        (
            "huge body",
            write_case(|p| p.body = "x".repeat(MAX_BODY_BYTES + 1)),
            "body",
        ),
    ];
    let (_d, store) = mem();
    for (what, page, field) in cases {
        let msg = assert_field(store.write(page.clone()), field);
        assert!(!msg.is_empty(), "{what}");
        // update/upsert validate the same way.
        let mut with_id = page;
        if with_id.id.is_none() {
            with_id.id = Some("some-id".into());
        }
        assert_field(store.upsert(with_id), field);
    }
    let (pages, problems) = store.list().expect("list");
    assert!(
        pages.is_empty() && problems.is_empty(),
        "nothing was written"
    );
}

const GOOD: &str = "---\nid: p1\ntitle: T\ntags: [a, b]\nsource: s\npinned: false\ncreated: 2026-11-30T10:00:00.000Z\n---\nbody\n";

#[test]
fn parse_validation_table_names_the_field_and_file() {
    let swap = |from: &str, to: &str| GOOD.replacen(from, to, 1).into_bytes();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "unknown key",
            swap("pinned:", "colour: red\npinned:"),
            "colour",
        ),
        (
            "duplicate key",
            swap("source: s", "source: s\nsource: t"),
            "source",
        ),
        ("missing id", swap("id: p1\n", ""), "id"),
        ("missing title", swap("title: T\n", ""), "title"),
        ("missing tags", swap("tags: [a, b]\n", ""), "tags"),
        ("missing source", swap("source: s\n", ""), "source"),
        ("missing pinned", swap("pinned: false\n", ""), "pinned"),
        (
            "missing created",
            swap("created: 2026-11-30T10:00:00.000Z\n", ""),
            "created",
        ),
        (
            "bad boolean",
            swap("pinned: false", "pinned: yes"),
            "pinned",
        ),
        (
            "bad timestamp",
            swap("2026-11-30T10:00:00.000Z", "yesterday"),
            "created",
        ),
        (
            "bad updated",
            swap("---\nbody", "updated: 2026-13-01T00:00:00Z\n---\nbody"),
            "updated",
        ),
        ("id not file name", swap("id: p1", "id: p2"), "id"),
        ("bad id", swap("id: p1", "id: ../p1"), "id"),
        ("empty title", swap("title: T", "title:"), "title"),
        ("CR in title", swap("title: T", "title: T\r"), "title"),
        ("tags not a list", swap("[a, b]", "a, b"), "tags"),
        ("empty tag", swap("[a, b]", "[a, , b]"), "tags"),
        ("uppercase tag", swap("[a, b]", "[A, b]"), "tags"),
        ("no front matter", b"just text\n".to_vec(), "front matter"),
        (
            "no closing line",
            swap("---\nbody\n", "body\n"),
            "front matter",
        ),
        (
            "not key: value",
            swap("pinned: false", "pinned false"),
            "front matter",
        ),
        (
            "bad UTF-8 in body",
            [GOOD.as_bytes(), b"\xff\xfe"].concat(),
            "body",
        ),
        (
            "bad UTF-8 in head",
            swap("title: T", "title: T\u{1}")
                .iter()
                .map(|&b| if b == 1 { 0xff } else { b })
                .collect(),
            "front matter",
        ),
    ];
    let file = Path::new("/m/pages/p1.md");
    parse_page(file, GOOD.as_bytes()).expect("the good page parses");
    for (what, bytes, field) in cases {
        let e = parse_page(file, &bytes).expect_err(what);
        assert_eq!(e.field(), Some(field), "{what}: {e}");
        let msg = e.to_string();
        assert!(msg.contains("p1.md"), "{what}: file not named: {msg}");
        assert!(msg.contains(field), "{what}: field not named: {msg}");
    }
}

#[test]
fn ids_are_validated_and_never_paths() {
    let (dir, store) = mem();
    let long = "a".repeat(65);
    for bad in [
        "../x",
        "a/b",
        ".",
        "..",
        "",
        "Upper",
        "-a",
        "a b",
        "a.md",
        "a\0",
        "é",
        long.as_str(),
    ] {
        let mut p = new_page("t", "b");
        p.id = Some(bad.to_string());
        assert_field(store.write(p.clone()), "id");
        assert_field(store.upsert(p.clone()), "id");
        assert_field(store.update(p), "id");
        assert_field(store.read(bad), "id");
        assert_field(store.delete(bad), "id");
    }
    let mut ok = new_page("t", "b");
    ok.id = Some("a".repeat(64));
    store.write(ok).expect("64 chars is fine");
    // Nothing was created anywhere but pages/.
    let mut names: Vec<_> = fs::read_dir(dir.path().join("memory"))
        .expect("ls")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf8"))
        .collect();
    names.sort();
    assert_eq!(names, [".pages.lock", "pages"]);
    assert!(!dir.path().join("x").exists());
}

#[test]
fn write_derives_ids_and_never_overwrites() {
    let (_d, store) = mem();
    let a = store
        .write(new_page("Greenhouse notes!", "one"))
        .expect("a");
    let b = store
        .write(new_page("Greenhouse notes!", "two"))
        .expect("b");
    assert!(a.meta.id.starts_with("greenhouse-notes-"), "{}", a.meta.id);
    assert_ne!(a.meta.id, b.meta.id);
    assert_eq!(store.read(&a.meta.id).expect("read").body, "one");
    let weird = store.write(new_page("¿¿??", "x")).expect("symbols only");
    assert!(weird.meta.id.starts_with("page-"));

    let mut dup = new_page("Other", "three");
    dup.id = Some(a.meta.id.clone());
    let e = store.write(dup).expect_err("exists");
    assert!(matches!(e, MemoryError::Exists { .. }), "{e}");
    assert_eq!(store.read(&a.meta.id).expect("read").body, "one");
}

#[test]
fn update_keeps_created_and_sets_updated() {
    let (_d, store) = mem();
    let mut p = new_page("Plan", "v1");
    p.id = Some("plan".into());
    assert!(matches!(
        store.update(p.clone()),
        Err(MemoryError::NotFound { .. })
    ));
    let first = store.upsert(p.clone()).expect("create");
    assert_eq!(first.meta.updated, None);
    p.body = "v2".into();
    p.tags = vec!["later".into()];
    let second = store.update(p.clone()).expect("update");
    assert_eq!(second.meta.created, first.meta.created);
    assert!(second.meta.updated.is_some_and(|u| u >= first.meta.created));
    let read = store.read("plan").expect("read");
    assert_eq!(read, second);
    p.id = None;
    assert_field(store.update(p), "id");
}

#[test]
fn list_reports_corrupt_pages_and_pinned_filters() {
    let (_d, store) = mem();
    let mut pin = new_page("Pinned fact", "the wifi is on channel 6");
    pin.pinned = true;
    store.write(pin).expect("pin");
    store.write(new_page("Loose", "x")).expect("loose");
    fs::write(store.pages_dir().join("broken.md"), "no front matter").expect("write");
    fs::write(store.pages_dir().join("notes.txt"), "ignored").expect("write");
    fs::write(store.pages_dir().join("x.md.tmp"), "ignored").expect("write");
    let (metas, problems) = store.list().expect("list");
    assert_eq!(metas.len(), 2);
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].to_string().contains("broken.md"),
        "{}",
        problems[0]
    );
    let (pinned, _) = store.pinned().expect("pinned");
    assert_eq!(pinned.len(), 1);
    assert_eq!(pinned[0].body, "the wifi is on channel 6");
}

#[test]
fn delete_removes_and_reports_missing() {
    let (_d, store) = mem();
    let p = store.write(new_page("Gone soon", "x")).expect("write");
    store.delete(&p.meta.id).expect("delete");
    assert!(matches!(
        store.read(&p.meta.id),
        Err(MemoryError::NotFound { .. })
    ));
    assert!(matches!(
        store.delete(&p.meta.id),
        Err(MemoryError::NotFound { .. })
    ));
}

#[test]
fn files_are_private() {
    let (_d, store) = mem();
    let p = store.write(new_page("Secret", "x")).expect("write");
    let mode = |p: &Path| fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(store.pages_dir()), 0o700);
    assert_eq!(mode(&store.path_of(&p.meta.id).expect("path")), 0o600);
}

#[test]
fn concurrent_writers_never_tear_a_page() {
    let (_d, store) = mem();
    let mut seed = new_page("Shared", "start");
    seed.id = Some("shared".into());
    store.write(seed).expect("seed");
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..4u8)
            .map(|w| {
                let store = &store;
                s.spawn(move || -> Result<(), String> {
                    for i in 0..40usize {
                        // Each body is one letter repeated: a torn page would
                        // mix letters or lengths.
                        let c = char::from(b'a' + w);
                        let mut p =
                            new_page(&format!("Writer {w}"), &c.to_string().repeat(64 * 1024 + i));
                        p.id = Some("shared".into());
                        store.upsert(p).map_err(|e| e.to_string())?;
                    }
                    Ok(())
                })
            })
            .collect();
        let reader = s.spawn(|| {
            let mut reads = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let page = match store.read("shared") {
                    Ok(p) => p,
                    Err(e) => return Err(format!("torn or unreadable page: {e}")),
                };
                if page.body != "start" {
                    let c = page.body.chars().next().expect("non-empty");
                    assert!(page.body.chars().all(|x| x == c), "mixed body");
                    assert_eq!(
                        page.meta.title,
                        format!("Writer {}", u32::from(c) - u32::from('a'))
                    );
                }
                reads += 1;
            }
            Ok(reads)
        });
        // Stop the reader whatever the writers did, then judge.
        let results: Vec<_> = writers.into_iter().map(|w| w.join()).collect();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let reads = reader
            .join()
            .expect("reader thread")
            .expect("reader saw a whole page");
        for r in results {
            r.expect("writer thread").expect("upsert");
        }
        assert!(reads > 0);
    });
    let names: Vec<_> = fs::read_dir(store.pages_dir())
        .expect("ls")
        .map(|e| e.expect("e").file_name())
        .collect();
    assert_eq!(names, ["shared.md"], "no temp file left behind");
}

fn arb_page() -> impl Strategy<Value = NewPage> {
    (
        "[a-z0-9][a-z0-9-]{0,20}",
        "[A-Za-z0-9][A-Za-z0-9 :,.!?'\"#-]{0,40}[A-Za-z0-9]",
        proptest::collection::btree_set("[a-z0-9_-]{1,8}", 0..4),
        "([A-Za-z0-9][A-Za-z0-9 :/.-]{0,20}[A-Za-z0-9])?",
        any::<bool>(),
        "(?s).{0,200}",
    )
        .prop_map(|(id, title, tags, source, pinned, body)| NewPage {
            id: Some(id),
            title,
            tags: tags.into_iter().collect(),
            source,
            pinned,
            body,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn any_valid_page_reads_back_exactly(p in arb_page()) {
        let (_d, store) = mem();
        let written: Page = store.write(p.clone()).expect("valid page");
        let read = store.read(p.id.as_deref().expect("id")).expect("read");
        prop_assert_eq!(&read, &written);
        prop_assert_eq!(read.body, p.body);
        prop_assert_eq!(read.meta.title, p.title);
        prop_assert_eq!(read.meta.tags, p.tags);
        prop_assert_eq!(read.meta.source, p.source);
    }
}
