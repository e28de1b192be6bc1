"""Plan an install, an uninstall or a status check over a config file's text (pure).

Every plan is checked before it is returned: the new text is parsed again and its value must
equal the old value with exactly our entry added, replaced or removed. So no plan can touch
another server or setting, whatever the file looked like.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs

from lwc_trio.agents import jsonc, tomlconf
from lwc_trio.agents.hosts import ENTRY_NAME, Host, entry_matches
from lwc_trio.exceptions import AgentError, ConfigSyntaxError, DuplicateKeyError

__all__ = [
    "TRANSPORT_KEYS",
    "Inspection",
    "Plan",
    "codegraph_servers",
    "inspect",
    "merged_entry",
    "plan_install",
    "plan_uninstall",
]

CODEGRAPH_WARNING = (
    "{file} already registers a CodeGraph server ({names}); lwc already includes CodeGraph "
    "(lwc_explore mode code/all), so that entry was left alone and no second one was added"
)


@attrs.frozen
class Plan:
    """What an install or uninstall would do to one file."""

    status: str  # added | replaced | unchanged | removed | absent
    text: str | None  # the new file text when the file changes, else None
    existing: Any  # the `lwc` entry found before, or None
    codegraph: tuple[str, ...]  # names of CodeGraph servers already registered
    entry: Any = None  # the `lwc` entry the file holds after an install


@attrs.frozen
class Inspection:
    """What `lwc agent status` reports for one file that exists."""

    state: str  # registered | outdated | not_registered
    existing: Any
    codegraph: tuple[str, ...]


class _Format(Protocol):
    def load(self, text: str) -> tuple[Any, Any]: ...
    def servers(self, value: Any) -> dict[str, Any] | None: ...
    def put(self, parsed: Any, text: str, entry: dict[str, Any], *, replace: bool) -> str: ...
    def drop(self, parsed: Any, text: str) -> str: ...


@attrs.frozen
class _Json:
    host: Host

    def load(self, text: str) -> tuple[Any, Any]:
        assert self.host.dialect is not None
        doc = jsonc.parse(text, self.host.dialect)
        return doc, doc.value

    def servers(self, value: Any) -> dict[str, Any] | None:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise ConfigSyntaxError("the top level must be a JSON object")
        if self.host.container not in value:
            return None
        servers = value[self.host.container]
        if not isinstance(servers, dict):
            raise ConfigSyntaxError(f"{json.dumps(self.host.container)} must be an object")
        return servers

    def put(self, parsed: Any, text: str, entry: dict[str, Any], *, replace: bool) -> str:
        return jsonc.set_member(parsed, self.host.container, ENTRY_NAME, entry)

    def drop(self, parsed: Any, text: str) -> str:
        return jsonc.remove_member(parsed, self.host.container, ENTRY_NAME)


@attrs.frozen
class _Toml:
    host: Host

    def load(self, text: str) -> tuple[Any, Any]:
        value = tomlconf.parse(text)
        return value, value

    def servers(self, value: Any) -> dict[str, Any] | None:
        servers = value.get(self.host.container)
        if servers is not None and not isinstance(servers, dict):
            raise ConfigSyntaxError(f"{self.host.container} must be a table")
        return servers

    def put(self, parsed: Any, text: str, entry: dict[str, Any], *, replace: bool) -> str:
        return tomlconf.set_table(text, (self.host.container, ENTRY_NAME), entry, replace=replace)

    def drop(self, parsed: Any, text: str) -> str:
        return tomlconf.remove_table(text, (self.host.container, ENTRY_NAME))


def _format(host: Host) -> _Format:
    return _Toml(host) if host.fmt == "toml" else _Json(host)


def _invalid(label: str, problem: str) -> AgentError:
    return AgentError(
        "agent_config_invalid", f"{label} is not a valid config file: {problem}; left unchanged"
    )


def _load(host: Host, text: str, label: str) -> tuple[_Format, Any, Any, dict[str, Any] | None]:
    fmt = _format(host)
    try:
        parsed, value = fmt.load(text)
        servers = fmt.servers(value)
    except ConfigSyntaxError as exc:
        raise _invalid(label, exc.message) from None
    return fmt, parsed, value, servers


def _mentions_codegraph(value: Any) -> bool:
    if isinstance(value, str):
        return "codegraph" in value.lower()
    if isinstance(value, list):
        return any(_mentions_codegraph(v) for v in value)
    return False


def codegraph_servers(servers: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Names of entries that run CodeGraph (by name, command or arguments), ours excluded."""
    if not servers:
        return ()
    found = []
    for name, entry in servers.items():
        if name == ENTRY_NAME:
            continue
        fields = entry if isinstance(entry, dict) else {}
        if "codegraph" in name.lower() or any(
            _mentions_codegraph(fields.get(k)) for k in ("command", "args", "url")
        ):
            found.append(name)
    return tuple(found)


