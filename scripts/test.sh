#!/usr/bin/env bash
# Set up everything the test-suite needs on a fresh machine, then run all checks.
#   ./scripts/test.sh            lint, types and the whole pytest suite
#   ./scripts/test.sh -k http    extra arguments go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv
CODEGRAPH_DIR=.cache/codegraph
CODEGRAPH_VERSION=1.6.1

# The real CodeGraph runtime for the integration tests (npm registry only), installed while
# pip installs the Python side.
npm_pid=""
pkg="$CODEGRAPH_DIR/node_modules/@colbymchenry/codegraph/package.json"
if ! grep -q "\"version\": \"$CODEGRAPH_VERSION\"" "$pkg" 2>/dev/null; then
    npm install --silent --no-audit --no-fund --prefix "$CODEGRAPH_DIR" \
        "@colbymchenry/codegraph@$CODEGRAPH_VERSION" >/dev/null &
    npm_pid=$!
    trap 'if [ -n "$npm_pid" ]; then kill "$npm_pid" 2>/dev/null || true; fi' EXIT
fi

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
# A venv that already installed this exact pyproject.toml skips pip (a few seconds a run).
stamp="$VENV/.installed-pyproject.toml"
if ! cmp -s pyproject.toml "$stamp"; then
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet -e '.[test]'
    cp pyproject.toml "$stamp"
fi
if [ -n "$npm_pid" ]; then
    wait "$npm_pid"  # its exit status stops the script (set -e) if npm failed
    npm_pid=""
fi
os=$(uname -s | tr '[:upper:]' '[:lower:]')
case "$(uname -m)" in x86_64|amd64) arch=x64 ;; aarch64|arm64) arch=arm64 ;; *) arch=$(uname -m) ;; esac
LWC_TEST_CODEGRAPH_BINARY="$PWD/$CODEGRAPH_DIR/node_modules/@colbymchenry/codegraph-$os-$arch/bin/codegraph"
export LWC_TEST_CODEGRAPH_BINARY

"$VENV/bin/ruff" check lwc_trio benchmarks tests scripts
"$VENV/bin/ruff" format --check lwc_trio benchmarks tests scripts
# [tool.mypy] files: lwc_trio, benchmarks and tests, --strict.
"$VENV/bin/mypy"
# The official MCP conformance suite against the HTTP transport (docs/http.md).
hosts_pid=""
if [ "$#" -eq 0 ]; then
    bash scripts/conformance.sh "$VENV/bin/python"
    # The real Claude Code, Codex CLI and Gemini CLI against `lwc agent install` (one to
    # two minutes once its cache outside the checkout is warm; docs/agents.md). They run
    # beside the parallel pytest pass below, whose workers mostly wait on child processes
    # (a clean-clone run used about 1.2 of the 2 cores), and report after it.
    hosts_log=$(mktemp)
    PYTHON="$VENV/bin/python" bash scripts/test_hosts.sh >"$hosts_log" 2>&1 &
    hosts_pid=$!
    trap 'if [ -n "$hosts_pid" ]; then kill "$hosts_pid" 2>/dev/null || true; fi; rm -f "$hosts_log"' EXIT
fi
# Coverage of lwc_trio, report only. The figure covers the in-process tests only: the
# black-box tests' `lwc` subprocesses are not measured (pytest-cov 7 no longer starts
# coverage in subprocesses, and those tests' scratch directories must stay free of
# coverage data files), so code reached only through a real process counts as missed.
# Two passes over the one suite. First every test not marked `serial`, on three pytest-xdist
# workers: most tests wait on child processes, so on two cores a third worker still pays
# (LWC_TEST_WORKERS=N changes the count, 0 runs them in this process; `--dist loadgroup`
# keeps each `xdist_group`, one shared install, on one worker). Then the `serial` tests, whose
# 1-2 s deadlines must not compete with other workers, alone. Exit status 5 (nothing selected,
# e.g. for a path argument that holds no serial test) counts as success in one pass only.
# Both passes select with -m themselves, after any arguments given here.
pytest=("$VENV/bin/python" -m pytest --cov)
set +e
"${pytest[@]}" --cov-report= -n "${LWC_TEST_WORKERS:-3}" --dist loadgroup "$@" -m "not serial"
first=$?
if [ -n "$hosts_pid" ]; then
    # The host tests end before the serial pass starts: its deadlines run on a quiet machine.
    wait "$hosts_pid"
    hosts=$?
    hosts_pid=""
    echo "--- scripts/test_hosts.sh (ran beside the parallel pass)"
    cat "$hosts_log"
    if [ "$hosts" -ne 0 ]; then
        exit "$hosts"
    fi
fi
if [ "$first" -ne 0 ] && [ "$first" -ne 5 ]; then
    exit "$first"
fi
"${pytest[@]}" --cov-append --cov-report=term "$@" -m serial
second=$?
set -e
if [ "$second" -eq 5 ]; then
    exit "$first"
fi
if [ "$second" -eq 0 ] && [ "$first" -eq 5 ]; then
    exit 0
fi
exit "$second"
