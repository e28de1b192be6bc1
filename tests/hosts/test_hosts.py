"""The real agent hosts start the `lwc` entry that `lwc agent install` wrote, and call it.

Claude Code, Codex CLI and Gemini CLI are the pinned npm releases `scripts/test_hosts.sh`
installs (it sets `LWC_TEST_HOSTS_BIN`; without it these tests are skipped). Each test uses a
scratch HOME and project, installs with the virtualenv's `lwc` while the virtualenv is *not* on
PATH (as a user who runs `.venv/bin/lwc agent install` does), checks the host's own gate as
`lwc agent status` reports it, clears it the way the host's own dialog does, checks the host's
own listing, and finally runs the host headless against `fake_model.py` — a scripted stand-in
for the model API on 127.0.0.1, reached through the host's documented base-URL setting — which
answers with a call to `lwc_explore`. The test then checks that the Wiki word came back to the
"model" inside the tool result the host sent. No network but 127.0.0.1.

The long-answer tests (at the end) put the Pages of `wiki/` into the Wiki and check that each
host hands its model lwc's answer whole: none of the host's spill or cut notices, JSON equal to
lwc's own answer to the same call, and the passage asked about inside it.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp.types
import pytest
import trio
from mcp import Client, StdioServerParameters

from lwc_trio.codegraph.runtime import runtime_dir

HOSTS_BIN = os.environ.get("LWC_TEST_HOSTS_BIN", "")
CODEGRAPH_BINARY = os.environ.get("LWC_TEST_CODEGRAPH_BINARY", "")  # set by scripts/test.sh
REPO = Path(__file__).resolve().parents[2]
NODE_BIN = os.environ.get("LWC_TEST_NODE_BIN", "")
VENV_LWC = Path(sys.executable).parent / "lwc"
FAKE_MODEL = Path(__file__).with_name("fake_model.py")
WIKI = Path(__file__).with_name("wiki")
DEV_SET = REPO.parent / "shared" / "data" / "docs" / "jest"
"""The public documentation set's jest corpus (`../shared/data/docs/`, beside the checkout)."""
DEV_QUESTIONS = ("jest-22", "jest-30")
"""Two of its questions whose key sentence lies deep in a long Page (77,000 characters into
`configuration`, 17,000 into `cli`)."""
WORD = "quixotrelle"  # appears only in the test Wiki
BODY_WORD = "capybara"  # in the Page body, so it must travel in the tool result

pytestmark = [
    pytest.mark.skipif(not HOSTS_BIN, reason="run by scripts/test_hosts.sh (real host CLIs)"),
    pytest.mark.skipif(not VENV_LWC.is_file(), reason="needs the virtualenv's lwc script"),
]


