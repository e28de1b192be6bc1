"""The HTTP transport's rules (SPEC §1.2) as pure functions over plain data.

The HTTP actor hands `check_head()` a request's method, path and headers and
gets back either None (read the body) or the `Response` to send; `route_body()`
turns the body into a finished `Response` or the `Request` to dispatch. The
status order is fixed here and nowhere else:

    505 not HTTP/1.x → 400 ambiguous framing → 403 Host/Origin → 404 path → 405 method → 401 token
    → 400 version header → 415 content type → 406 Accept → 413 size
    → 400 JSON/envelope → 200/202

The limits that keep slow and abusive clients from exhausting the server (SPEC §1.2) are
here too, as data (`Limits`) and pure decisions (`connection_cap`, `choose_victim`); the actor
only applies them.

The flag parsers (`parse_listen`, `normalise_base_path`, `parse_allowed_host`)
live here too, so the CLI and the rules agree on what a host or path is.
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import re
from collections.abc import Iterable, Sequence
from http import HTTPStatus
from typing import Any, Final

import attrs

from lwc_trio.protocol import jsonrpc
from lwc_trio.protocol.framing import FRAME_LIMIT
from lwc_trio.protocol.session import SUPPORTED_VERSIONS

BODY_LIMIT: Final = FRAME_LIMIT
"""Largest accepted request body: the same 64 KiB as a stdio frame."""

HEAD_LIMIT: Final = 16 * 1024
"""Largest accepted request head (request line, headers and the blank line), in bytes
received, however they arrived; beyond it: 431 (`check_head_size`)."""

REQUEST_READ_TIMEOUT: Final = 10.0
"""Seconds from a request's first byte until its headers and body must have arrived."""

WRITE_TIMEOUT: Final = REQUEST_READ_TIMEOUT
"""Seconds an answer may take to go out once the socket stops taking it at once: a client
that does not read its answers for that long is closed, like one that does not send its
request in time."""

KEEP_ALIVE_TIMEOUT: Final = 30.0
"""Seconds an idle keep-alive connection (or one that never sent a byte) stays open."""

CONNECTION_LIMIT: Final = 256
"""Open connections at most (fewer when the file-descriptor limit is lower)."""

FD_RESERVE: Final = 64
"""File descriptors kept free for everything that is not a client connection: stores,
the CodeGraph child's pipes, path checks, refusals being written."""

LIMITS_ENV: Final = "LWC_HTTP_LIMITS"
"""Internal: `read=S,idle=S,connections=N,write=S` overrides the limits (tests use short values)."""

RETRY_AFTER: Final = b"1"
"""Seconds a 503 tells the client to wait: a tool call takes about that long."""

LOOPBACK_HOSTS: Final = ("localhost", "127.0.0.1", "[::1]")
"""Names a local client may put in `Host` (with the listen port)."""

_DEFAULT_PORT: Final = 80
"""The port a `Host` or `Origin` without one means (plain http)."""

