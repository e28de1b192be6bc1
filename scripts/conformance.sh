#!/usr/bin/env bash
# Run the official MCP conformance suite's server scenarios that apply to a
# tools-only server against `lwc serve --mcp --transport http` (issue 5, docs/http.md).
#
# Installs Node 22 (the npm package node-<os>-<arch>@22; the suite needs Node >= 22)
# and @modelcontextprotocol/conformance into .cache/conformance (git-ignored),
# starts the server on a free loopback port in a throw-away workspace, runs
# each scenario, stops the server and exits non-zero if anything failed.
#
# Usage: scripts/conformance.sh [PYTHON]   (default: $PYTHON, else python3)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/node_pkg.sh
source "$ROOT/scripts/node_pkg.sh"
PYTHON=${1:-${PYTHON:-python3}}
CACHE="$ROOT/.cache/conformance"
NODE_MAJOR=22
NODE_VERSION=22.23.5
SUITE_VERSION=0.1.16
SCENARIOS=(server-initialize ping tools-list dns-rebinding-protection)

node_pkg=$(node_pkg_for conformance)

mkdir -p "$CACHE"
if [[ ! -x "$CACHE/node_modules/.bin/node" || ! -f "$CACHE/node_modules/@modelcontextprotocol/conformance/package.json" ]] \
  || ! grep -q "\"version\": \"$SUITE_VERSION\"" "$CACHE/node_modules/@modelcontextprotocol/conformance/package.json"; then
  [[ -f "$CACHE/package.json" ]] || echo '{"private": true}' > "$CACHE/package.json"
  (cd "$CACHE" && npm install --no-audit --no-fund --loglevel=error \
    "$node_pkg@$NODE_VERSION" "@modelcontextprotocol/conformance@$SUITE_VERSION")
fi
NODE="$CACHE/node_modules/.bin/node"
[[ "$("$NODE" --version)" == v$NODE_MAJOR.* ]] || { echo "conformance: need Node $NODE_MAJOR" >&2; exit 1; }
SUITE="$CACHE/node_modules/@modelcontextprotocol/conformance/dist/index.js"

work=$(mktemp -d "${TMPDIR:-/tmp}/lwc-conformance.XXXXXX")
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/ws" "$work/home"

HOME="$work/home" PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" \
  "$PYTHON" -m lwc_trio serve --mcp --transport http --http-listen 127.0.0.1:0 \
  --path "$work/ws" </dev/null 2>"$work/stderr" &
server_pid=$!

url=""
for _ in $(seq 100); do
  url=$(sed -n 's/^lwc: listening on //p' "$work/stderr")
  [[ -n "$url" ]] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if [[ -z "$url" ]]; then
  echo "conformance: the server did not start:" >&2
  cat "$work/stderr" >&2
  exit 1
fi

passed=0
failed=0
for scenario in "${SCENARIOS[@]}"; do
  if "$NODE" "$SUITE" server --url "$url" --scenario "$scenario"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
done

kill -TERM "$server_pid"
status=0
wait "$server_pid" || status=$?
server_pid=""
if [[ $status -ne 0 ]]; then
  echo "conformance: the server exited with status $status" >&2
  failed=$((failed + 1))
fi
echo "conformance: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
