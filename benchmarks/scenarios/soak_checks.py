"""The soak's oracle: every answer checked against the request that produced it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.messages import key_of


class Checker:
    """Validates every response against the request that produced it."""

    def __init__(self, ws: Path, has_code: bool) -> None:
        self.ws = str(ws)
        self.has_code = has_code
        self.errors: list[str] = []
        self.error_count = 0
        self.checked = 0
        self.memory_seen: dict[tuple[Any, ...], str] = {}
        self.code_seen: dict[tuple[Any, ...], str] = {}
        self.stats: Counter[str] = Counter()

    def fail(self, message: str) -> None:
        self.error_count += 1
        if len(self.errors) < 50:
            self.errors.append(message)

    def envelope(self, rid: Any, response: dict[str, Any]) -> bool:
        self.checked += 1
        if response.get("jsonrpc") != "2.0" or key_of(response.get("id")) != key_of(rid):
            self.fail(f"id {rid!r}: wrong envelope or id: {str(response)[:200]}")
            return False
        return True

    def ping(self, rid: Any, response: dict[str, Any]) -> None:
        if self.envelope(rid, response) and response.get("result") != {}:
            self.fail(f"ping {rid!r}: {str(response)[:200]}")

    def rpc_error(self, rid: Any, response: dict[str, Any], code: int, kind: str) -> None:
        if not self.envelope(rid, response):
            return
        error = response.get("error")
        if (
            not isinstance(error, dict)
            or error.get("code") != code
            or not isinstance(error.get("data"), dict)
            or error["data"].get("kind") != kind
        ):
            self.fail(f"id {rid!r}: expected error {code}/{kind}, got {str(response)[:200]}")

    def _structured(self, rid: Any, response: dict[str, Any]) -> tuple[dict[str, Any], bool] | None:
        if not self.envelope(rid, response):
            return None
        result = response.get("result")
        if not isinstance(result, dict):
            self.fail(f"id {rid!r}: no result: {str(response)[:200]}")
            return None
        content, sc = result.get("content"), result.get("structuredContent")
        if (
            not isinstance(content, list)
            or len(content) != 1
            or content[0].get("type") != "text"
            or not isinstance(sc, dict)
            or not isinstance(result.get("isError"), bool)
        ):
            self.fail(f"id {rid!r}: bad tool result shape: {str(result)[:200]}")
            return None
        text = content[0].get("text")
        if text != json.dumps(sc, ensure_ascii=False, separators=(",", ":")):
            self.fail(f"id {rid!r}: text block differs from structuredContent")
            return None
        return sc, result["isError"]

    def argument_error(self, rid: Any, response: dict[str, Any], code: str, field: str) -> None:
        got = self._structured(rid, response)
        if got is None:
            return
        sc, is_error = got
        error = sc.get("error")
        if (
            not is_error
            or not isinstance(error, dict)
            or error.get("code") != code
            or error.get("field") != field
        ):
            self.fail(f"id {rid!r}: expected {code}/{field}, got {str(sc)[:200]}")

    def explore(
        self,
        rid: Any,
        response: dict[str, Any],
        args: dict[str, Any],
        floor: int,
        probe: tuple[str, str, bool] | None = None,
        busy_ok: bool = False,
    ) -> None:
        """A successful lwc_explore answer to `args`, sent after revision `floor` was written.

        `probe` = (slug, marker, present): the marker search must (or must no longer) find slug.
        `busy_ok`: the call was one of a burst, so the code plane may answer "busy" (SPEC §5:
        one CodeGraph call in flight and a small bounded queue).
        """
        got = self._structured(rid, response)
        if got is None:
            return
        sc, is_error = got
        mode = args.get("mode", "memory")
        scope = args.get("scope", "all")
        where = f"id {rid!r} ({mode} {args['query'][:30]!r})"
        code = sc.get("codeGraph")
        if busy_ok and is_busy(code):
            self.stats["code_busy"] += 1
            if mode == "code":
                if not is_error:
                    self.fail(f"{where}: busy code answer without isError")
                return
            if sc.get("partial") is not True:
                self.fail(f"{where}: busy code plane but partial is not true")
            self._memory(where, sc.get("memory"), args, floor, probe, beside=code)
            return
        if is_error:
            # The error codes first: the whole answer is cut to fit the report.
            self.fail(f"{where}: isError {error_codes(sc)}: {str(sc)[:300]}")
            return
        if (sc.get("query"), sc.get("mode"), sc.get("scope")) != (args["query"], mode, scope):
            self.fail(f"{where}: answer to another request: {str(sc)[:200]}")
            return
        if not str(args["projectPath"]).startswith(str(sc.get("projectPath"))):
            self.fail(f"{where}: projectPath {sc.get('projectPath')!r}")
        if ("partial" in sc) != (mode == "all") or sc.get("partial", False):
            self.fail(f"{where}: partial flag wrong: {sc.get('partial')!r}")
        memory = sc.get("memory")
        # In mode all the planes share one budget (SPEC §2): each answer is the same for the same
        # request given the same answer of the other plane.
        if mode in ("memory", "all"):
            self._memory(where, memory, args, floor, probe, beside=code if mode == "all" else None)
        elif memory != {"state": "not_requested"}:
            self.fail(f"{where}: memory requested? {str(memory)[:100]}")
        if mode in ("code", "all"):
            self._code(where, code, args, beside=memory if mode == "all" else None)
        elif code != {"state": "not_requested"}:
            self.fail(f"{where}: code requested? {str(code)[:100]}")
        self.stats[f"ok_{mode}"] += 1

    def _memory(
        self,
        where: str,
        memory: Any,
        args: dict[str, Any],
        floor: int,
        probe: tuple[str, str, bool] | None,
        *,
        beside: Any = None,
    ) -> None:
        if not isinstance(memory, dict) or memory.get("state") != "ready":
            self.fail(f"{where}: memory not ready: {str(memory)[:300]}")
            return
        stores = [s for s in memory.get("stores", []) if s.get("scope") == "project"]
        if len(stores) != 1 or stores[0].get("state") != "ready":
            self.fail(f"{where}: project store missing or not ready: {memory.get('stores')}")
            return
        revision = stores[0]["revision"]
        if not isinstance(revision, int) or revision < floor:
            self.fail(f"{where}: stale read: revision {revision} < last completed write {floor}")
        limit = args.get("maxDocuments") or 8
        results = memory.get("results")
        if not isinstance(results, list) or len(results) > limit:
            self.fail(f"{where}: {len(results or [])} results > maxDocuments {limit}")
            return
        if probe is not None:
            slug, word, present = probe
            hits = [
                r for r in results if r.get("identifier") == slug and r.get("match") == "lexical"
            ]
            if present:
                bodies = [p.get("body", "") for p in memory.get("pages", [])]
                if not hits or not any(word in b for b in bodies):
                    self.fail(f"{where}: marker {word} of {slug} (rev ≥ {floor}) not found")
                self.stats["probe_found"] += 1
            else:
                if hits:
                    self.fail(f"{where}: superseded marker {word} still matches {slug}")
                self.stats["probe_gone"] += 1
        other = json.dumps(beside, sort_keys=True)
        key = (
            args["query"],
            limit,
            args.get("scope", "all"),
            revision,
            args.get("maxFiles"),
            other,
        )
        text = json.dumps(memory, sort_keys=True)
        previous = self.memory_seen.setdefault(key, text)
        if previous != text:
            self.fail(f"{where}: memory differs from an earlier answer at revision {revision}")
        if len(self.memory_seen) > 20_000:
            self.memory_seen.clear()

    def _code(self, where: str, code: Any, args: dict[str, Any], *, beside: Any = None) -> None:
        if not isinstance(code, dict) or code.get("state") != "ready":
            self.fail(f"{where}: codeGraph not ready: {str(code)[:300]}")
            return
        if not isinstance(code.get("text"), str) or not isinstance(code.get("files"), list):
            self.fail(f"{where}: codeGraph shape: {str(code)[:200]}")
            return
        other = json.dumps(beside, sort_keys=True)
        # projectPath too: the code plane answers from the files under it, and whether two
        # paths (the workspace, its src/) give the same text depends on the sources indexed.
        key = (
            args["query"],
            args.get("projectPath"),
            args.get("maxFiles") or 12,
            args.get("maxDocuments"),
            other,
        )
        text = json.dumps(code, sort_keys=True)
        previous = self.code_seen.setdefault(key, text)
        if previous != text:
            self.fail(f"{where}: codeGraph differs from an earlier answer to the same query")


def error_codes(sc: dict[str, Any]) -> dict[str, Any]:
    """Each plane's error code, and each store's, of an answer (what a failure must name)."""
    found: dict[str, Any] = {}
    for plane in ("memory", "codeGraph"):
        part = sc.get(plane)
        if not isinstance(part, dict):
            continue
        error = part.get("error")
        if isinstance(error, dict):
            found[plane] = error.get("code")
        for store in part.get("stores") or ():
            if isinstance(store, dict) and isinstance(store.get("error"), dict):
                found[f"{plane}.{store.get('scope')}"] = store["error"].get("code")
    if "timings" in sc:
        found["timings"] = sc["timings"]
    return found


def is_busy(code: Any) -> bool:
    """The code plane's immediate "busy" answer (its bounded queue was full)."""
    return (
        isinstance(code, dict)
        and code.get("state") == "error"
        and code.get("error", {}).get("code") == "codegraph_timeout"
        and "busy" in code.get("error", {}).get("message", "")
    )


