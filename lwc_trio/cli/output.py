"""How CLI commands print: JSON for machines, a short text for people.

Results go to stdout (JSON with `--json` or when stdout is not a terminal); errors and
notices go to stderr (a sentence and the next step on a terminal, the `{"error"}` object
with `--json` or when stderr is not a terminal).

Text for a person passes through `for_terminal` here, and nowhere else: a store, a file name or
a host's config file can carry terminal escapes (a window title, a clipboard write, a cleared
screen), so their control characters are shown as visible escapes (`\x1b`) on a terminal,
while JSON output keeps every character as it is (SPEC §7).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any

from lwc_trio.exceptions import CliError


def wants_json(explicit: bool) -> bool:
    """JSON when asked for, and whenever stdout is not a terminal."""
    return explicit or not sys.stdout.isatty()


def speaks(explicit_json: bool = False) -> bool:
    """True when stderr is a person's terminal (and `--json` was not given)."""
    return not explicit_json and sys.stderr.isatty()


def dumps(obj: Any) -> str:
    """Compact, UTF-8-preserving JSON (the same form the MCP tool returns)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


# C0 and C1 controls, DEL, and the bidirectional embeddings, overrides and isolates that can
# make a line read differently from what it holds ("Trojan Source"). One character each: linear.
_BIDI = "\u202a-\u202e\u2066-\u2069"
_CONTROLS = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")
# In text that is printed as a body, line feeds and tabs are its layout; a carriage return only
# before a line feed (CRLF files), never one that sends the cursor back over the line.
_CONTROLS_IN_TEXT = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{_BIDI}]|\r(?!\n)")
TEXT_KEYS = frozenset({"body", "content", "summary", "message"})
"""Result fields printed as multi-line text (their line feeds and tabs are kept)."""


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def for_terminal(text: str, *, multiline: bool = False) -> str:
    """`text` with its control characters shown as escapes (`\\x1b`), for a terminal.

    `multiline` keeps line feeds, tabs and the carriage return of a CRLF."""
    return (_CONTROLS_IN_TEXT if multiline else _CONTROLS).sub(_visible, text)


def terminal_safe(value: Any, *, multiline: bool = False) -> Any:
    """A copy of a result (dicts, lists, strings...) whose every string, keys included, went
    through `for_terminal`; the values of `TEXT_KEYS` keep their layout."""
    if isinstance(value, str):
        return for_terminal(value, multiline=multiline)
    if isinstance(value, dict):
        return {
            for_terminal(key) if isinstance(key, str) else key: terminal_safe(
                item, multiline=key in TEXT_KEYS
            )
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return type(value)(terminal_safe(item, multiline=multiline) for item in value)
    return value


def emit(obj: Any, *, as_json: bool, human: Callable[[Any], str] | None = None) -> None:
    """Print a command's result: `obj` as JSON, or `human(obj)` on a terminal (made from a
    `terminal_safe` copy, so no text of a store or a file reaches the terminal raw)."""
    if as_json or human is None:
        sys.stdout.write(dumps(obj) + "\n")
    else:
        sys.stdout.write(human(terminal_safe(obj)).rstrip("\n") + "\n")
    sys.stdout.flush()


# What to do next, for errors whose message does not already say it.
NEXT_STEPS = {
    "store_not_found": "Run `lwc init` in the project's root directory first.",
    "store_busy": "Wait for the other lwc command to finish, then run this one again.",
    "store_corrupt": "Run `lwc repair`; if it fails too, restore the store from a backup.",
    "page_not_found": "See the stored Pages with `lwc page list`.",
    "source_not_found": "See the stored Sources with `lwc source list`.",
    "work_not_found": "See recent work with `lwc work list`.",
    "invalid_usage": "Run the command with --help to see its arguments and examples.",
    "interrupted": "",
}


def human_error(code: str, message: str) -> str:
    """An error for a person: the problem as a sentence, then the next step on its own line.

    A message that carries its own advice after "; " (`...; run \\`lwc init\\` first`) has it
    moved to the second line; otherwise the next step comes from `NEXT_STEPS`.
    """
    problem, _, advice = for_terminal(message, multiline=True).partition("; ")
    step = advice[:1].upper() + advice[1:] if advice else NEXT_STEPS.get(code, "")
    if step and not step.endswith((".", "?", "!", ")")):
        step += "."
    if not problem.startswith("lwc"):  # `lwc page: ...` keeps the command's own spelling
        problem = problem[:1].upper() + problem[1:]
    if not problem.endswith((".", "?", "!", ")", "`")):
        problem += "."
    label = "Interrupted:" if code == "interrupted" else "Error:"
    text = f"{style(label, 'red', 'bold', stream=sys.stderr)} {problem}"
    return f"{text}\n{step}" if step else text


def print_error(code: str, message: str, *, explicit_json: bool = False) -> None:
    """An error on stderr: a sentence and the next step for a person at a terminal,
    else one JSON line `{"error": {"code", "message"}}`."""
    if speaks(explicit_json):
        sys.stderr.write(human_error(code, message) + "\n")
    else:
        sys.stderr.write(dumps({"error": {"code": code, "message": message}}) + "\n")
    sys.stderr.flush()


def notice(text: str) -> None:
    """A line for the person waiting at the terminal (nothing when stderr is not one)."""
    if sys.stderr.isatty():
        sys.stderr.write(for_terminal(text, multiline=True) + "\n")
        sys.stderr.flush()


def fail(code: str, message: str, *, exit_code: int = 1) -> CliError:
    """Build the error a command raises; `main` prints it and exits."""
    return CliError(code, message, exit_code=exit_code)


SUGGEST_CUTOFF = 70.0
"""The lowest rapidfuzz similarity (0–100) a name must reach to be suggested."""


def suggest(word: str, names: Iterable[str], *, limit: int = 3) -> list[str]:
    """The known `names` closest to a mistyped `word`, best first (none when nothing is close)."""
    from rapidfuzz import fuzz, process  # deferred for start-up speed: only on a mistake

    choices = sorted(set(names))
    found = process.extract(
        word, choices, scorer=fuzz.WRatio, limit=limit, score_cutoff=SUGGEST_CUTOFF
    )
    return [name for name, _score, _index in found]


def did_you_mean(word: str, names: Iterable[str]) -> str:
    """ "; did you mean 'x'?" (or " or 'y'"), or "" when nothing is close to `word`."""
    close = suggest(word, names)
    if not close:
        return ""
    return "; did you mean " + " or ".join(repr(name) for name in close) + "?"


_STYLES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


def style(text: str, *names: str, stream: Any = None) -> str:
    """`text` in ANSI colour on a terminal (never when piped, or with NO_COLOR set)."""
    target = sys.stdout if stream is None else stream
    if not names or os.environ.get("NO_COLOR") or not target.isatty():
        return text
    codes = ";".join(_STYLES[name] for name in names)
    return f"\x1b[{codes}m{text}\x1b[0m"