class Box:
    """A scratch HOME, a git project with a Wiki, and a running fake model endpoint."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.project = root / "proj"
        self.home.mkdir()
        self.project.mkdir()
        self.model_log = root / "model.jsonl"
        path = [p for p in (HOSTS_BIN, NODE_BIN) if p] + ["/usr/bin", "/bin"]
        self.env = {
            "HOME": str(self.home),
            "PATH": ":".join(path),  # the virtualenv is deliberately not on PATH
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "NO_COLOR": "1",
            "CI": "1",
            # Claude Code: no update checks, telemetry or other calls home.
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "MCP_TIMEOUT": "60000",  # Claude Code's server start-up limit (ms), for loaded CI
            # Claude Code 2.1.197 connects MCP servers in the background by default, so on a
            # loaded machine its first turn could go out before lwc was up (seen once in CI:
            # no lwc tool in the first request); "false" makes it wait, as a script would.
            "MCP_CONNECTION_NONBLOCKING": "false",
        }
        if "TMPDIR" in os.environ:
            self.env["TMPDIR"] = os.environ["TMPDIR"]
        subprocess.run(["git", "init", "-q", str(self.project)], check=True, env=self.env)
        page = root / "page.md"
        page.write_text(f"The {WORD} protocol routes {BODY_WORD} packets over Zanzibar links.\n")
        self.lwc("init")
        self.lwc("page", "put", WORD, "--title", "Quixotrelle protocol", "--file", str(page))
        self.model: subprocess.Popen[bytes] | None = None
        self.port = 0

    # ------------------------------------------------------------------ running things

    def run(
        self, argv: list[str], *, cwd: Path | None = None, extra: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv,
            cwd=cwd or self.project,
            env={**self.env, **(extra or {})},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=120,
            check=False,
        )

    def lwc(self, *args: str, cwd: Path | None = None) -> dict[str, Any]:
        done = self.run([str(VENV_LWC), *args, "--json"], cwd=cwd)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        value: dict[str, Any] = json.loads(done.stdout)
        return value

    def host(self, name: str, *args: str, **extra: str) -> str:
        return self.host_in(None, name, *args, **extra)

    def host_in(self, cwd: Path | None, name: str, *args: str, **extra: str) -> str:
        done = self.run([str(Path(HOSTS_BIN) / name), *args], cwd=cwd, extra=extra)
        output = done.stdout + done.stderr
        assert done.returncode == 0, (name, args, output)
        return output

    def gates(self, host: str, scope: str) -> list[str]:
        rows = self.lwc("agent", "status", host)["configs"]
        [row] = [r for r in rows if r["scope"] == scope]
        assert row["state"] == "registered", row
        assert row["command"]["runs"] is True, row
        return [gate["gate"] for gate in row["gates"]]

    # ------------------------------------------------------------------ fake model

    def start_model(self) -> None:
        port_file = self.root / "model.port"
        self.ask_about(self.project)
        self.model = subprocess.Popen(
            [sys.executable, str(FAKE_MODEL), str(port_file)],
            env={
                **self.env,
                "FAKE_MODEL_LOG": str(self.model_log),
                "FAKE_MODEL_ARGS_FILE": str(self.args_file),
            },
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while not port_file.exists():
            assert self.model.poll() is None, "the fake model endpoint did not start"
            assert time.monotonic() < deadline, "the fake model endpoint did not start"
            time.sleep(0.05)
        self.port = int(port_file.read_text())

    @property
    def args_file(self) -> Path:
        return self.root / "model-args.json"

    def ask_about(self, project_path: Path) -> None:
        """The arguments the fake model puts in its `lwc_explore` call."""
        self.args_file.write_text(json.dumps({"query": WORD, "projectPath": str(project_path)}))

    def stop_model(self) -> None:
        if self.model is not None and self.model.poll() is None:
            self.model.send_signal(signal.SIGTERM)
            self.model.wait(timeout=10)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def tool_results(self) -> list[str]:
        """Every tool result the host sent to the fake model."""
        out: list[str] = []
        if self.model_log.exists():
            for line in self.model_log.read_text().splitlines():
                out += json.loads(line).get("toolResults", [])
        return out

    def last_tool_results(self) -> list[str]:
        """The tool results in the host's last request to the fake model: the whole session's,
        in call order, as the host's model would see them."""
        results: list[str] = []
        if self.model_log.exists():
            for line in self.model_log.read_text().splitlines():
                results = json.loads(line).get("toolResults") or results
        return results

    def script(self, calls: list[dict[str, Any]]) -> None:
        """The fake model makes these `lwc_explore` calls, one after another."""
        self.args_file.write_text(json.dumps(calls))

    def add_long_pages(self) -> None:
        """The Pages of `wiki/` (long Markdown with headings and code, one in Chinese), put
        into this project's Wiki with the real `lwc page import`."""
        result = self.lwc("page", "import", str(WIKI))
        assert result["created"] == len(list(WIKI.glob("*.md"))), result

    def add_dev_set(self) -> None:
        """The jest documentation of the public set, one Page a file, put into this project's
        Wiki with the real `lwc page import`."""
        result = self.lwc("page", "import", str(DEV_SET / "pages.jsonl"))
        assert result["created"] == 37, result

    def lwc_directly(self, calls: list[dict[str, Any]]) -> tuple[mcp.types.Tool, list[str]]:
        """What the same `lwc serve --mcp` the hosts start (the virtualenv's, in the project,
        with this HOME) lists and answers to `calls`, asked by the `mcp` SDK's client."""

        async def ask() -> tuple[mcp.types.Tool, list[str]]:
            server = StdioServerParameters(
                command=str(VENV_LWC),
                args=["serve", "--mcp"],
                env=self.env,
                cwd=str(self.project),
            )
            async with Client(server) as client:
                [tool] = (await client.list_tools()).tools
                texts = []
                for arguments in calls:
                    result = await client.call_tool(tool.name, arguments)
                    [block] = result.content
                    assert isinstance(block, mcp.types.TextContent), block
                    texts.append(block.text)
            return tool, texts

        return trio.run(ask)

    def assert_tool_result_reached_model(self) -> None:
        results = self.tool_results()
        assert results, (
            "the host sent no tool result (did it start lwc in time?); requests: "
            + self.model_log.read_text()
        )
        assert any(WORD in text and BODY_WORD in text for text in results), results


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Box]:
    """A fresh scratch HOME and project; the fake model is stopped afterwards."""
    made = Box(tmp_path.resolve())
    made.start_model()
    try:
        yield made
    finally:
        made.stop_model()


