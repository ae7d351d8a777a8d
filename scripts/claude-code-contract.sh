#!/usr/bin/env bash
# The Claude Code adapter against the real client: installs
# @anthropic-ai/claude-code from the npm registry into a cache outside the
# repository, checks that every name in
# crates/pincer-claude-code/src/contract.json exists in it, then runs one
# offline session of the real `claude` CLI (model API replaced by a scripted
# server on loopback) with pincer's hooks installed, and checks what each
# hook point did. See scripts/claude-code-contract.py.
#
#   CLAUDE_CODE_VERSION  the client version (default: contract.json's
#                        tested_version; `latest` checks for drift)
#   PINCER_CI_CACHE      where clients are installed (default
#                        ${XDG_CACHE_HOME:-$HOME/.cache}/pincer-ci)
#   PINCER_BIN           the pincer binary (default: built with cargo)
set -euo pipefail
cd "$(dirname "$0")/.."

command -v npm >/dev/null || {
    echo "npm is missing: the Claude Code contract check installs the client with it (apt-get install -y npm)"
    exit 1
}
command -v python3 >/dev/null || { echo "python3 is missing"; exit 1; }

version=${CLAUDE_CODE_VERSION:-$(python3 -c 'import json; print(json.load(open("crates/pincer-claude-code/src/contract.json"))["tested_version"])')}
cache=${PINCER_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pincer-ci}
dir="$cache/claude-code-$version"
claude="$dir/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
if [ "$version" = latest ] || ! "$claude" --version >/dev/null 2>&1; then
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error \
        "@anthropic-ai/claude-code@$version"
fi
if ! "$claude" --version >/dev/null 2>&1; then
    # The wrapper's postinstall did not place the native binary: use the
    # platform package's own.
    claude=$(find "$dir/node_modules/@anthropic-ai" -maxdepth 2 -type f -name claude -perm -u+x | head -1)
fi
[ -n "$claude" ] && "$claude" --version >/dev/null 2>&1 || {
    echo "the installed @anthropic-ai/claude-code@$version has no runnable claude binary in $dir"
    exit 1
}
echo "client: $("$claude" --version) ($claude)"

python3 scripts/claude-code-contract.py names "$claude"

if [ -z "${PINCER_BIN:-}" ]; then
    cargo build -p pincer --locked --quiet
    PINCER_BIN=target/debug/pincer
fi
python3 scripts/claude-code-contract.py live "$claude" "$PINCER_BIN"