# -- the workload ----------------------------------------------------------------------------


def invalid_cases(ws: str, outside: str) -> list[tuple[str, dict[str, Any], tuple[Any, ...]]]:
    """(label, message-without-id, expectation); expectation ("tool", code, field) or
    ("rpc", code, kind)."""
    many = " ".join(f"term{i}" for i in range(70))
    # fmt: off
    cases: list[tuple[str, dict[str, Any], tuple[Any, ...]]] = [
        ("maxDocuments string", {"query": "x", "projectPath": ws, "maxDocuments": "3"},
         ("tool", "invalid_arguments", "maxDocuments")),
        ("maxFiles float", {"query": "x", "projectPath": ws, "maxFiles": 3.0},
         ("tool", "invalid_arguments", "maxFiles")),
        ("unknown field", {"query": "x", "projectPath": ws, "bogus": 1},
         ("tool", "invalid_arguments", "bogus")),
        ("empty query", {"query": "   ", "projectPath": ws},
         ("tool", "invalid_query", "query")),
        ("relative path", {"query": "x", "projectPath": "rel/dir"},
         ("tool", "invalid_project_path", "projectPath")),
        ("outside workspace", {"query": "x", "projectPath": outside},
         ("tool", "project_path_outside_workspace", "projectPath")),
        ("bad mode", {"query": "x", "projectPath": ws, "mode": "both"},
         ("tool", "invalid_arguments", "mode")),
        ("too many terms", {"query": many, "projectPath": ws},
         ("tool", "invalid_query", "query")),
        ("unknown tool", {"query": "x", "projectPath": ws},
         ("rpc", -32602, "unknown_tool")),
        ("unknown method", {}, ("rpc", -32601, "method_not_found")),
    ]
    # fmt: on
    return cases