def _install(box: Box, host: str, scope: str) -> dict[str, Any]:
    result = box.lwc("agent", "install", host, f"--{scope}")
    assert result["status"] == "added"
    assert result["entry"]["command"] == str(VENV_LWC)  # absolute, though not on PATH
    return result


def _line(listing: str, name: str = "lwc") -> str:
    lines = [line for line in listing.splitlines() if name in line]
    assert lines, listing
    return "\n".join(lines)


def _listed(box: Box, host: str, state: str, attempts: int = 3) -> None:
    """`HOST mcp list` shows `lwc` with `state`. The listing is the host's own health probe,
    with its own short time limit, so on a loaded machine a slow start is probed again."""
    lines = ""
    for _ in range(attempts):
        lines = _line(box.host(host, "mcp", "list"))
        if state in lines:
            return
    raise AssertionError(f"{host} mcp list: wanted {state!r}, got {lines!r}")


# ---------------------------------------------------------------------------- Claude Code


def _claude_trust_and_approve(box: Box) -> None:
    """What accepting Claude Code's two dialogs writes: the workspace trust in ~/.claude.json
    and the `.mcp.json` server approval in the project's .claude/settings.local.json."""
    state_file = box.home / ".claude.json"
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    state.setdefault("projects", {}).setdefault(str(box.project), {})["hasTrustDialogAccepted"] = (
        True
    )
    state_file.write_text(json.dumps(state, indent=2))
    local = box.project / ".claude" / "settings.local.json"
    local.parent.mkdir(exist_ok=True)
    local.write_text(json.dumps({"enabledMcpjsonServers": ["lwc"]}, indent=2))


def _claude_run(box: Box, *, cwd: Path | None = None) -> None:
    box.host_in(
        cwd,
        "claude",
        "-p",
        f"Use lwc to look up {WORD}.",
        "--output-format",
        "json",
        "--allowedTools",
        "mcp__lwc__lwc_explore",
        "--model",
        "claude-sonnet-4-5",
        ANTHROPIC_BASE_URL=box.base_url,
        ANTHROPIC_API_KEY="sk-fake-model-test",
    )


