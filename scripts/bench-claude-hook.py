#!/usr/bin/env python3
"""Makes a realistic pincer home for scripts/bench-claude-hook.sh: an audit
trail of N valid entries (hash-chained exactly as pincer writes them:
canonical JSON, keys sorted, no whitespace, SHA-256; with its anchor), P
memory pages (a tenth of them pinned) and a config, plus the hook inputs.

Usage: bench-claude-hook.py HOME PROJECT N PAGES OUT_DIR
Writing the trail directly takes seconds where N appends through pincer (an
fsync each) would take minutes; `pincer audit verify` checks the result.
"""
import hashlib
import json
import os
import sys

home, project, n, pages, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
GENESIS = "0" * 64


def canonical(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


os.makedirs(os.path.join(home, "audit"), exist_ok=True)
os.makedirs(os.path.join(home, "memory", "pages"), exist_ok=True)
os.makedirs(project, exist_ok=True)
with open(os.path.join(home, "config.toml"), "w") as f:
    f.write('[policy]\nautonomy = "supervised"\n')

commands = ["ls -la", "git status", "cargo test -p core", "rm -rf target", "grep -rn TODO src", "curl -s http://x.invalid"]
prev = GENESIS
with open(os.path.join(home, "audit", "trail.jsonl"), "w") as f:
    for seq in range(1, n + 1):
        c = commands[seq % len(commands)]
        if seq % 3 == 0:
            kind, actor = "claude.post_tool_use", "agent:claude-code"
            data = {"session": "bench-%d" % (seq // 500), "tool_use_id": "toolu_%d" % seq, "tool": "Bash",
                    "status": "ok", "response_bytes": 120 + seq % 900,
                    "response_sha256": hashlib.sha256(str(seq).encode()).hexdigest()}
        else:
            kind, actor = "claude.pre_tool_use", "agent:claude-code"
            data = {"session": "bench-%d" % (seq // 500), "tool_use_id": "toolu_%d" % seq, "tool": "Bash",
                    "arguments": {"command": c, "description": "step %d" % seq}, "risk": "low",
                    "autonomy": "supervised", "decision": "allow", "by": "policy",
                    "reason": "`%s`: only reads (low); autonomy supervised: low risk is allowed" % c}
        ms = seq % 1000
        entry = {"actor": actor, "data": data, "kind": kind, "prev": prev, "seq": seq,
                 "ts": "2026-11-%02dT%02d:%02d:%02d.%03dZ" % (1 + seq % 28, seq % 24, seq % 60, seq % 60, ms)}
        h = hashlib.sha256(canonical(entry).encode()).hexdigest()
        entry["hash"] = h
        f.write(canonical(entry) + "\n")
        prev = h
with open(os.path.join(home, "audit", "anchor.json"), "w") as f:
    f.write(canonical({"count": n, "top": prev}))

for i in range(pages):
    pid = "bench-page-%04d" % i
    with open(os.path.join(home, "memory", "pages", pid + ".md"), "w") as f:
        f.write("---\nid: %s\ntitle: Bench page %d\ntags: [bench]\nsource: bench\npinned: %s\n"
                "created: 2026-11-30T10:00:00.000Z\n---\n%s\n" % (
                    pid, i, "true" if i % 10 == 0 else "false", ("Notes about module %d. " % i) * 20))

base = {"session_id": "9fb1f07b-3570-4412-a4c6-a6dc3c89d8f6", "transcript_path": "/tmp/t.jsonl", "cwd": project,
        "permission_mode": "default", "tool_use_id": "toolu_bench"}
inputs = {
    "pre-bash-ls": dict(base, hook_event_name="PreToolUse", tool_name="Bash", tool_input={"command": "ls -la"}),
    "pre-bash-rm": dict(base, hook_event_name="PreToolUse", tool_name="Bash", tool_input={"command": "rm -rf target"}),
    "pre-write": dict(base, hook_event_name="PreToolUse", tool_name="Write",
                      tool_input={"file_path": os.path.join(project, "src/lib.rs"), "content": "x" * 2000}),
    "session-start": dict(base, hook_event_name="SessionStart", source="startup"),
}
for name, v in inputs.items():
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(v, f)