def _comparable(host: Host, value: Any) -> Any:
    # TOML cannot keep an empty implicit table: removing the last `[mcp_servers.X]` table
    # removes `mcp_servers` too, which is the same configuration.
    if host.fmt == "toml" and isinstance(value, dict) and value.get(host.container) == {}:
        return {k: v for k, v in value.items() if k != host.container}
    return value


def _verified(host: Host, new_text: str, expected: Any, label: str, todo: str) -> str:
    """`new_text`, after checking it parses to `expected` (else nothing may be written)."""
    fmt = _format(host)
    try:
        _, value = fmt.load(new_text)
    except ConfigSyntaxError:
        value = None
    if _comparable(host, value) != _comparable(host, expected):
        raise AgentError(
            "agent_config_unsupported",
            f"{label} is written in a form lwc cannot edit in place without touching other "
            f"settings; left unchanged — {todo}",
        )
    return new_text


def _edited(
    host: Host,
    edit: Callable[[], str],
    expected: Any,
    *,
    label: str,
    verb: str,
    refused: str,
    todo: str,
) -> str:
    """The text `edit` makes, verified to parse to `expected`.

    Raises `AgentError`: `agent_config_invalid` for a repeated key, `agent_config_unsupported`
    (saying `refused`) when the file cannot be edited in place, and `_verified`'s error.
    """
    try:
        new = edit()
    except DuplicateKeyError as exc:
        raise _invalid(label, exc.message) from None
    except ConfigSyntaxError as exc:
        raise AgentError(
            "agent_config_unsupported",
            f"{label}: {exc.message}, so lwc cannot {verb} it in place; left unchanged — {refused}",
        ) from None
    return _verified(host, new, expected, label, todo)


def _snippet(host: Host, entry: dict[str, Any]) -> str:
    if host.fmt == "toml":
        return tomlconf.dumps_table((host.container, ENTRY_NAME), entry).strip()
    return json.dumps({ENTRY_NAME: entry}, ensure_ascii=False)


def _expected(host: Host, value: Any, entry: dict[str, Any] | None) -> Any:
    expected = copy.deepcopy(value) if value is not None else {}
    servers = expected.setdefault(host.container, {})
    if entry is None:
        del servers[ENTRY_NAME]
    else:
        servers[ENTRY_NAME] = entry
    return expected


TRANSPORT_KEYS = frozenset(
    {"type", "command", "args", "url", "httpUrl", "serverUrl", "headers", "transport",
     "http_headers", "env_http_headers", "bearer_token_env_var"}
)  # fmt: skip
"""Keys that say how a host reaches a server: lwc owns them in its entry. Every other key of
an existing `lwc` entry (`env`, `cwd`, timeouts, `disabled`, `trust`, tool filters...) is the
user's, and an install keeps it, also with `--force`."""


