#!/usr/bin/env bash
# Sandbox set-up cost per command, against bubblewrap in the same run:
#   - hyperfine: `true` bare; the sandbox alone (a process that starts,
#     runs `true` in pincer's sandbox and exits:
#     crates/pincer-sandbox/examples/exec.rs); the whole `pincer exec --
#     true` (config, workspace, two audit entries with their fsyncs);
#     bwrap --unshare-all true;
#   - criterion: the same with the caller already running (as the shell
#     tool is), crates/pincer-sandbox/benches/setup.rs.
#   scripts/bench-sandbox.sh [--quick]   # --quick: hyperfine only
# Installs hyperfine and bubblewrap from Debian if they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."

for p in hyperfine bwrap; do
  if ! command -v "$p" >/dev/null; then
    apt-get update -qq && apt-get install -y -qq hyperfine bubblewrap >/dev/null
  fi
done

cargo build --profile bench --locked -p pincer-sandbox --example exec 2>&1 | tail -1
cargo build --release --locked -p pincer 2>&1 | tail -1
exe=$PWD/target/release/examples/exec
pincer=$PWD/target/release/pincer
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
cd "$ws"
export PINCER_HOME=$ws/home
echo "== load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
hyperfine -N --warmup 20 --runs "${RUNS:-200}" \
  -n 'true' '/bin/true' \
  -n 'pincer sandbox: true' "$exe /bin/true" \
  -n 'pincer exec -- true' "$pincer exec -- /bin/true" \
  -n 'bwrap --unshare-all true' 'bwrap --unshare-all --die-with-parent --ro-bind / / /bin/true' \
  2>&1 | grep -E 'Time|Range|Benchmark'
cd - >/dev/null

if [[ "${1:-}" != "--quick" ]]; then
  cargo bench --locked -p pincer-sandbox --bench setup 2>&1 | grep -E '^setup/|time:'
fi