def test_claude_code_project_scope(box: Box) -> None:
    """.mcp.json: pending approval until the user approves it; then connected and callable."""
    result = _install(box, "claude-code", "project")
    assert {g["gate"] for g in result["gates"]} == {
        "claude_workspace_trust",
        "claude_project_approval",
    }
    assert "Pending approval" in _line(box.host("claude", "mcp", "list"))
    _claude_trust_and_approve(box)
    assert box.gates("claude-code", "project") == []
    _listed(box, "claude", "Connected")
    _claude_run(box)
    box.assert_tool_result_reached_model()


def test_claude_code_user_scope(box: Box) -> None:
    """~/.claude.json top level: no gate; a session started in the project binds it."""
    _install(box, "claude-code", "user")
    assert box.gates("claude-code", "user") == []
    _listed(box, "claude", "Connected")
    _claude_run(box)
    box.assert_tool_result_reached_model()


def test_claude_code_user_scope_in_a_subdirectory(box: Box) -> None:
    """Issue 15 #5 against the real host: a session started in `src/` binds `src/`, which
    holds no Wiki; the answer Claude hands the model says to bind the project, not to init."""
    _install(box, "claude-code", "user")
    sub = box.project / "src"
    sub.mkdir()
    box.ask_about(sub)
    _claude_run(box, cwd=sub)
    [result] = box.tool_results()
    assert "store_not_found" in result
    assert f"lwc serve --mcp --path {box.project}" in result
    assert not (sub / ".lwc").exists()


def test_claude_code_local_scope_entry_is_seen(box: Box) -> None:
    """Issue 15 #3 against the real host: `claude mcp add` (local scope by default) writes an
    `lwc` entry that Claude prefers; status shows it and install says so."""
    box.host("claude", "mcp", "add", "lwc", "--", "/bin/false")
    status = box.lwc("agent", "status", "claude-code")["configs"]
    [local] = [row for row in status if row["scope"] == "local"]
    assert local["entry"]["command"] == "/bin/false"
    assert local["state"] == "broken"  # /bin/false is not lwc
    result = box.lwc("agent", "install", "claude-code", "--project")
    assert any("claude mcp remove lwc -s local" in w for w in result["warnings"])
    assert "claude_local_entry" in {g["gate"] for g in result["gates"]}


# ---------------------------------------------------------------------------- Codex CLI


def _codex_run(box: Box) -> None:
    _codex_session(box)
    box.assert_tool_result_reached_model()


def _codex_session(box: Box) -> None:
    provider = (
        '{name="fake model (test)",base_url="' + box.base_url + '/v1",'
        'wire_api="responses",env_key="FAKE_MODEL_KEY"}'
    )
    box.host(
        "codex",
        "exec",
        "--skip-git-repo-check",
        "-c",
        "model_provider=fake",
        # Codex sends the first turn after a short grace for optional servers; on a loaded CI
        # machine `lwc` can miss it (seen once in about ten runs), so wait for it here.
        "-c",
        "mcp_optional_startup_grace_ms=60000",
        "-c",
        f"model_providers.fake={provider}",
        "-m",
        "fake-model",
        f"Use lwc to look up {WORD}.",
        FAKE_MODEL_KEY="fake",
    )


def test_codex_user_scope(box: Box) -> None:
    """~/.codex/config.toml (created 0600): listed as enabled, and called in a session."""
    result = _install(box, "codex", "user")
    assert (Path(result["file"]).stat().st_mode & 0o777) == 0o600
    assert box.gates("codex", "user") == []
    _listed(box, "codex", "enabled")
    _codex_run(box)


def test_codex_project_scope(box: Box) -> None:
    """.codex/config.toml counts only in a trusted project: not listed before, listed and
    called once the project is trusted the way Codex's own prompt records it."""
    _install(box, "codex", "project")
    assert box.gates("codex", "project") == ["codex_project_trust"]
    assert "lwc" not in box.host("codex", "mcp", "list")
    user_config = box.home / ".codex" / "config.toml"
    user_config.parent.mkdir(exist_ok=True)
    with user_config.open("a") as handle:
        handle.write(f'\n[projects."{box.project}"]\ntrust_level = "trusted"\n')
    assert box.gates("codex", "project") == []
    _listed(box, "codex", "enabled")
    _codex_run(box)