_NAME = re.compile(r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?")
_PORT = re.compile(r"[0-9]{1,5}")
_PATH_BAD = re.compile(r"[\x00-\x20\x7f?#%]")

Headers = Sequence[tuple[bytes, bytes]]
"""Request headers as h11 gives them: lowercase names, raw values."""


# -- authorities: `Host` values, `Origin` hosts, listen addresses ---------------------


@attrs.frozen
class Authority:
    """A lowercased host (IPv6 in brackets) and its port; port None means "any port"."""

    host: str
    port: int | None

    def __str__(self) -> str:
        return self.host if self.port is None else f"{self.host}:{self.port}"


def parse_authority(text: str) -> Authority | None:
    """`host[:port]` as in a `Host` header, or None when it is not one."""
    text = text.strip().lower()
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return None
        host, rest = text[: end + 1], text[end + 1 :]
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return None
    else:
        host, sep, port_text = text.partition(":")
        rest = sep + port_text
        if not _NAME.fullmatch(host):
            return None
    if not rest:
        return Authority(host, None)
    if not rest.startswith(":") or not _PORT.fullmatch(rest[1:]):
        return None
    port = int(rest[1:])
    return Authority(host, port) if port <= 65535 else None


def parse_listen(text: str) -> tuple[str, int]:
    """`--http-listen HOST:PORT` → (host without brackets, port).

    Raises:
        ValueError: not `HOST:PORT`; the message says why.
    """
    authority = parse_authority(text)
    if authority is None or not text.strip():
        raise ValueError(f"{text!r} is not HOST:PORT (IPv6 as [ADDR]:PORT)")
    if authority.port is None:
        raise ValueError(f"{text!r} has no port (HOST:PORT; port 0 picks a free one)")
    return authority.host.strip("[]"), authority.port


def parse_allowed_host(text: str) -> str:
    """`--http-allowed-host NAME[:PORT]`, normalised; a bare NAME matches any port.

    Raises:
        ValueError: not a host name or address, optionally with a port.
    """
    authority = parse_authority(text)
    if authority is None or not text.strip():
        raise ValueError(f"{text!r} is not a host name (NAME or NAME:PORT)")
    return str(authority)


def normalise_base_path(text: str) -> str:
    """`--http-base-path` → the exact path requests must hit (`/mcp/` → `/mcp`).

    Raises:
        ValueError: it does not start with `/`, holds `?`, `#`, `%`, spaces or
            control characters, or has an empty segment inside.
    """
    if not text.startswith("/"):
        raise ValueError(f"{text!r} must start with /")
    if _PATH_BAD.search(text):
        raise ValueError(f"{text!r} must not contain spaces, control characters, ?, # or %")
    path = text.rstrip("/") or "/"
    if "//" in path:
        raise ValueError(f"{text!r} has an empty path segment")
    return path


def url_host(address: str) -> str:
    """An address as it appears in a URL or `Host` (IPv6 in brackets)."""
    return f"[{address}]" if ":" in address else address


# -- limits on connections --------------------------------------------------------------


@attrs.frozen
class Limits:
    """How long a request may take to arrive, an idle connection may stay, how many
    connections may be open at once (SPEC §1.2 defaults), and how long an answer may take
    to be written."""

    read_timeout: float = REQUEST_READ_TIMEOUT
    idle_timeout: float = KEEP_ALIVE_TIMEOUT
    max_connections: int = CONNECTION_LIMIT
    write_timeout: float = WRITE_TIMEOUT


def parse_limits(text: str | None) -> Limits:
    """`LIMITS_ENV`'s value (`read=S,idle=S,connections=N,write=S`, any subset) → `Limits`.

    Raises:
        ValueError: an unknown key, a repeated key, or a value that is not positive.
    """
    if text is None or not text.strip():
        return Limits()
    fields: dict[str, float | int] = {}
    names = {
        "read": "read_timeout",
        "idle": "idle_timeout",
        "connections": "max_connections",
        "write": "write_timeout",
    }
    for item in text.split(","):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in names or names[key] in fields:
            raise ValueError(
                f"{LIMITS_ENV}: {item.strip()!r} is not one of read=, idle=, connections=, write="
            )
        try:
            number: float | int = int(value) if key == "connections" else float(value)
        except ValueError:
            number = 0
        if not number > 0 or number == float("inf"):
            raise ValueError(
                f"{LIMITS_ENV}: {key} must be a positive number, got {value.strip()!r}"
            )
        fields[names[key]] = number
    return Limits(**fields)  # type: ignore[arg-type]


def connection_cap(configured: int, fd_limit: int | None, fds_in_use: int) -> int:
    """How many connections may be open: `configured`, lowered so that every accepted one
    still leaves `FD_RESERVE` descriptors free under the process's limit (at least 1).

    `fd_limit` None means unlimited. Without this, a low limit (`ulimit -n 128`) lets
    hanging clients take every descriptor: `accept()` fails and nobody is served.
    """
    if fd_limit is None:
        return configured
    return max(1, min(configured, fd_limit - fds_in_use - FD_RESERVE))


Phase = str
"""A connection's state for the cap: `idle` (nothing of a request yet), `reading` (a request
has begun arriving), `busy` (a complete request is being answered), `writing` (an answer
waits for the client to read it)."""


def choose_victim(connections: Iterable[tuple[Phase, float]]) -> int | None:
    """Which open connection to close so a new one fits under the cap, by position.

    The one that has made no progress for longest: idle, still sending its request, or not
    reading its answer (`since` is then when the write began waiting), the earliest
    `since`. Connections computing an answer are never closed for room; None when every
    connection is busy (the new one is refused instead).
    """
    best: tuple[float, int] | None = None
    for index, (phase, since) in enumerate(connections):
        if phase != "busy" and (best is None or since < best[0]):
            best = (since, index)
    return None if best is None else best[1]


# -- the policy the rules enforce -------------------------------------------------------


@attrs.frozen
class Policy:
    """What one running server accepts; built once the listen port is known."""

    base_path: str
    hosts: frozenset[Authority]
    """Acceptable `Host` authorities; an entry with port None accepts any port."""
    token: bytes | None = attrs.field(default=None, repr=False)
    """The bearer token every request must carry, when one was configured."""

    @classmethod
    def build(
        cls,
        *,
        port: int,
        base_path: str = "/",
        listen_names: Iterable[str] = (),
        allowed_hosts: Iterable[str] = (),
        token: bytes | None = None,
    ) -> Policy:
        """Loopback names and the listen host (both with the bound port), plus allowed hosts.

        Wildcard listen addresses (`0.0.0.0`, `::`) name no host, so they add nothing.
        """
        hosts = {Authority(name, port) for name in LOOPBACK_HOSTS}
        for name in listen_names:
            if name not in ("0.0.0.0", "::"):
                hosts.add(Authority(url_host(name.lower()), port))
        for text in allowed_hosts:
            authority = parse_authority(text)
            if authority is not None:
                hosts.add(authority)
        return cls(base_path=base_path, hosts=frozenset(hosts), token=token)

    def allows(self, authority: Authority) -> bool:
        port = _DEFAULT_PORT if authority.port is None else authority.port
        return (
            Authority(authority.host, port) in self.hosts
            or Authority(authority.host, None) in self.hosts
        )


# -- responses --------------------------------------------------------------------------


@attrs.frozen
class Response:
    """A complete HTTP answer: status, extra headers and body."""

    status: int
    body: bytes = b""
    headers: tuple[tuple[bytes, bytes], ...] = ()
    close: bool = False
    """The connection must be closed after this answer (the request's end is unknown)."""

    @property
    def reason(self) -> bytes:
        """The status line's reason phrase (empty for a status without one)."""
        return _reason(self.status)

    def header_list(self, *, close: bool = False, date: bytes = b"") -> list[tuple[bytes, bytes]]:
        """Every header to send: the rule's own, `content-type` when there is a body,
        `content-length`, `connection: close` when the connection ends after this answer
        (always when the answer itself closes), and `date` when given. Every name and value
        is lwc's own: nothing a client sent is echoed, and never a CORS header."""
        headers = list(self.headers)
        if self.body:
            headers.append((b"content-type", b"application/json"))
        headers.append((b"content-length", b"%d" % len(self.body)))
        if close or self.close:
            headers.append((b"connection", b"close"))
        if date:
            headers.append((b"date", date))
        return headers


@functools.cache
def _reason(status: int) -> bytes:
    try:
        return HTTPStatus(status).phrase.encode("ascii")
    except ValueError:
        return b""


def reply(message: dict[str, Any], status: int = 200) -> Response:
    """A JSON-RPC message as the body of a response."""
    return Response(status, jsonrpc.to_bytes(message))


def rejection(
    status: int,
    kind: str,
    message: str,
    *,
    code: int = jsonrpc.INVALID_REQUEST,
    request_id: jsonrpc.RequestId | None = None,
    headers: tuple[tuple[bytes, bytes], ...] = (),
    **data: Any,
) -> Response:
    """An HTTP-level refusal: the status plus a JSON-RPC error carrying `data.kind`."""
    body = reply(jsonrpc.error(request_id, code, message, kind, **data)).body
    return Response(status, body, headers)


ACCEPTED: Final = Response(202)
"""Notifications and client responses: nothing to say back."""


def too_large() -> Response:
    """413: the body went past `BODY_LIMIT`."""
    return rejection(
        413, "frame_too_large", f"Request exceeds {BODY_LIMIT // 1024} KiB", limit=BODY_LIMIT
    )


def timed_out(limits: Limits) -> Response:
    """408: the request did not arrive within `read_timeout` of its first byte."""
    return attrs.evolve(
        rejection(
            408,
            "request_timeout",
            f"Request Timeout: headers and body must arrive within "
            f"{limits.read_timeout:g} s of the first byte",
        ),
        close=True,
    )


_MALFORMED: Final = {
    431: ("headers_too_large", "Request Header Fields Too Large: the request head is too long"),
    501: ("unsupported_framing", "Not Implemented: the only Transfer-Encoding is chunked"),
}


def malformed(status: int) -> Response:
    """What the HTTP/1.1 parser refuses (`status` is its hint: 400 a malformed request line,
    header or chunk, 431 an oversized head, 501 an unknown transfer coding); the
    connection closes after it, since where the request ends is unknown. The message is
    lwc's own: nothing the client sent is echoed."""
    kind, message = _MALFORMED.get(status, ("malformed_request", "Bad Request: malformed HTTP"))
    return attrs.evolve(rejection(status, kind, message), close=True)


def check_head_size(size: int) -> Response | None:
    """431 when a request head took more than `HEAD_LIMIT` bytes, else None. `size` counts
    the bytes received up to the head's end, leading blank lines included: the parser's own
    bound only counts a head still incomplete, so one that arrived whole in a single read of
    up to 64 KiB would pass it."""
    return malformed(431) if size > HEAD_LIMIT else None


def too_many_connections(limit: int) -> Response:
    """503 for a connection beyond the cap while every open one is busy answering."""
    return attrs.evolve(
        rejection(
            503,
            "server_busy",
            f"Server busy: {limit} connections are open and answering; retry shortly",
            code=jsonrpc.SERVER_BUSY,
            headers=((b"retry-after", RETRY_AFTER),),
        ),
        close=True,
    )


def busy(request_id: jsonrpc.RequestId, limit: int) -> Response:
    """503: every tool-call slot is taken."""
    return rejection(
        503,
        "server_busy",
        f"Server busy: {limit} tool calls already in flight; retry shortly",
        code=jsonrpc.SERVER_BUSY,
        request_id=request_id,
        headers=((b"retry-after", RETRY_AFTER),),
    )


# -- the checks, in SPEC order ----------------------------------------------------------


def _header_tuple(headers: Iterable[tuple[bytes, bytes]]) -> Headers:
    """The converter for `Head.headers`, typed so callers' arguments are checked."""
    return tuple(headers)


@attrs.frozen
class Head:
    """What the rules look at before the body: method, decoded path, headers."""

    method: str
    path: str
    headers: Headers = attrs.field(converter=_header_tuple)
    http_version: bytes = b"1.1"
    """As on the request line: HTTP/1.1 and HTTP/1.0 are served, nothing else."""
    _by_name: dict[bytes, tuple[str, ...]] = attrs.field(init=False, eq=False, repr=False)
    """Each header name's values in order, decoded once: the checks ask for nine names."""

    def __attrs_post_init__(self) -> None:
        by_name: dict[bytes, tuple[str, ...]] = {}
        for key, value in self.headers:
            by_name[key] = (*by_name.get(key, ()), value.decode("latin-1"))
        object.__setattr__(self, "_by_name", by_name)

    def values(self, name: bytes) -> tuple[str, ...]:
        """Every value of header `name` (lowercase), decoded as latin-1 like HTTP."""
        return self._by_name.get(name, ())


def check_head(policy: Policy, head: Head) -> Response | None:
    """The refusal for this request head, or None when its body should be read."""
    for check in _HEAD_CHECKS:
        refused = check(policy, head)
        if refused is not None:
            return refused
    return None


def _check_http_version(policy: Policy, head: Head) -> Response | None:
    # HTTP/2's prior-knowledge preface parses as `PRI * HTTP/2.0`: SPEC §1.2 asks for
    # HTTP/1.1 only, so such a client is told at once and closed, and holds no slot.
    if head.http_version in (b"1.1", b"1.0"):
        return None
    refused = rejection(
        505,
        "unsupported_http_version",
        "HTTP Version Not Supported: this server speaks HTTP/1.1",
    )
    return attrs.evolve(refused, close=True)


def _check_framing(policy: Policy, head: Head) -> Response | None:
    # Two ways to say where the body ends: a proxy in front may pick the other one, so the
    # bytes after our idea of the end could be a second, smuggled request. Never guess.
    if head.values(b"content-length") and head.values(b"transfer-encoding"):
        refused = rejection(
            400,
            "ambiguous_framing",
            "Bad Request: both Content-Length and Transfer-Encoding; send one",
        )
        return attrs.evolve(refused, close=True)
    return None


def _check_host(policy: Policy, head: Head) -> Response | None:
    hosts = head.values(b"host")
    authority = parse_authority(hosts[0]) if len(hosts) == 1 else None
    if authority is None or not policy.allows(authority):
        shown = hosts[0] if len(hosts) == 1 else f"{len(hosts)} Host headers"
        return rejection(403, "forbidden_host", f"Forbidden: Host {shown!r} is not allowed")
    origins = head.values(b"origin")
    if not origins:
        return None
    if len(origins) == 1 and _origin_allowed(policy, origins[0]):
        return None
    shown = origins[0] if len(origins) == 1 else f"{len(origins)} Origin headers"
    return rejection(403, "forbidden_origin", f"Forbidden: Origin {shown!r} is not allowed")


def _origin_allowed(policy: Policy, origin: str) -> bool:
    # Browsers send `null` from sandboxed and file:// pages: never trusted.
    scheme, sep, rest = origin.strip().partition("://")
    if not sep or scheme.lower() != "http":
        return False
    authority = parse_authority(rest)
    return authority is not None and policy.allows(authority)


def _check_path(policy: Policy, head: Head) -> Response | None:
    if head.path == policy.base_path:
        return None
    return rejection(404, "not_found", f"Not found: the MCP endpoint is {policy.base_path}")


def _check_method(policy: Policy, head: Head) -> Response | None:
    if head.method == "POST":
        return None
    # Stateless JSON mode has no SSE stream (GET) and no session to end (DELETE).
    return rejection(
        405,
        "method_not_allowed",
        f"Method not allowed: {head.method}; this endpoint takes POST only",
        headers=((b"allow", b"POST"),),
    )


def _check_token(policy: Policy, head: Head) -> Response | None:
    if policy.token is None:
        return None
    values = head.values(b"authorization")
    if len(values) == 1:
        scheme, _, credentials = values[0].strip().partition(" ")
        offered = credentials.strip().encode("latin-1")
        # compare_digest's time does not depend on where the bytes differ.
        if scheme.lower() == "bearer" and hmac.compare_digest(offered, policy.token):
            return None
    return rejection(
        401,
        "unauthorized",
        "Unauthorized: a valid bearer token is required",
        headers=((b"www-authenticate", b"Bearer"),),
    )


def _check_version(policy: Policy, head: Head) -> Response | None:
    values = head.values(b"mcp-protocol-version")
    if not values or (len(values) == 1 and values[0].strip() in SUPPORTED_VERSIONS):
        return None
    shown = values[0] if len(values) == 1 else f"{len(values)} headers"
    return rejection(
        400,
        "unsupported_protocol_version",
        f"Bad Request: unsupported MCP-Protocol-Version {shown!r}",
        supported=list(SUPPORTED_VERSIONS),
    )


def _check_content_type(policy: Policy, head: Head) -> Response | None:
    values = head.values(b"content-type")
    if len(values) == 1 and _is_json_type(values[0]):
        return None
    return rejection(
        415,
        "unsupported_media_type",
        "Unsupported Media Type: Content-Type must be application/json",
    )


def _is_json_type(value: str) -> bool:
    media_type, *params = value.split(";")
    if media_type.strip().lower() != "application/json":
        return False
    for param in params:
        name, _, arg = param.partition("=")
        if name.strip().lower() == "charset" and arg.strip().strip('"').lower() not in (
            "utf-8",
            "utf8",
        ):
            return False  # the body is parsed as UTF-8 and nothing else
    return True


def _check_accept(policy: Policy, head: Head) -> Response | None:
    if accepts_json(head.values(b"accept")):
        return None
    return rejection(406, "not_acceptable", "Not Acceptable: responses are application/json")


def accepts_json(values: Sequence[str]) -> bool:
    """Whether `Accept` header values admit application/json (missing admits everything)."""
    ranges = [item for value in values for item in value.split(",") if item.strip()]
    if not ranges:
        return True
    best: tuple[int, float] | None = None  # (specificity, q) of the closest matching range
    for item in ranges:
        media_type, *params = item.split(";")
        specificity = _SPECIFICITY.get(media_type.strip().lower())
        if specificity is None:
            continue
        q = _quality(params)
        # RFC 9110 §12.5.1: the most specific matching range decides.
        if best is None or specificity > best[0]:
            best = (specificity, q)
        elif specificity == best[0]:
            best = (specificity, max(q, best[1]))
    return best is not None and best[1] > 0


_SPECIFICITY: Final = {"application/json": 3, "application/*": 2, "*/*": 1}


def _quality(params: list[str]) -> float:
    for param in params:
        name, _, arg = param.partition("=")
        if name.strip().lower() == "q":
            try:
                return float(arg.strip())
            except ValueError:
                return 1.0  # an unreadable weight is no reason to refuse
    return 1.0


def _check_length(policy: Policy, head: Head) -> Response | None:
    # Refuse a declared oversize body before reading a byte of it; bodies that
    # lie or are chunked are cut off while reading (see the actor).
    for value in head.values(b"content-length"):
        if value.strip().isdigit() and int(value) > BODY_LIMIT:
            return too_large()
    return None


_HEAD_CHECKS: Final = (
    _check_http_version,
    _check_framing,
    _check_host,
    _check_path,
    _check_method,
    _check_token,
    _check_version,
    _check_content_type,
    _check_accept,
    _check_length,
)


def route_body(body: bytes) -> Response | jsonrpc.Request:
    """A finished answer for this body, or the request the explore pipeline must answer."""
    if len(body) > BODY_LIMIT:
        return too_large()
    message = jsonrpc.parse_message(body)
    if isinstance(message, jsonrpc.Reply):
        return reply(message.message, status=400)
    if isinstance(message, jsonrpc.Request):
        return message
    # Notifications (cancellation included: ids from different clients collide,
    # and closing the request is HTTP's way to cancel) and client responses.
    return ACCEPTED
