//! Memory search benchmarks (issue 6): search over 10 000 pages including
//! the sync step, warm and after 1 % of the pages changed; a full rebuild;
//! the scan fallback for comparison.
//!
//! Run: `cargo bench -p pincer-memory --bench memory`.
#![allow(clippy::expect_used, clippy::unwrap_used)] // bench fixtures: failing loudly is right

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use pincer_core::message::Timestamp;
use pincer_memory::{MemoryIndex, Page, PageMeta, PageStore};
use std::fs;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, SystemTime};

const PAGES: usize = 10_000;

/// A deterministic generator (splitmix64): same corpus on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// ~4 000 pronounceable words; a Zipf-ish pick makes some common, most rare.
fn vocabulary() -> Vec<String> {
    let onsets = [
        "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "st", "pr",
        "gr", "sh",
    ];
    let vowels = ["a", "e", "i", "o", "u", "ai", "ea", "ou"];
    let codas = ["", "n", "r", "s", "t", "l", "nd", "ck", "m", "x"];
    let mut rng = Rng(7);
    let mut words = Vec::new();
    while words.len() < 4000 {
        let syllables = 1 + rng.below(3);
        let mut w = String::new();
        for _ in 0..syllables {
            w.push_str(onsets[rng.below(onsets.len())]);
            w.push_str(vowels[rng.below(vowels.len())]);
        }
        w.push_str(codas[rng.below(codas.len())]);
        if !words.contains(&w) {
            words.push(w);
        }
    }
    words
}

fn word<'a>(rng: &mut Rng, vocab: &'a [String]) -> &'a str {
    // Square of a uniform draw: low indices are far more frequent.
    let u = rng.below(1000) as f64 / 1000.0;
    &vocab[((u * u) * vocab.len() as f64) as usize]
}

/// A page of ~1-2 KiB: a few paragraphs of sentences.
fn page(i: usize, generation: u64, vocab: &[String]) -> Page {
    let mut rng = Rng((i as u64) << 8 ^ generation);
    let mut body = String::new();
    let target = 1024 + rng.below(1024);
    while body.len() < target {
        let n = 6 + rng.below(12);
        for k in 0..n {
            let w = word(&mut rng, vocab);
            if k == 0 {
                let mut c = w.chars();
                if let Some(f) = c.next() {
                    body.extend(f.to_uppercase());
                    body.push_str(c.as_str());
                }
            } else {
                body.push(' ');
                body.push_str(w);
            }
        }
        body.push_str(if rng.below(5) == 0 { ".\n\n" } else { ". " });
    }
    let title = format!("{} {} {i}", word(&mut rng, vocab), word(&mut rng, vocab));
    Page {
        meta: PageMeta {
            id: format!("page-{i:05}"),
            title,
            tags: vec![vocab[rng.below(50)].clone()],
            source: "bench".into(),
            pinned: i.is_multiple_of(500),
            created: Timestamp::parse("2026-11-30T10:00:00Z").unwrap(),
            updated: None,
        },
        body,
    }
}

/// Writes the corpus straight to disk (the bench measures search, not
/// 10 000 fsyncs) and ages the files past the racy window, as a warm
/// memory directory would be.
fn corpus(dir: &Path, vocab: &[String]) -> PageStore {
    let store = PageStore::open(dir).unwrap();
    let old = SystemTime::now() - Duration::from_secs(3600);
    for i in 0..PAGES {
        let p = page(i, 0, vocab);
        let path = store.pages_dir().join(format!("{}.md", p.meta.id));
        fs::write(&path, p.to_markdown()).unwrap();
        fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    store
}

fn benches(c: &mut Criterion) {
    let vocab = vocabulary();
    let dir = tempfile::tempdir().unwrap();
    let mem = dir.path().join("memory");
    let store = corpus(&mem, &vocab);
    // A mid-frequency word and a two-word query.
    let q1 = vocab[40].clone();
    let q2 = format!("{} {}", vocab[10], vocab[200]);
    let mut idx = MemoryIndex::open(&mem).unwrap();
    let first = idx.search(&q1, 10).unwrap();
    assert_eq!(first.examined, PAGES);
    eprintln!(
        "corpus: {PAGES} pages; `{q1}` -> {} hits, `{q2}` -> {} hits",
        first.hits.len(),
        idx.search(&q2, 10).unwrap().hits.len()
    );

    let mut g = c.benchmark_group("memory");
    g.sample_size(30);
    g.bench_function("search_10k_warm_1term", |b| {
        b.iter(|| black_box(idx.search(black_box(&q1), 10).unwrap()))
    });
    g.bench_function("search_10k_warm_2terms", |b| {
        b.iter(|| black_box(idx.search(black_box(&q2), 10).unwrap()))
    });

    let mut generation = 0u64;
    g.bench_function("search_10k_after_1pct_changed", |b| {
        b.iter_batched(
            || {
                // Rewrite 100 pages (through the store: atomic, as the agent
                // would) with new content.
                generation += 1;
                for k in 0..100 {
                    let i = (generation as usize * 7919 + k * 101) % PAGES;
                    let p = page(i, generation, &vocab);
                    store
                        .upsert(pincer_memory::NewPage {
                            id: Some(p.meta.id),
                            title: p.meta.title,
                            tags: p.meta.tags,
                            source: p.meta.source,
                            pinned: p.meta.pinned,
                            body: p.body,
                        })
                        .unwrap();
                }
            },
            |()| {
                let r = idx.search(black_box(&q1), 10).unwrap();
                assert!(r.reindexed >= 100, "{}", r.reindexed);
                black_box(r)
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();

    let mut g = c.benchmark_group("memory_slow");
    g.sample_size(10);
    g.bench_function("rebuild_10k", |b| {
        b.iter(|| black_box(idx.rebuild().unwrap()))
    });
    let mut scan = MemoryIndex::open_scan(&mem).unwrap();
    g.bench_function("scan_search_10k", |b| {
        b.iter(|| black_box(scan.search(black_box(&q1), 10).unwrap()))
    });
    g.finish();
}

criterion_group!(memory, benches);
criterion_main!(memory);