# ---------------------------------------------------------------------------- Gemini CLI


def _gemini_trust(box: Box) -> None:
    """What choosing "Trust folder" in Gemini CLI's dialog writes."""
    rules = box.home / ".gemini" / "trustedFolders.json"
    rules.parent.mkdir(exist_ok=True)
    rules.write_text(json.dumps({str(box.project): "TRUST_FOLDER"}, indent=2))


def _gemini_run(box: Box) -> None:
    _gemini_session(box)
    box.assert_tool_result_reached_model()


def _gemini_session(box: Box) -> None:
    # An API-key user has picked "Use Gemini API key" once; the key and base URL are env.
    settings = box.home / ".gemini" / "settings.json"
    value = json.loads(settings.read_text()) if settings.exists() else {}
    value["security"] = {"auth": {"selectedType": "gemini-api-key"}}
    value["privacy"] = {"usageStatisticsEnabled": False}
    settings.write_text(json.dumps(value, indent=2))
    box.host(
        "gemini",
        "-p",
        f"Use lwc to look up {WORD}.",
        "--approval-mode",
        "yolo",
        "-m",
        "gemini-2.5-flash",
        GOOGLE_GEMINI_BASE_URL=box.base_url,
        GEMINI_API_KEY="fake-model-test",
    )


@pytest.mark.parametrize("scope", ["project", "user"])
def test_gemini_cli(box: Box, scope: str) -> None:
    """Folder trust: Disabled in an untrusted folder (user scope too), which install and
    status report; Connected and callable once the folder is trusted."""
    result = _install(box, "gemini", scope)
    assert [g["gate"] for g in result["gates"]] == ["gemini_folder_trust"]
    assert "Disabled" in _line(box.host("gemini", "mcp", "list"))
    _gemini_trust(box)
    assert box.gates("gemini", scope) == []
    _listed(box, "gemini", "Connected")
    _gemini_run(box)


# ---------------------------------------------------------------------------- long answers
#
# A Wiki that looks like a real one (wiki/: Pages of 12,000-19,000 characters with headings,
# tables and fenced code, one in Chinese, and a short one), and questions whose passage sits
# beyond a Page's first 15,000 characters. Each host makes the calls in one session; the test
# then compares what the host handed its model with what lwc answered the same call.

DEEP_QUESTION = "how do I replay messages from the dead-letter queue"
DEEP_PAGE = "tidewater-runbook.md"
DEEP_PASSAGE = (
    "Replaying sends dead-lettered messages back to their source topic so the fixed consumer "
    "processes them again. Use `tidectl dlq replay`, never a hand-written consume-and-produce loop"
)
CJK_QUESTION = "如何重置消费者组的位移"
CJK_PAGE = "tidewater-zh.md"
CJK_PASSAGE = (
    "重置位移之前必须先停止该消费者组的所有成员。组内只要还有一个活跃成员，Broker 就会拒绝"
    "重置请求，并返回 `group_not_empty` 错误"
)
LWC_PAGE_CAP = 15_000  # SPEC §2: a Page's body is at most its first 15,000 characters

# What each host puts in front of its model instead of (or around a cut of) a long tool
# result, as their pinned releases write it (the strings are in their bundles).
CUT_MARKERS = {
    # Claude Code 2.1.197: a result over its limit goes to a file, the model gets a notice
    # with a 2 KB preview; over MAX_MCP_OUTPUT_TOKENS the text is cut with a notice.
    "claude": (
        "<persisted-output>",
        "Output too large (",
        "Full output saved to: ",
        "[OUTPUT TRUNCATED - exceeded ",
    ),
    # Codex CLI 0.171: the middle of a result over its truncation policy is replaced.
    "codex": (
        " tokens truncated\N{HORIZONTAL ELLIPSIS}",
        " chars truncated\N{HORIZONTAL ELLIPSIS}",
        "Warning: truncated output (original token count: ",
    ),
    # Gemini CLI 0.61: a text over truncateToolOutputThreshold keeps its first 20 % and its
    # last 80 %, the whole goes to a file.
    "gemini": (
        "Output too large. Showing first ",
        " characters omitted] ...",
        "For full output see: ",
    ),
}

