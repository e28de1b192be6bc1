"""The `lwc_explore` result object, its fixed key order, and plane-output checks.

Key order of the result (documented in docs/mcp-reference.md): what the agent reads first,
then the echoes and metadata, so a host that shows only the first 2 KB shows the answer:
`memory, codeGraph, partial (mode all only), query, projectPath, mode, scope, timings`.
The text block is the same object as compact JSON with `ensure_ascii=False`.

**Budget** (`maxTokens`, SPEC §2): each plane sizes its own answer for the whole budget (they
run concurrently and neither knows how the other will do); `fit_budget` fits them together
here. In mode `all`, with both planes ready, the code text is sure of half the budget when it
needs it and memory gets the rest (its last Pages are dropped until it fits); room memory
leaves unused goes back to the code text. A plane that is not ready leaves all of it to the other.
"""

from __future__ import annotations

from typing import Any, Final

from lwc_trio.protocol.arguments import ExploreArgs
from lwc_trio.protocol.code_text import fit_state
from lwc_trio.protocol.jsonrpc import to_bytes
from lwc_trio.protocol.tool import UNITS_PER_TOKEN
from lwc_trio.protocol.units import text_cost

NOT_REQUESTED: Final = {"state": "not_requested"}

MEMORY_CODES: Final = frozenset(
    {
        "store_not_found",
        "store_path_invalid",
        "store_corrupt",
        "unsupported_store_version",
        "store_busy",
        "store_needs_recovery",
        "memory_timeout",
        "memory_internal",
        "memory_crashed",
        "memory_bad_response",
    }
)
CODE_CODES: Final = frozenset(
    {
        "codegraph_runtime_missing",
        "codegraph_index_missing",
        "codegraph_index_invalid",
        "codegraph_timeout",
        "codegraph_crashed",
        "codegraph_bad_response",
        "codegraph_tool_error",
        "code_internal",
    }
)


def plane_error(code: str, message: str) -> dict[str, Any]:
    """`{"state": "error", "error": {code, message}}`."""
    return {"state": "error", "error": {"code": code, "message": message}}


def fault_code(plane: str, outcome: str) -> str:
    """`memory_timeout`, `codegraph_timeout`, `code_internal`… for a plane outcome."""
    if plane == "code" and outcome != "internal":
        return f"codegraph_{outcome}"
    return f"{plane}_{outcome}"


def _is_error_object(obj: Any, codes: frozenset[str]) -> bool:
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("code"), str)
        and obj["code"] in codes
        and isinstance(obj.get("message"), str)
    )


def _is_next_action(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("command"), str)
        and isinstance(obj.get("cwd"), str)
    )


def check_plane(plane: str, obj: Any) -> bool:
    """True when a plane's answer has the SPEC §2.1 shape for that plane.

    A plane that answers anything else is reported as `<plane>_bad_response`
    rather than passed on to the client.
    """
    if not isinstance(obj, dict):
        return False
    codes = MEMORY_CODES if plane == "memory" else CODE_CODES
    state = obj.get("state")
    if state == "unavailable":
        return _is_error_object(obj.get("error"), codes) and _is_next_action(obj.get("nextAction"))
    if state == "error":
        return _is_error_object(obj.get("error"), codes)
    if state != "ready":
        return False
    if plane == "memory":
        return all(
            isinstance(items := obj.get(k), list) and all(isinstance(i, dict) for i in items)
            for k in ("stores", "results", "pages", "graph")
        )
    return (
        isinstance(obj.get("text"), str)
        and isinstance(obj.get("truncated"), bool)
        and isinstance(obj.get("files"), list)
        and all(isinstance(f, str) for f in obj["files"])
    )


def build_result(
    args: ExploreArgs,
    project_path: str,
    memory: dict[str, Any],
    code: dict[str, Any],
    memory_ms: int | None,
    code_ms: int | None,
) -> tuple[dict[str, Any], bool]:
    """The result object in its fixed key order, and whether it `isError`."""
    memory_ready = memory.get("state") == "ready"
    code_ready = code.get("state") == "ready"
    out: dict[str, Any] = {"memory": memory, "codeGraph": code}
    if args.mode == "all":
        out["partial"] = memory_ready != code_ready
        is_error = not (memory_ready or code_ready)
    elif args.mode == "memory":
        is_error = not memory_ready
    else:
        is_error = not code_ready
    out["query"] = args.query
    out["projectPath"] = project_path
    out["mode"] = args.mode
    out["scope"] = args.scope
    # Plain output types (SPEC §2): a plane that did not run has no timing key, not a null.
    timings = {"memoryMs": memory_ms, "codeMs": code_ms}
    measured = {key: value for key, value in timings.items() if value is not None}
    # Fitted with every timing at one digit and TIMINGS_ROOM kept for the real ones, so a
    # slow call and a fast one are cut alike (byte-identical apart from `timings`).
    out["timings"] = dict.fromkeys(measured, 0)
    fit_budget(out, args.maxTokens * UNITS_PER_TOKEN)
    out["timings"] = measured
    return out, is_error


TIMINGS_ROOM: Final = 16
"""Cost units kept for the timings' digits beyond the one each is fitted with (a plane's
milliseconds stay below its deadline: at most 5 digits each)."""


REVISION_ROOM: Final = 19
"""Cost units kept for a store's revision (at most 19 digits), which is counted as `0`."""


