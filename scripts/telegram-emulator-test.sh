#!/usr/bin/env bash
# `pincer serve` against telegram-test-api (a third-party Bot API emulator
# from npm): chat, approval by inline button, a cron job reporting to the
# chat, a restart. Installs the emulator once into ~/.cache/pincer-ci (about
# 10 MB, a few seconds); later runs only check it is there. Uses the debug
# pincer that `cargo test` built (builds it if missing). Fails clearly
# without node/npm.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=4.2.1
DIR="${HOME}/.cache/pincer-ci/telegram-test-api-${VERSION}"
command -v node >/dev/null || { echo "node is missing: apt-get install nodejs npm"; exit 1; }
if [ ! -f "$DIR/node_modules/telegram-test-api/package.json" ]; then
    command -v npm >/dev/null || { echo "npm is missing: apt-get install npm"; exit 1; }
    mkdir -p "$DIR"
    [ -f "$DIR/package.json" ] || printf '{"private": true}\n' > "$DIR/package.json"
    npm install --prefix "$DIR" --no-audit --no-fund --silent "telegram-test-api@${VERSION}"
fi
# The workspace build, as `cargo test --workspace` made it: no rebuild in CI.
cargo build --locked --workspace --bins
NODE_PATH="$DIR/node_modules" node scripts/telegram-emulator-test.js "$PWD/target/debug/pincer"