def merged_entry(existing: Any, entry: dict[str, Any]) -> dict[str, Any]:
    """`entry` plus the keys of `existing` lwc does not own, in `existing`'s key order."""
    if not isinstance(existing, dict):
        return entry
    merged: dict[str, Any] = {}
    for key, value in existing.items():
        if key in entry:
            merged[key] = entry[key]
        elif key not in TRANSPORT_KEYS:
            merged[key] = value
    for key, value in entry.items():
        merged.setdefault(key, value)
    return merged


def plan_install(
    host: Host, text: str | None, entry: dict[str, Any], *, force: bool, label: str
) -> Plan:
    """Plan writing `entry` as the `lwc` server into `text` (None: the file does not exist).

    Unchanged when an equivalent entry is there (see `entry_matches`); a replaced entry keeps
    the keys lwc does not own (`merged_entry`). Raises `AgentError`:
    `agent_config_invalid` for a malformed file, `agent_entry_conflict` for a different `lwc`
    entry without `force`, `agent_config_unsupported` when the edit cannot be made in place.
    """
    if text is None:
        new = (
            tomlconf.dumps_table((host.container, ENTRY_NAME), entry)
            if host.fmt == "toml"
            else jsonc.fresh(host.container, ENTRY_NAME, entry)
        )
        return Plan("added", new, None, (), entry)
    fmt, parsed, value, servers = _load(host, text, label)
    codegraph = codegraph_servers(servers)
    existing = servers.get(ENTRY_NAME) if servers is not None else None
    present = servers is not None and ENTRY_NAME in servers
    if present and entry_matches(host, existing, entry):
        return Plan("unchanged", None, existing, codegraph, existing)
    if present and not force:
        raise AgentError(
            "agent_entry_conflict",
            f"{label} already has a different `{ENTRY_NAME}` server entry "
            f"({json.dumps(existing, ensure_ascii=False)}); rerun with --force to replace its "
            "command (its other keys, such as `env`, are kept, and the old file is backed up)",
        )
    merged = merged_entry(existing, entry) if present else entry

    def put() -> str:
        try:
            return fmt.put(parsed, text, merged, replace=present)
        except TypeError as exc:  # a kept value TOML cannot spell here (a date)
            problem = f"the existing entry holds a value lwc cannot write ({exc})"
            raise ConfigSyntaxError(problem) from None

    new = _edited(
        host,
        put,
        _expected(host, value, merged),
        label=label,
        verb="replace",
        refused=f"replace it by hand with: {_snippet(host, entry)}",
        todo=f"add this entry under `{host.container}` by hand: {_snippet(host, entry)}",
    )
    return Plan("replaced" if present else "added", new, existing, codegraph, merged)


def plan_uninstall(host: Host, text: str | None, *, label: str) -> Plan:
    """Plan removing the `lwc` entry (and nothing else). `absent` when there is none.

    Raises `AgentError` like `plan_install`.
    """
    if text is None:
        return Plan("absent", None, None, ())
    fmt, parsed, value, servers = _load(host, text, label)
    codegraph = codegraph_servers(servers)
    if servers is None or ENTRY_NAME not in servers:
        return Plan("absent", None, None, codegraph)
    existing = servers[ENTRY_NAME]
    todo = f"remove the `{ENTRY_NAME}` entry by hand"
    new = _edited(
        host,
        lambda: fmt.drop(parsed, text),
        _expected(host, value, None),
        label=label,
        verb="remove",
        refused=todo,
        todo=todo,
    )
    return Plan("removed", new, existing, codegraph)


def inspect(host: Host, text: str, entry: dict[str, Any], *, label: str) -> Inspection:
    """Is `lwc` registered in this file, and as `entry`? Raises `AgentError` when malformed."""
    _, _, _, servers = _load(host, text, label)
    codegraph = codegraph_servers(servers)
    if servers is None or ENTRY_NAME not in servers:
        return Inspection("not_registered", None, codegraph)
    existing = servers[ENTRY_NAME]
    state = "registered" if entry_matches(host, existing, entry) else "outdated"
    return Inspection(state, existing, codegraph)
