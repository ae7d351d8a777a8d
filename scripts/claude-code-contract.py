#!/usr/bin/env python3
"""The Claude Code adapter's contract, checked against the installed client.

  claude-code-contract.py names CLAUDE_BIN
      Every name in crates/pincer-claude-code/src/contract.json must occur in
      the client's bundled code: events and tool names as whole identifiers,
      fields as object keys (`name:` or a quoted key), the command hook's keys
      (`args`, `onFailure`…) inside the hook schema itself. A name that is a
      prefix of a longer one (PostToolUse / PostToolUseFailure) only counts
      when it stands alone.

  claude-code-contract.py live CLAUDE_BIN PINCER_BIN
      Runs the real client, offline: pincer installed into a scratch project
      from a path full of shell characters, the model API replaced by
      scripts/claude-code-fake-api.py on loopback. One `claude -p` session
      fires all five hook points; the checks read what the client sent the
      model (pincer's rules at the start, its refusals as tool results), its
      debug log, and pincer's audit trail and memory.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONTRACT = json.load(open(os.path.join(ROOT, "crates/pincer-claude-code/src/contract.json")))
IDENT = rb"A-Za-z0-9_$"


def whole(name):
    return re.compile(rb"(?<![" + IDENT + rb"])" + re.escape(name.encode()) + rb"(?![" + IDENT + rb"])")


def key(name):
    n = re.escape(name.encode())
    return re.compile(rb"(?<![" + IDENT + rb".])" + n + rb"\s*:|[\"']" + n + rb"[\"']\s*:")


def regions(data, anchor, size):
    """The `size` bytes from each match of `anchor`."""
    return [data[m.start():m.start() + size] for m in re.finditer(anchor, data)]


def names(claude_bin):
    data = open(claude_bin, "rb").read()
    missing, checked = [], 0

    def need(what, name, pattern, region=None, optional=False):
        nonlocal checked
        checked += 1
        hays = [data] if region is None else (region if isinstance(region, list) else [region])
        ok = any(pattern.search(h) is not None for h in hays)
        if not ok:
            (print if optional else missing.append)(
                "  absent (optional): %s %s" % (what, name) if optional else "%s %s" % (what, name))
        return ok

    for e in CONTRACT["events"]:
        need("event", e, whole(e))
    # Fields are looked for where the client defines them, not anywhere in
    # 400 MB of code (a key like `message` exists somewhere in any bundle):
    # the hook input's base schema (session_id, transcript_path, cwd…), each
    # event's schema (hook_event_name: literal("EVENT") and what follows),
    # and the hook output schema (systemMessage … hookSpecificOutput).
    base = regions(data, rb"session_id:[A-Za-z0-9_$]+\(\),transcript_path:[A-Za-z0-9_$]+\(\),cwd:", 2500)
    if not base:
        missing.append("the hook input schema (session_id, transcript_path, cwd)")
    for group, fields in CONTRACT["input_fields"].items():
        where = base if group == "common" else base + regions(
            data, rb"hook_event_name:[A-Za-z0-9_$]+\(\"" + group.encode() + rb"\"\)", 2500)
        for f in fields:
            need("input field (%s)" % group, f, key(f), where)
    output = regions(data, rb"systemMessage:[^;]{0,3000}?hookSpecificOutput:", 8000)
    if not output:
        missing.append("the hook output schema (systemMessage, hookSpecificOutput)")
    for f in CONTRACT["output_fields"]:
        need("output field", f, key(f), output)
    decisions = ",".join('"%s"' % d for d in CONTRACT["permission_decisions"])
    need("permission decisions", decisions, re.compile(re.escape(("[" + decisions).encode())))
    for f in CONTRACT["tool_response_fields"]:
        need("tool_response field", f, key(f))
    for n in CONTRACT["environment"]:
        need("environment variable", n, whole(n))
    for n in CONTRACT["settings_files"]:
        need("settings file", n, re.compile(re.escape(n.encode())))
    # The command hook's schema: `type: <literal>("command")` and the keys
    # that follow it in the same object.
    m = re.search(rb"type:[A-Za-z0-9_$]+\(\"command\"\)", data)
    region = data[m.start():m.start() + 6000] if m else b""
    if not m:
        missing.append("the command hook schema (type: literal(\"command\"))")
    for f in CONTRACT["settings_fields"]:
        if f in ("hooks", "matcher"):
            continue
        need("command hook key", f, key(f), region)
    need("matcher group", "matcher + hooks", re.compile(rb"matcher:[^;]{0,300}?hooks:"))
    for v in CONTRACT["settings_values"]:
        need("settings value", v, re.compile(re.escape(('"%s"' % v).encode())), region)
    for cls, table in CONTRACT["tools"].items():
        for tool in (table if isinstance(table, list) else table.keys()):
            need("tool", tool, re.compile(re.escape(('"%s"' % tool).encode())))
        if isinstance(table, dict):
            for tool, field in table.items():
                need("tool field (%s)" % tool, field, key(field))
    for cls, table in CONTRACT["optional"]["tools"].items():
        for tool in (table if isinstance(table, list) else table.keys()):
            need("tool", tool, re.compile(re.escape(('"%s"' % tool).encode())), optional=True)
    if missing:
        print("claude code contract: %d of %d names are NOT in the installed client:" % (len(missing), checked))
        for m in missing:
            print("  missing: " + m)
        return 1
    print("claude code contract: all %d names found in the installed client" % checked)
    return 0


def fail(msg):
    print("claude code live check FAILED: " + msg)
    sys.exit(1)


def live(claude_bin, pincer_bin):
    tmp = tempfile.mkdtemp(prefix="pincer-cc-")
    started = []
    try:
        return run_live(tmp, claude_bin, pincer_bin, started)
    finally:
        for s in started:
            if s.poll() is None:
                s.send_signal(signal.SIGTERM)
                s.wait(5)
        shutil.rmtree(tmp, ignore_errors=True)


def run_live(tmp, claude_bin, pincer_bin, started):
    user = os.path.join(tmp, "user")
    home = os.path.join(user, ".pincer")
    project = os.path.join(user, "project")
    api = os.path.join(tmp, "api")
    for d in (home, project, api):
        os.makedirs(d)
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write('[policy]\nautonomy = "supervised"\n')
    weird = os.path.join(tmp, "we'ird $(touch pwned) `touch pwned2` \"q\" dir")
    os.makedirs(weird)
    exe = os.path.join(weird, "pin cer$HOME")
    shutil.copy2(pincer_bin, exe)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PINCER_", "ANTHROPIC_", "CLAUDE"))}
    env.update({"HOME": user, "PINCER_HOME": home})
    r = subprocess.run([exe, "hook", "claude-code", "install", "--project", project],
                       env=env, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("install: " + r.stderr)
    print("  " + r.stdout.strip().replace("\n", "\n  "))

    steps = [
        {"name": "Bash", "input": {"command": "ls", "description": "list"}},
        {"name": "Bash", "input": {"command": "reboot", "description": "reboot"}},
        {"name": "Write", "input": {"file_path": "/etc/pincer-contract-probe", "content": "x"}},
        {"name": "Read", "input": {"file_path": os.path.join(home, "config.toml")}},
    ]
    script = os.path.join(tmp, "script.json")
    json.dump({"steps": steps}, open(script, "w"))
    server = subprocess.Popen([sys.executable, os.path.join(ROOT, "scripts/claude-code-fake-api.py"), script, api])
    started.append(server)
    deadline = time.monotonic() + 20
    while not os.path.exists(os.path.join(api, "port")):
        if time.monotonic() > deadline or server.poll() is not None:
            fail("the fake model API did not start")
        time.sleep(0.05)
    port = open(os.path.join(api, "port")).read().strip()

    cenv = {k: v for k, v in env.items() if k != "PINCER_HOME"}
    cenv.update({
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:" + port,
        "ANTHROPIC_API_KEY": "sk-pincer-contract-check",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
    })
    r = subprocess.run([claude_bin, "-p", "exercise pincer's hooks", "--output-format", "json", "--debug"],
                       cwd=project, env=cenv, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        fail("claude exited %d: %s %s" % (r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
    result = json.loads(r.stdout)
    session = result.get("session_id", "")

    reqs = []
    for name in sorted(os.listdir(api), key=lambda n: int(n[4:-5]) if n.startswith("req-") else -1):
        if name.startswith("req-"):
            reqs.append(json.load(open(os.path.join(api, name))))
    main = [q for q in reqs if q.get("tools")]
    if not main:
        fail("the client sent the model no request with tools")
    first = json.dumps(main[0])
    if "pincer governs this session" not in first or "Handoff" not in first:
        fail("SessionStart's additionalContext did not reach the model")
    results = {}
    for m in main[-1]["messages"]:
        if isinstance(m.get("content"), list):
            for c in m["content"]:
                if isinstance(c, dict) and c.get("type") == "tool_result":
                    text = c.get("content")
                    results[c["tool_use_id"]] = (json.dumps(text) if not isinstance(text, str) else text,
                                                 c.get("is_error", False))
    want = {
        "toolu_01": (None, False),
        "toolu_02": ("reboot", True),
        "toolu_03": ("outside the project", True),
        "toolu_04": ("pincer's own state", True),
    }
    for tid, (needle, is_error) in want.items():
        if tid not in results:
            fail("no tool result for %s: %s" % (tid, sorted(results)))
        text, err = results[tid]
        if err != is_error or (needle and (needle not in text or "pincer:" not in text)):
            fail("tool result %s: %r (error %s)" % (tid, text[:400], err))

    entries = [json.loads(l) for l in open(os.path.join(home, "audit/trail.jsonl"))]
    kinds = [e["kind"] for e in entries]
    for k in ("claude.session_start", "claude.prompt", "claude.pre_tool_use", "claude.post_tool_use",
              "claude.session_end", "memory.consolidate"):
        if k not in kinds:
            fail("no %s entry in the trail: %s" % (k, kinds))
    decisions = [e["data"]["decision"] for e in entries if e["kind"] == "claude.pre_tool_use"]
    if decisions != ["allow", "deny", "deny", "deny"]:
        fail("decisions in the trail: %s" % decisions)
    start = next(e for e in entries if e["kind"] == "claude.session_start")
    if start["data"]["session"] != session or start["data"]["workspace"] != os.path.realpath(project):
        fail("session start entry: %s" % start["data"])
    for e in entries:
        if e["kind"].startswith("claude.") and e["actor"] != "agent:claude-code":
            fail("entry %d has actor %s" % (e["seq"], e["actor"]))
    v = subprocess.run([pincer_bin, "--home", home, "audit", "verify"], capture_output=True, text=True, env=env)
    if v.returncode != 0:
        fail("the trail does not verify: " + v.stdout + v.stderr)
    pages = os.listdir(os.path.join(home, "memory/pages"))
    if len(pages) != 1:
        fail("SessionEnd made %d memory pages" % len(pages))

    log = open(os.path.join(user, ".claude/debug/latest"), errors="replace").read()
    parsed = log.count("Successfully parsed and validated hook JSON output")
    errors = [l for l in log.splitlines() if "status code" in l and "pin cer" in l]
    if errors:
        fail("hook errors in the client's log: %s" % errors[:3])
    if parsed < 5:
        fail("the client validated only %d pincer answers" % parsed)
    for p in ("pwned", "pwned2"):
        for d in (tmp, user, project, weird):
            if os.path.exists(os.path.join(d, p)):
                fail("a shell ran the install path: %s" % os.path.join(d, p))
    print("claude code live check: 5 hook points fired; %d answers validated by the client; "
          "decisions %s; %d trail entries verify; 1 memory page" % (parsed, decisions, len(entries)))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "names":
        sys.exit(names(sys.argv[2]))
    if len(sys.argv) == 4 and sys.argv[1] == "live":
        sys.exit(live(sys.argv[2], sys.argv[3]))
    print(__doc__)
    sys.exit(2)
