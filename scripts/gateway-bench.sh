#!/usr/bin/env bash
# The gateway's numbers, measured on the binary that ships:
#   1. idle RSS of `pincer gateway` with the web UI served (VmRSS and VmHWM
#      from /proc after start, a pairing, the UI's three files and /health),
#      and the binary's size;
#   2. /health requests per second and latency quantiles, 16 keep-alive
#      clients (the load generator of benches/load.rs, pointed at it);
#   3. 50 concurrent WebSocket chat sessions with the scripted provider.
#
#   scripts/gateway-bench.sh [--profile release|bench] [--pincer PATH]
#
# The default profile is release (size-tuned, fat LTO: what ships; a cold
# build takes minutes). Public tools only: curl, /proc, /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
profile=release
pincer_bin=
while (($#)); do
    case $1 in
        --profile) profile=$2; shift 2 ;;
        --pincer) pincer_bin=$2; shift 2 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done
if [[ -z $pincer_bin ]]; then
    cargo build --locked -q --profile "$profile" -p pincer
    pincer_bin=$repo/target/$profile/pincer
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
sessions=${PINCER_BENCH_SESSIONS:-50}
turns=${PINCER_BENCH_TURNS:-10}
# A scripted model with one plain reply per turn the load will ask for.
python3 -c 'import json,sys; n=int(sys.argv[2]); json.dump({"turns": [{"text": "reply %d" % i} for i in range(n)]}, open(sys.argv[1], "w"))' \
    "$home/script.json" $((sessions * turns + 200))
printf '[policy]\nautonomy = "supervised"\n\n[providers.s]\nkind = "scripted"\nscript = "script.json"\n' >"$home/config.toml"

PINCER_BOARD=sim "$pincer_bin" --home "$home" gateway --bind 127.0.0.1:0 --workspace "$run/ws" \
    >"$run/out" 2>"$run/err" &
gw_pid=$!
code= addr=
for _ in $(seq 1 300); do
    if grep -q '^pairing code: ' "$run/out" 2>/dev/null; then
        code=$(sed -n 's/^pairing code: \([0-9]\{6\}\)$/\1/p' "$run/out")
        addr=$(sed -n 's|^pincer gateway on http://\([^ ]*\) .*|\1|p' "$run/out")
        break
    fi
    kill -0 "$gw_pid" 2>/dev/null || break
    sleep 0.1
done
[[ -n $code && -n $addr ]] || { cat "$run/out" "$run/err" >&2; exit 1; }

token=$(curl -sf -H 'Content-Type: application/json' -d "{\"code\": \"$code\"}" "http://$addr/pair" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
for p in / /app.js /app.css /health; do curl -sf -o /dev/null "http://$addr$p"; done
curl -sf -o /dev/null -H "Authorization: Bearer $token" "http://$addr/api/status"
sleep 1
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$gw_pid/status")
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$gw_pid/status")
threads=$(awk '/^Threads/ {print $2}' "/proc/$gw_pid/status")
size=$(stat -c %s "$pincer_bin")
echo "binary: $pincer_bin ($profile), $((size / 1024)) KiB"
awk -v r="$rss" -v h="$hwm" -v t="$threads" 'BEGIN {
    printf "idle RSS after start, pairing, the UI and /api/status: %d KiB (%.1f MiB); peak %d KiB; %d threads\n", r, r / 1024, h, t }'

# The load: the same generator the bounded load test uses, pointed at this
# process. 50 x 10 turns and 50 upgrades stay under one token's default
# limit of 600 requests a minute.
PINCER_BENCH_ADDR=$addr PINCER_BENCH_TOKEN=$token \
    PINCER_BENCH_SESSIONS=$sessions PINCER_BENCH_TURNS=$turns \
    cargo bench --locked -q -p pincer-gateway --bench load 2>&1 | grep -v '^gateway at' || true
rss_after=$(awk '/^VmRSS/ {print $2}' "/proc/$gw_pid/status")
hwm_after=$(awk '/^VmHWM/ {print $2}' "/proc/$gw_pid/status")
echo "RSS after the load: $rss_after KiB; peak $hwm_after KiB"
