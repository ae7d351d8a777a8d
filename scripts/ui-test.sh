#!/usr/bin/env bash
# The web UI in a real browser: starts `pincer gateway` on a loopback port
# over a throwaway home (the scripted model, the simulated board, supervised
# autonomy), and drives Debian's headless Chromium with playwright-core from
# the npm registry (PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1: no browser is ever
# downloaded) through what a person does: pair with the printed code, chat,
# approve the gated sensor read, see the answer in the audit view, look at
# the GPIO pins and memory. Then checks the trail from the command line too.
#
#   scripts/ui-test.sh [--pincer PATH]
#
#   --pincer PATH   use this pincer binary instead of `cargo build`ing one
#
# Environment:
#   PINCER_CI_CACHE   where playwright-core is installed (default
#                     target/ci-cache): npm ci of the committed lock file,
#                     skipped when it is already there
#   CHROMIUM          the browser (default: /usr/bin/chromium)
#
# Screenshots (pairing, the approval, the chat, the audit view, the whole
# page; failure.png on a failure) are kept in target/ui-test/. Installs what
# a fresh Debian machine lacks when run as root: chromium, nodejs and npm
# (apt). About 10 s warm; the first run adds the apt and npm installs.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
cache=${PINCER_CI_CACHE:-$repo/target/ci-cache}
shots=$repo/target/ui-test
src=$repo/crates/pincer-gateway/tests/browser
pincer_bin=

while (($#)); do
    case $1 in
        --pincer) pincer_bin=$2; shift 2 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done

need_apt=()
command -v "${CHROMIUM:-chromium}" >/dev/null || need_apt+=(chromium)
command -v node >/dev/null || need_apt+=(nodejs)
command -v npm >/dev/null || need_apt+=(npm)
if ((${#need_apt[@]})); then
    if [[ $(id -u) != 0 ]]; then
        echo "missing: ${need_apt[*]} (apt-get install them, or run as root)" >&2
        exit 1
    fi
    echo "== ui test: apt-get install ${need_apt[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need_apt[@]}" >/dev/null
fi
chromium_bin=$(command -v "${CHROMIUM:-chromium}")

# playwright-core, pinned by the committed lock file, in a directory this
# script owns; reinstalled only when the lock file changes.
node_dir=$cache/ui-node
if ! cmp -s "$src/package-lock.json" "$node_dir/package-lock.json" ||
    [[ ! -d $node_dir/node_modules/playwright-core ]]; then
    echo "== ui test: npm ci playwright-core into $node_dir"
    rm -rf "$node_dir"
    mkdir -p "$node_dir"
    cp "$src/package.json" "$src/package-lock.json" "$node_dir/"
    (cd "$node_dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
fi
# ESM resolves packages beside the script: run a copy of it there.
cp "$src/ui.mjs" "$node_dir/ui.mjs"

if [[ -z $pincer_bin ]]; then
    cargo build --locked -q -p pincer
    pincer_bin=$repo/target/debug/pincer
fi

run=$(mktemp -d)
gw_pid=
cleanup() {
    if [[ -n $gw_pid ]]; then kill "$gw_pid" 2>/dev/null || true; wait "$gw_pid" 2>/dev/null || true; fi
    rm -rf "$run"
}
trap cleanup EXIT
home=$run/home
mkdir -p "$home" "$run/ws"
chmod 700 "$home"
cp "$src/config.toml" "$src/script.json" "$home/"

PINCER_BOARD=sim "$pincer_bin" --home "$home" gateway --bind 127.0.0.1:0 --workspace "$run/ws" \
    >"$run/gateway.out" 2>"$run/gateway.err" &
gw_pid=$!
code= url=
for _ in $(seq 1 300); do
    if grep -q '^pairing code: ' "$run/gateway.out" 2>/dev/null; then
        code=$(sed -n 's/^pairing code: \([0-9]\{6\}\)$/\1/p' "$run/gateway.out")
        url=$(sed -n 's/^pincer gateway on \(http:[^ ]*\) .*/\1/p' "$run/gateway.out")
        break
    fi
    kill -0 "$gw_pid" 2>/dev/null || break
    sleep 0.1
done
if [[ -z $code || -z $url ]]; then
    echo "the gateway did not print its address and pairing code:" >&2
    cat "$run/gateway.out" "$run/gateway.err" >&2
    exit 1
fi

rm -rf "$shots"
echo "== ui test: $chromium_bin against $url"
if ! PINCER_URL=$url PINCER_CODE=$code SHOTS=$shots CHROMIUM=$chromium_bin node "$node_dir/ui.mjs"; then
    echo "--- gateway stderr" >&2
    cat "$run/gateway.err" >&2
    exit 1
fi

# The trail as the command line sees it: intact, and the approval answered
# by the browser's token, not by a name anyone could type.
"$pincer_bin" --home "$home" audit verify >/dev/null
answers=$("$pincer_bin" --home "$home" audit log --kind approval.answer --json)
if ! grep -q '"actor":"token:[0-9a-f]\{12\}"' <<<"$answers"; then
    echo "approval.answer is not by a token: $answers" >&2
    exit 1
fi
echo "ui test: passed; screenshots in ${shots#"$repo"/}"
