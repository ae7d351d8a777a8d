#!/usr/bin/env bash
# How long Claude Code waits on pincer: `pincer hook claude-code EVENT` from
# process start to answer (hyperfine, which subtracts its shell's start), on
# a home with an audit trail of 0, 10 000 and 100 000 entries and 300 memory
# pages (scripts/bench-claude-hook.py makes it). Each PreToolUse appends its
# entry (fsync included), as it does in a session.
#
#   PINCER_BIN   the binary to measure (default: a release build)
#   RUNS         runs per case (default 30)
#   OUT          where the hyperfine JSON goes (default target/bench-claude-hook)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { echo "hyperfine is missing (apt-get install -y hyperfine)"; exit 1; }
if [ -z "${PINCER_BIN:-}" ]; then
    cargo build --release -p pincer --locked --quiet
    PINCER_BIN=$PWD/target/release/pincer
fi
runs=${RUNS:-30}
out=${OUT:-target/bench-claude-hook}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for n in 0 10000 100000; do
    home="$tmp/home-$n"
    project="$tmp/project-$n"
    inputs="$tmp/inputs-$n"
    mkdir -p "$inputs"
    python3 scripts/bench-claude-hook.py "$home" "$project" "$n" 300 "$inputs"
    "$PINCER_BIN" --home "$home" audit verify >/dev/null
    echo "== trail of $n entries, 300 memory pages"
    hook="env -u PINCER_HOME CLAUDE_PROJECT_DIR=$project $PINCER_BIN --home $home hook claude-code"
    hyperfine --warmup 3 --runs "$runs" --export-json "$out/hook-$n.json" \
        -n "PreToolUse Bash ls (allow)" "$hook PreToolUse < $inputs/pre-bash-ls.json" \
        -n "PreToolUse Bash rm (ask)" "$hook PreToolUse < $inputs/pre-bash-rm.json" \
        -n "PreToolUse Write in project" "$hook PreToolUse < $inputs/pre-write.json" \
        -n "SessionStart (rules + handoff)" "$hook SessionStart < $inputs/session-start.json" \
        -n "audit verify alone" "$PINCER_BIN --home $home audit verify"
done
