#!/usr/bin/env bash
# The MCP Inspector CLI (@modelcontextprotocol/inspector), pinned, on a private Node 22
# (issue 5, docs/http.md; tests/test_inspector.py drives it).
#
# Installs Node 22 (the npm package node-<os>-<arch>@22; Inspector 2.x needs Node >= 22.19)
# and the Inspector into .cache/inspector (git-ignored), from the npm registry only.
# Installing is idempotent: when the pinned versions are already there it does nothing.
#
# Usage: scripts/inspector.sh install        install if needed (quiet when already installed)
#        scripts/inspector.sh cli ARGS...    install if needed, then run `mcp-inspector --cli ARGS...`
#        scripts/inspector.sh versions       print the pinned versions
#
# Example: scripts/inspector.sh cli --method tools/list --format json \
#            python3 -m lwc_trio serve --mcp --path "$PWD"
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/node_pkg.sh
source "$ROOT/scripts/node_pkg.sh"
CACHE="$ROOT/.cache/inspector"
NODE_MAJOR=22
NODE_VERSION=22.23.5
INSPECTOR_VERSION=2.12.0

node_pkg=$(node_pkg_for inspector)

NODE="$CACHE/node_modules/.bin/node"
PKG="$CACHE/node_modules/@modelcontextprotocol/inspector"
LAUNCHER="$PKG/clients/launcher/build/index.js"

has_version() { # FILE VERSION: does the package.json FILE declare exactly VERSION?
  [[ -f "$1" ]] && grep -q "\"version\": \"$2\"" "$1"
}

install() {
  if [[ -x "$NODE" && -f "$LAUNCHER" ]] \
    && has_version "$PKG/package.json" "$INSPECTOR_VERSION" \
    && has_version "$CACHE/node_modules/$node_pkg/package.json" "$NODE_VERSION"; then
    return 0
  fi
  command -v npm >/dev/null || { echo "inspector: npm is not on PATH" >&2; exit 1; }
  mkdir -p "$CACHE"
  [[ -f "$CACHE/package.json" ]] || echo '{"private": true}' > "$CACHE/package.json"
  (cd "$CACHE" && npm install --no-audit --no-fund --loglevel=error \
    "$node_pkg@$NODE_VERSION" "@modelcontextprotocol/inspector@$INSPECTOR_VERSION") >&2
  [[ "$("$NODE" --version)" == v$NODE_MAJOR.* ]] || { echo "inspector: need Node $NODE_MAJOR" >&2; exit 1; }
  [[ -f "$LAUNCHER" ]] || { echo "inspector: $LAUNCHER is missing after install" >&2; exit 1; }
}

case "${1:-}" in
  install) install ;;
  cli) shift; install; exec "$NODE" "$LAUNCHER" --cli "$@" ;;
  versions) echo "node $NODE_VERSION"; echo "@modelcontextprotocol/inspector $INSPECTOR_VERSION" ;;
  *) echo "usage: scripts/inspector.sh install | cli ARGS... | versions" >&2; exit 2 ;;
esac
