#!/usr/bin/env bash
# Set up lwc_trio in .venv and run the demo: a real Wiki served to a real MCP client.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[demo]'
exec .venv/bin/python scripts/demo.py "$@"
