#!/usr/bin/env bash
# The real agent hosts against `lwc agent install` (issue 15, docs/agents.md "Tested with").
#
# Installs pinned releases of Claude Code, Codex CLI and Gemini CLI from the npm registry into
# a cache outside the checkout (about 750 MB, so a fresh clone on the same machine, as CI's,
# reuses it instead of downloading again), plus Node 22 from the npm package
# node-<os>-<arch>@22 when the Node on PATH is older than the hosts' `engines` ask for, then
# runs tests/hosts: per host and scope, install, clear the host's gate, the host's own
# `mcp list`, and a headless run against a scripted fake model on 127.0.0.1 that makes the
# host call lwc_explore — with a one-sentence Page, and with the long Pages of tests/hosts/wiki/
# (does each host hand its model the answer whole?). Scratch HOME directories only; no network
# but npm and 127.0.0.1.
#
# Usage: scripts/test_hosts.sh [PYTEST ARGS...]   (e.g. -k gemini; -k long for the long Pages)
#   PYTHON            the interpreter with lwc installed (default: .venv/bin/python)
#   LWC_HOSTS_CACHE   where the host CLIs go (default: ${XDG_CACHE_HOME:-~/.cache}/lwc_trio/hosts)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/node_pkg.sh
source "$ROOT/scripts/node_pkg.sh"
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
CACHE=${LWC_HOSTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lwc_trio/hosts}
CLAUDE_VERSION=2.1.197
CODEX_VERSION=0.171.0
GEMINI_VERSION=0.61.0
NODE_MIN_MAJOR=20   # @google/gemini-cli engines: node >=20 (the others ask less)
NODE_VERSION=22.23.5

packages=(
  "@anthropic-ai/claude-code@$CLAUDE_VERSION"
  "@openai/codex@$CODEX_VERSION"
  "@google/gemini-cli@$GEMINI_VERSION"
)

installed() {  # installed NAME VERSION: is that exact version in the cache?
  grep -q "\"version\": \"$2\"" "$CACHE/node_modules/$1/package.json" 2>/dev/null
}

node_major() { "$1" --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/'; }

mkdir -p "$CACHE"
[[ -f "$CACHE/package.json" ]] || echo '{"private": true}' > "$CACHE/package.json"

want=()
for spec in "${packages[@]}"; do
  name=${spec%@*}
  installed "$name" "${spec##*@}" || want+=("$spec")
done

node=$(command -v node || true)
if [[ -z "$node" || "$(node_major "$node")" -lt $NODE_MIN_MAJOR ]]; then
  node_pkg=$(node_pkg_for test_hosts)
  installed "$node_pkg" "$NODE_VERSION" || want+=("$node_pkg@$NODE_VERSION")
  node="$CACHE/node_modules/.bin/node"
fi

if [[ ${#want[@]} -gt 0 ]]; then
  (cd "$CACHE" && npm install --no-audit --no-fund --loglevel=error "${want[@]}")
fi
[[ "$(node_major "$node")" -ge $NODE_MIN_MAJOR ]] || {
  echo "test_hosts: need Node >= $NODE_MIN_MAJOR, have $("$node" --version)" >&2; exit 1;
}

export LWC_TEST_HOSTS_BIN="$CACHE/node_modules/.bin"
# The CodeGraph runtime scripts/test.sh installs (and exports) for the code-plane tests, when
# this script is run on its own after it.
if [[ -z "${LWC_TEST_CODEGRAPH_BINARY:-}" ]]; then
  cg_os=$(uname -s | tr '[:upper:]' '[:lower:]')
  case "$(uname -m)" in x86_64|amd64) cg_arch=x64 ;; aarch64|arm64) cg_arch=arm64 ;; *) cg_arch=$(uname -m) ;; esac
  cg="$ROOT/.cache/codegraph/node_modules/@colbymchenry/codegraph-$cg_os-$cg_arch/bin/codegraph"
  [[ -x "$cg" ]] && export LWC_TEST_CODEGRAPH_BINARY="$cg"
fi
LWC_TEST_NODE_BIN=$(dirname "$node")
export LWC_TEST_NODE_BIN
cd "$ROOT"
exec "$PYTHON" -m pytest -p no:cacheprovider -q tests/hosts "$@"
