#!/usr/bin/env bash
# Measures pincer against the targets in docs/requirements.md and prints a report.
#   scripts/bench.sh           # everything
#   scripts/bench.sh --quick   # skip the criterion benches
# Installs hyperfine from Debian if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v hyperfine >/dev/null; then
  apt-get update -qq && apt-get install -y -qq hyperfine >/dev/null
fi

echo "== release build (size profile)"
start=$(date +%s)
cargo build --release --locked -p pincer 2>&1 | tail -1
echo "build took $(( $(date +%s) - start )) s (incremental if target/ was warm)"
bin=target/release/pincer
echo "binary size: $(stat -c %s "$bin") bytes ($(awk "BEGIN{printf \"%.2f\", $(stat -c %s "$bin")/1048576}") MiB), target < 3 MiB minimal"

echo "== cold start: pincer --version (target < 3 ms)"
hyperfine -N --warmup 20 --runs 300 "$bin --version" 2>&1 | sed -n '1,4p'

echo "== peak RSS"
home=$(mktemp -d)
for cmd in "--version" "demo"; do
  rss=$( { /usr/bin/time -v env PINCER_HOME="$home" "$bin" $cmd >/dev/null; } 2>&1 | awk -F': ' '/Maximum resident/ {print $2}')
  echo "pincer $cmd: max RSS ${rss} KiB"
done

# The agent idle at its REPL prompt (scripted provider, no network): the
# resident set after it has started and is waiting for input.
printf '{"turns": []}' > "$home/script.json"
printf '[providers.s]\nkind = "scripted"\nscript = "script.json"\n' > "$home/config.toml"
(sleep 2) | PINCER_HOME="$home" "$bin" agent >/dev/null 2>&1 &
agent_pid=$!
sleep 1
echo "pincer agent idle at its prompt: VmRSS $(awk '/VmRSS/ {print $2, $3}' /proc/$agent_pid/status) (target < 5 MiB)"
wait "$agent_pid" || true
rm -rf "$home"

echo "== a person's hardware read on the simulated board (process start, board, two audited entries)"
hwhome=$(mktemp -d)
hyperfine -N --warmup 3 --runs 30 "env PINCER_HOME=$hwhome PINCER_BOARD=sim $bin hw read 0x48 --register 0 --len 2" 2>&1 | sed -n '1,4p'
rss=$( { /usr/bin/time -v env PINCER_HOME="$hwhome" PINCER_BOARD=sim "$bin" hw read 0x48 --register 0 --len 2 >/dev/null; } 2>&1 | awk -F': ' '/Maximum resident/ {print $2}')
echo "pincer hw read: max RSS ${rss} KiB"
rm -rf "$hwhome"

echo "== audit note (a fresh process's first append; goal: flat) at 10, 10 000 and 1 000 000 entries; verify at 1 000 000 (target < 2 s)"
for n in 10 10000 1000000; do
  trail=$(mktemp -d)
  cargo run --release --locked -q -p pincer-core --example audit_fill -- "$trail/audit" "$n"
  echo "trail of $n entries: $(du -sb "$trail/audit" | cut -f1) bytes, $(find "$trail/audit" -name 'trail*.jsonl' | wc -l) segment(s)"
  hyperfine -N --warmup 3 --runs 20 "env PINCER_HOME=$trail $bin audit note bench" 2>&1 | sed -n '1,4p'
  if [ "$n" = 1000000 ]; then
    hyperfine -N --warmup 1 --runs 5 "env PINCER_HOME=$trail $bin audit verify" 2>&1 | sed -n '1,4p'
    rss=$( { /usr/bin/time -v env PINCER_HOME="$trail" "$bin" audit verify >/dev/null; } 2>&1 | awk -F': ' '/Maximum resident/ {print $2}')
    echo "pincer audit verify (1M): max RSS ${rss} KiB"
  fi
  rm -rf "$trail"
done

if [ "${1:-}" != "--quick" ]; then
  echo "== criterion (session store, trimming, agent turn, audit trail)"
  for b in session agent audit hooks; do
    cargo bench --locked -p pincer-core --bench "$b" -- --noplot 2>&1 \
      | grep -E '^(session|trim|agent|audit|hooks)/|time:|thrpt:' || true
  done
  cargo bench --locked -p pincer-memory --bench memory -- --noplot 2>&1 \
    | grep -E '^memory(_slow)?/|time:' || true
  cargo bench --locked -p pincer-tools --bench hw -- --noplot 2>&1 \
    | grep -E '^hw/|time:' || true
fi
