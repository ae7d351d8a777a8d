//! Classification time: a typical one-line command, a 4 KB script and
//! 100 KB inputs (a script; unparsable text; and 100 KB of `(`, which the
//! classifier before issue 13 took 8 s (52 s on slower machines) to refuse,
//! its fork-bomb scan being quadratic), for both shells. Classification is
//! linear in the input, so the 100 KB script should cost about 25 times the
//! 4 KB one.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pincer_shell::{Shell, classify};
use std::hint::black_box;

/// About 80 characters, the shape agents send most.
const TYPICAL: &str =
    "git log --oneline -20 | grep -i fix | head -5 && ls -la src/ 2>/dev/null | wc -l";

/// A block of a realistic script: loops, tests, pipes, a nested `sh -c`,
/// a here-document, variables and a few writes.
const BLOCK: &str = r#"set -eu
dir=src; out=build/report.txt
for f in "$dir"/*.rs; do
  if [ -f "$f" ] && grep -q 'fn main' "$f"; then
    echo "== $f"; head -n 20 "$f" | sed -n '1,10p'
  fi
done
find . -type f -name '*.md' -not -path './target/*' | sort | uniq -c | sort -rn | head
git log --oneline -10 -- "$dir" | awk '{print $1}' | while read -r h; do git show --stat "$h" | tail -1; done
case "${1:-}" in build) sh -c 'ls target 2>/dev/null | wc -l';; *) echo usage;; esac
cat <<END > "$out"
report for $dir
END
x=$(date +%s); echo "took $x" >> "$out"
"#;

fn script(bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + BLOCK.len());
    while s.len() < bytes {
        s.push_str(BLOCK);
    }
    s
}

/// Text that does not parse: a soup of operators, substitutions and words
/// inside a double quote that never closes.
fn unparsable(bytes: usize) -> String {
    let soup = "ls ( $( `x` ${a:- { if then (( <<E f() { f|f& }; ";
    let mut s = String::from("echo \"never closed ");
    while s.len() < bytes {
        s.push_str(soup);
    }
    s
}

fn bench(c: &mut Criterion) {
    let inputs = [
        ("typical_80", TYPICAL.to_string()),
        ("script_4k", script(4 * 1024)),
        ("script_100k", script(100 * 1024)),
        ("unparsable_100k", unparsable(100 * 1024)),
        ("parens_100k", "(".repeat(100 * 1024)),
    ];
    let mut g = c.benchmark_group("classify");
    for (name, input) in &inputs {
        g.throughput(Throughput::Bytes(input.len() as u64));
        for shell in Shell::ALL {
            g.bench_with_input(BenchmarkId::new(*name, shell), input, |b, input| {
                b.iter(|| classify(black_box(input), shell, &[]))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