def _units(structured: dict[str, Any]) -> int:
    """The result's cost as the text block, with every number that changes from write to
    write (timings, store revisions) counted at a fixed width: the planes' answers are cut
    alike whatever those digits say."""
    memory = structured["memory"]
    stores = memory.get("stores")
    if not isinstance(stores, list) or not stores:
        return text_cost(dumps(structured)) + TIMINGS_ROOM
    memory["stores"] = [
        {**store, "revision": 0} if isinstance(store, dict) and "revision" in store else store
        for store in stores
    ]
    try:
        return text_cost(dumps(structured)) + TIMINGS_ROOM + REVISION_ROOM * len(stores)
    finally:
        memory["stores"] = stores


def _drop_memory_step(memory: dict[str, Any]) -> bool:
    """One step of making a ready memory object smaller: the last Page, then the graph
    neighbourhood. Results are never dropped for the budget (SPEC §4 "Recall": a query
    returns min(maxDocuments, matches) results); only the 512 KiB line rule cuts them."""
    if memory["pages"]:
        memory["pages"].pop()
        return True
    for item in memory["graph"]:
        if "neighborhood" in item:
            del item["neighborhood"]
            item.pop("seed", None)
            return True
    return False


def fit_budget(structured: dict[str, Any], room: int) -> None:
    """Make the result cost at most `room` units as the text block (see the module
    docstring); deterministic. What the budget does not cut (the echoes, the results with
    their bounded fields) stays, so 20 results with the longest fields can exceed it."""
    if _units(structured) <= room:
        return
    memory = structured["memory"]
    code = structured["codeGraph"]
    memory_ready = memory.get("state") == "ready"
    whole = code if code.get("state") == "ready" else None
    if whole is not None:
        fixed = _units(structured) - text_cost(dumps(whole["text"]))
        share = room - fixed
        if memory_ready:
            share = max(share, min(room // 2, text_cost(dumps(whole["text"]))))
        structured["codeGraph"] = code = fit_state(whole, share)
    while memory_ready and _units(structured) > room and _drop_memory_step(memory):
        pass
    if whole is not None:
        # What memory gave up goes back to the code text (cut again from the whole).
        spare = room - (_units(structured) - text_cost(dumps(code["text"])))
        structured["codeGraph"] = fit_state(whole, spare)


def dumps(obj: Any) -> str:
    """Compact strict JSON, non-ASCII kept as is (the text block's form); see `to_bytes`.

    Never writes `NaN` or `Infinity` (RFC 8259 has neither; Node's `JSON.parse` rejects the
    whole line): the planes refuse non-finite numbers, and should one slip through anyway it
    is written as `null`.
    """
    return to_bytes(obj).decode()


def tool_result(structured: dict[str, Any], is_error: bool) -> dict[str, Any]:
    """A `tools/call` result: structured content plus the same object as text."""
    return {
        "content": [{"type": "text", "text": dumps(structured)}],
        "structuredContent": structured,
        "isError": is_error,
    }


def tool_response(request_id: Any, structured: dict[str, Any], is_error: bool) -> bytes:
    """The JSON-RPC response carrying `tool_result(structured, is_error)`, encoded.

    Byte for byte `dumps(jsonrpc.result(request_id, tool_result(...)))`, but the structured
    content is encoded once and spliced in twice (escaped as the text block, and as itself):
    encoding it twice was a tenth of the server's time per call. The line never exceeds
    `MAX_RESPONSE_BYTES` (SPEC §2): a larger answer is shrunk by `shrink_step` first.
    """
    while True:
        line = _tool_line(request_id, structured, is_error)
        if len(line) <= MAX_RESPONSE_BYTES or not shrink_step(structured):
            return line


MAX_RESPONSE_BYTES: Final = 512 * 1024 - 1
"""The longest JSON-RPC response line, without its newline (the line with it is 512 KiB)."""


def shrink_step(structured: dict[str, Any]) -> bool:
    """Make an answer that is too long to send smaller by one step; False when nothing is left.

    Every field is bounded already, but 20 results, their pages and links can still add up
    (and every character is sent twice, once escaped). The steps keep what matters most:
    drop the last page body, then the graph neighbourhood, then the last result; then halve
    the code text. Deterministic: the same answer is always shrunk the same way.
    """
    memory = structured.get("memory")
    if isinstance(memory, dict) and memory.get("state") == "ready":
        if _drop_memory_step(memory):
            return True
        if memory["results"]:
            memory["results"].pop()
            return True
    code = structured.get("codeGraph")
    if isinstance(code, dict) and code.get("state") == "ready" and code.get("text"):
        text = code["text"]
        code["text"] = text[: len(text) // 2]
        code["truncated"] = True
        return True
    return False


def quoted_json(text: bytes) -> bytes:
    """`text`, compact JSON as `dumps` writes it (UTF-8), as a JSON string literal.

    Byte for byte `dumps(text.decode()).encode()`, several times faster: that text holds no
    raw control character (the encoder escapes them inside strings and writes no whitespace
    between tokens), so only backslashes and quotes need escaping, and in UTF-8 those bytes
    never occur inside a multi-byte character.
    """
    return b'"' + text.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'


def _tool_line(request_id: Any, structured: dict[str, Any], is_error: bool) -> bytes:
    text = to_bytes(structured)
    return b"".join(
        (
            b'{"jsonrpc":"2.0","id":',
            to_bytes(request_id),
            b',"result":{"content":[{"type":"text","text":',
            quoted_json(text),
            b'}],"structuredContent":',
            text,
            b',"isError":true}}' if is_error else b',"isError":false}}',
        )
    )
