"""Answers an agent can read, over the real `lwc serve --mcp` with the `mcp` SDK's client: a
Wiki of long Pages (Markdown sections, fenced code, one in CJK) gives default answers whose text
block stays under the ~11,000 bytes every supported host shows whole, with the passage that
answers the question in it (SPEC §2 "Budget", §4 "Pages")."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import lwc_command, sdk_client

from lwc_trio.protocol.tool import MAX_RESULT_CHARS

pytestmark = pytest.mark.slow

INLINE_BYTES = 11_000


def put(cwd: Path, env: dict[str, str], slug: str, title: str, body: str) -> None:
    file = cwd / f"{slug}.md"
    file.write_text(body, encoding="utf-8")
    done = subprocess.run(
        lwc_command("page", "put", slug, "--title", title, "--file", str(file)),
        cwd=cwd, env=env, capture_output=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    file.unlink()


def sections(topic: str, count: int, needle_at: int, needle: str) -> str:
    parts = [f"# {topic} handbook\n"]
    for i in range(count):
        parts.append(f"## Chapter {i}\n")
        parts.append(f"General remarks on {topic} procedures, chapter {i}. " * 40)
        parts.append(f"```python\ndef step_{i}(x):\n    return x + {i}\n```")
        if i == needle_at:
            parts.append(needle)
    return "\n\n".join(parts)


@pytest.fixture
def wiki(workspace: Path, lwc_env: dict[str, str]) -> Path:
    done = subprocess.run(lwc_command("init"), cwd=workspace, env=lwc_env, capture_output=True,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    put(
        workspace,
        lwc_env,
        "deploy",
        "Deploy handbook",
        sections(
            "deploy", 30, 23, "To roll back a release run `lwc deploy rollback --to PREVIOUS`."
        ),
    )
    put(
        workspace,
        lwc_env,
        "storage",
        "Storage handbook",
        sections("storage", 30, 4, "Snapshots are pruned after 45 days by the janitor."),
    )
    cjk = "\n\n".join(
        [f"## 第{i}章\n\n" + "系统运行稳定，日志记录完整。" * 120 for i in range(12)]
        + ["## 回滚\n\n回滚发布时请执行回退命令并检查监控面板。"]
    )
    put(workspace, lwc_env, "cjk-ops", "运维手册", cjk)
    return workspace


async def call(cwd: Path, env: dict[str, str], arguments: dict[str, Any]) -> tuple[str, Any]:
    async with sdk_client(cwd, env) as client:
        tools = await client.list_tools()
        result = await client.call_tool("lwc_explore", arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    return text, tools


async def test_default_answers_fit_every_host_and_carry_the_passage(
    wiki: Path, lwc_env: dict[str, str]
) -> None:
    text, tools = await call(wiki, lwc_env, {"query": "how do I roll back a release",
                                             "projectPath": str(wiki)})  # fmt: skip
    assert len(text.encode("utf-8")) < INLINE_BYTES
    answer = json.loads(text)
    assert next(iter(answer)) == "memory"  # the answer first, the echoes after
    pages = answer["memory"]["pages"]
    deploy = next(p for p in pages if p["slug"] == "deploy")
    assert "lwc deploy rollback --to PREVIOUS" in deploy["body"]
    assert deploy["truncated"] is True
    assert deploy["outline"][:2] == ["## Chapter 0", "## Chapter 1"]  # no Page title
    assert deploy["outline"][-1].endswith("more headings")
    assert deploy["more"] == "[[deploy]]"
    entry = tools.tools[0]
    assert entry.meta == {"anthropic/maxResultSizeChars": MAX_RESULT_CHARS}
    assert entry.input_schema["properties"]["maxTokens"]["type"] == "integer"


async def test_cjk_answer_fits_in_bytes(wiki: Path, lwc_env: dict[str, str]) -> None:
    text, _ = await call(wiki, lwc_env, {"query": "回滚发布", "projectPath": str(wiki)})
    assert len(text.encode("utf-8")) < INLINE_BYTES
    pages = json.loads(text)["memory"]["pages"]
    assert any("回滚发布时请执行回退命令" in p["body"] for p in pages)


async def test_a_cut_page_is_read_on_with_the_call_it_names(
    wiki: Path, lwc_env: dict[str, str]
) -> None:
    """`[[slug]]` reads a Page from its start; `more` continues it, until the end."""
    query, seen = "[[storage]]", []
    for _ in range(20):
        text, _ = await call(wiki, lwc_env, {"query": query, "projectPath": str(wiki),
                                             "maxTokens": 20_000})  # fmt: skip
        (page,) = json.loads(text)["memory"]["pages"]
        seen.append(page["body"])
        if "more" not in page:
            break
        query = page["more"]
    assert len(seen) > 1
    assert "Snapshots are pruned after 45 days" in "".join(seen)
    assert seen[-1].rstrip().endswith("```")  # the Page's last section reached