# How each host wraps a tool result it passes on whole (its own header, not a cut).
ENVELOPES = {
    "claude": re.compile(r"(?P<answer>.*)", re.DOTALL),
    "codex": re.compile(r"Wall time: [0-9.]+ seconds\nOutput:\n(?P<answer>.*)", re.DOTALL),
    "gemini": re.compile(r"<untrusted_context>\n(?P<answer>.*)\n</untrusted_context>", re.DOTALL),
}

CLAUDE_DEFAULT_RESULT_CHARS = 50_000  # an MCP tool's result above this is saved to a file
CLAUDE_RESULT_CHARS_CEILING = 500_000  # what _meta["anthropic/maxResultSizeChars"] can raise it to


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def _without_timings(answer: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in answer.items() if key != "timings"}


def _first_difference(got: Any, want: Any, path: str = "$") -> str:
    """Where two JSON values first differ, and how (for a failure message)."""
    if isinstance(got, dict) and isinstance(want, dict):
        for key in dict.fromkeys([*got, *want]):
            if got.get(key) != want.get(key):
                return _first_difference(got.get(key), want.get(key), f"{path}.{key}")
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        for index, (a, b) in enumerate(zip(got, want, strict=True)):
            if a != b:
                return _first_difference(a, b, f"{path}[{index}]")
    return f"{path}: the host passed {str(got)[:160]!r}, lwc answers {str(want)[:160]!r}"


def _problems(
    received: str, answered: str, passage: str | None, envelope: re.Pattern[str]
) -> list[str]:
    """What keeps `received` (what a host handed its model) from being lwc's `answered` text
    whole: a host notice or cut, a wrapper other than the host's own, JSON that does not parse
    or is not lwc's answer, or the passage missing. Empty when it arrived whole."""
    found = [marker for host in CUT_MARKERS.values() for marker in host if marker in received]
    if found:
        return [f"cut or spilled {found}: {received[:400]!r} ... {received[-200:]!r}"]
    wrapped = envelope.fullmatch(received)
    if wrapped is None:
        return [f"wrapped unexpectedly: {received[:300]!r}"]
    try:
        answer = json.loads(wrapped["answer"])
    except ValueError as error:
        return [f"broken JSON: {error}"]
    problems = []
    if _without_timings(answer) != _without_timings(json.loads(answered)):
        where = _first_difference(_without_timings(answer), _without_timings(json.loads(answered)))
        problems.append(f"not the answer lwc gives to the same call (first difference: {where})")
    wanted = _squeeze(passage or "")
    if passage is not None and not any(wanted in _squeeze(text) for text in _strings(answer)):
        problems.append(f"the passage {passage[:40]!r}... is not in the answer")
    return problems


