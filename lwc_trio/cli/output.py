"""How CLI commands print: JSON for machines, a short text for people."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

from lwc_trio.exceptions import CliError


def wants_json(explicit: bool) -> bool:
    """JSON when asked for, and whenever stdout is not a terminal."""
    return explicit or not sys.stdout.isatty()


def dumps(obj: Any) -> str:
    """Compact, UTF-8-preserving JSON (the same form the MCP tool returns)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def emit(obj: Any, *, as_json: bool, human: Callable[[Any], str] | None = None) -> None:
    """Print a command's result: `obj` as JSON, or `human(obj)` on a terminal."""
    if as_json or human is None:
        sys.stdout.write(dumps(obj) + "\n")
    else:
        sys.stdout.write(human(obj).rstrip("\n") + "\n")
    sys.stdout.flush()


def print_error(code: str, message: str) -> None:
    """One JSON line on stderr: `{"error": {"code", "message"}}`."""
    sys.stderr.write(dumps({"error": {"code": code, "message": message}}) + "\n")
    sys.stderr.flush()


def fail(code: str, message: str, *, exit_code: int = 1) -> CliError:
    """Build the error a command raises; `main` prints it and exits."""
    return CliError(code, message, exit_code=exit_code)


_STYLES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


def style(text: str, *names: str) -> str:
    """`text` in ANSI colour on a terminal (never when piped, or with NO_COLOR set)."""
    if not names or os.environ.get("NO_COLOR") or not sys.stdout.isatty():
        return text
    codes = ";".join(_STYLES[name] for name in names)
    return f"\x1b[{codes}m{text}\x1b[0m"