def _long_session(
    box: Box, host: str, asks: list[tuple[dict[str, Any], str]], *, dev_set: bool = False
) -> None:
    """Put the long Pages (or, `dev_set`, the jest documentation) into the Wiki, install lwc
    for `host` at user scope, clear its gate, run one headless session making the calls of
    `asks` (arguments, passage), then check each result against lwc's own answer to the same
    call."""
    calls = [arguments for arguments, _ in asks]
    if dev_set:
        box.add_dev_set()
    else:
        box.add_long_pages()
    box.script(calls)
    if host == "claude":
        _install(box, "claude-code", "user")
        _claude_run(box)
    elif host == "codex":
        _install(box, "codex", "user")
        _codex_session(box)
    else:
        _install(box, "gemini", "user")
        _gemini_trust(box)
        _gemini_session(box)
    received = box.last_tool_results()
    assert len(received) == len(calls), (
        f"{host} sent {len(received)} of {len(calls)} results; requests: "
        + box.model_log.read_text()[:2000]
    )
    _, answered = box.lwc_directly(calls)
    passages = [passage for _, passage in asks]
    report = []
    for arguments, text, answer, passage in zip(calls, received, answered, passages, strict=True):
        size = f"lwc answered {len(answer):,} characters, {len(answer.encode()):,} bytes"
        report += [
            f"{host}, {arguments['query']!r} ({size}): {problem}"
            for problem in _problems(text, answer, passage, ENVELOPES[host])
        ]
    assert not report, "\n".join(report)


def test_the_long_wiki_is_long() -> None:
    """The fixture keeps what the host tests rely on: long Markdown Pages with code, one in
    Chinese, and each question's passage beyond the first 15,000 characters of its Page."""
    pages = {path.name: path.read_text(encoding="utf-8") for path in WIKI.glob("*.md")}
    long = [name for name, text in pages.items() if len(text) > LWC_PAGE_CAP]
    assert len(long) >= 3, {name: len(text) for name, text in pages.items()}
    assert all(pages[name].startswith("# ") and "```" in pages[name] for name in long)
    assert any(len(text) < 2_000 for text in pages.values())  # and a short one
    for page, passage in ((DEEP_PAGE, DEEP_PASSAGE), (CJK_PAGE, CJK_PASSAGE)):
        found = re.search(r"\s+".join(map(re.escape, passage.split())), pages[page])
        assert found is not None, page
        assert found.start() > LWC_PAGE_CAP, (page, found.start())


@pytest.mark.parametrize("host", ["claude", "codex", "gemini"])
def test_the_cut_markers_are_the_hosts_own(host: str) -> None:
    """Each notice the long-answer tests look for is in the pinned host's own program, so a
    new release that words it differently fails here instead of passing those tests unseen."""
    package = {
        "claude": "@anthropic-ai/claude-code",
        "codex": "@openai",  # the launcher and its native codex-<platform> package
        "gemini": "@google/gemini-cli",
    }[host]
    wanted = {marker.encode() for marker in CUT_MARKERS[host]}
    for path in sorted((Path(HOSTS_BIN).parent / package).rglob("*")):
        if not wanted:
            break
        if not path.is_file() or path.is_symlink() or path.stat().st_size == 0:
            continue
        with (
            path.open("rb") as handle,
            mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data,
        ):
            wanted = {marker for marker in wanted if data.find(marker) < 0}
    assert not wanted, f"not in {package}: {wanted}"


@pytest.mark.parametrize("host", ["claude", "codex", "gemini"])
def test_long_pages_reach_the_model_whole(box: Box, host: str) -> None:
    """Issue 22 #1: with the default budget, a question about a passage deep in a long Page,
    and one in Chinese, reach each host's model whole — no spill notice, no cut, the JSON
    parses and equals lwc's answer, and the passage is in it."""
    project = str(box.project)
    asks = [
        ({"query": DEEP_QUESTION, "projectPath": project}, DEEP_PASSAGE),
        ({"query": CJK_QUESTION, "projectPath": project}, CJK_PASSAGE),
    ]
    _long_session(box, host, asks)


@pytest.mark.skipif(
    not (DEV_SET / "pages.jsonl").is_file(),
    reason="the public documentation set (../shared/data/docs) is not beside this checkout",
)
@pytest.mark.parametrize("host", ["claude", "codex", "gemini"])
def test_a_real_documentation_tree_reaches_the_model_inline(box: Box, host: str) -> None:
    """Issue 37 #6: the jest documentation imported with `lwc page import`; for two agent
    questions (verbatim from the set) whose key sentence lies deep in a long Page, the default
    answer reaches each host's model whole, with that sentence in it."""
    questions = {
        item["id"]: item
        for line in (DEV_SET / "questions.jsonl").read_text(encoding="utf-8").splitlines()
        if (item := json.loads(line))
    }
    project = str(box.project)
    asks = [
        ({"query": questions[qid]["question"], "projectPath": project}, questions[qid]["spans"][0])
        for qid in DEV_QUESTIONS
    ]
    _long_session(box, host, asks, dev_set=True)


def test_claude_code_gets_a_large_answer_inline(box: Box) -> None:
    """Issue 22 #3: an agent that asks for the largest answer (maxTokens at its maximum) gets
    one over Claude Code's default 50,000-character limit, and Claude Code hands it to its
    model inline, because lwc's tools/list entry declares it in
    `_meta["anthropic/maxResultSizeChars"]`."""
    box.add_long_pages()
    tool, _ = box.lwc_directly([])
    budget = tool.input_schema["properties"].get("maxTokens")
    assert budget is not None, "lwc_explore has no maxTokens input"
    ask = {
        "query": "Tidewater broker partitions consumer group offsets",
        "projectPath": str(box.project),
        "maxTokens": budget["maximum"],
    }
    _, [answered] = box.lwc_directly([ask])
    assert len(answered) > CLAUDE_DEFAULT_RESULT_CHARS, (
        f"the largest answer is {len(answered):,} characters: it does not test the _meta"
    )
    declared = (tool.meta or {}).get("anthropic/maxResultSizeChars")
    assert isinstance(declared, int), tool.meta
    assert len(answered) <= min(declared, CLAUDE_RESULT_CHARS_CEILING), declared
    box.script([ask])
    _install(box, "claude-code", "user")
    _claude_run(box)
    [received] = box.last_tool_results()
    problems = _problems(received, answered, None, ENVELOPES["claude"])
    assert not problems, problems


@pytest.mark.skipif(
    not Path(CODEGRAPH_BINARY).is_file(), reason="needs LWC_TEST_CODEGRAPH_BINARY (CodeGraph 1.6.1)"
)
def test_codex_gets_a_code_and_memory_answer_whole(box: Box) -> None:
    """Issue 22 #1 and #6: a mode `all` answer (Page passages and CodeGraph's text in one
    default budget) reaches Codex's model whole. Codex's limit (about 12,000 bytes for a model
    it does not know) is the smallest of the three hosts', in bytes, so an answer that passes
    here is under Claude Code's 50,000 and Gemini CLI's 40,000 characters too."""
    # The runtime where `lwc cg install` puts it, and an index of real code: this checkout's
    # memory plane, copied into the project.
    modules = Path(CODEGRAPH_BINARY).resolve().parents[3]  # .../node_modules/@scope/pkg/bin/x
    runtime = runtime_dir(box.home)
    runtime.mkdir(parents=True)
    (runtime / "node_modules").symlink_to(modules, target_is_directory=True)
    source = box.project / "src"
    source.mkdir()
    for module in sorted((REPO / "lwc_trio" / "memory").glob("*.py")):
        (source / module.name).write_text(module.read_text(encoding="utf-8"), encoding="utf-8")
    box.lwc("--scope", "project", "cg", "init")
    box.add_long_pages()
    ask = {
        "query": "how are consumer group offsets committed, and how is search ranked",
        "projectPath": str(box.project),
        "mode": "all",
    }
    _, [answered] = box.lwc_directly([ask])
    assert json.loads(answered)["codeGraph"]["state"] == "ready", answered[-600:]
    box.script([ask])
    _install(box, "codex", "user")
    _codex_session(box)
    [received] = box.last_tool_results()
    size = f"lwc answered {len(answered):,} characters, {len(answered.encode()):,} bytes"
    problems = _problems(received, answered, None, ENVELOPES["codex"])
    assert not problems, (size, problems)
