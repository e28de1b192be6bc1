"""Long CJK Pages: import and questions through `lwc serve --mcp`, against English Pages of
the same shape in the same run.

    scripts/bench cjk [--pages 24] [--questions 12] [--json]

Two deterministic Wikis of `--pages` Pages, each 30 sections of about 1,800 characters: one
Chinese (CJK words from a fixed vocabulary, with punctuation; about 54,000 characters and
160 kB a Page), one English, word for word the same vocabulary translated (about 5 times
fewer terms: a CJK run indexes each character and each pair). Each is imported with `lwc page
import` (timed), then served by one `lwc serve --mcp`, and asked the same `--questions`
(vocabulary pairs) at `maxDocuments` 20, so that every question's best hits are all long
Pages: the first question analyses them, the later ones find their analyses kept.

Checks: the Chinese Wiki's later questions take at most `RATIO_MAX` times the English ones'
(median), and every answer carries Pages. Before this scenario, twenty results' snippets of
90 CJK characters took the default budget, and every Chinese answer came without a Page;
and where Pages came, their analyses did not fit their budget and each question analysed
them again (docs/benchmarks.md, "Long CJK Pages"). Exit 0 when both hold, 1 when not.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Sequence
from typing import Any, Final

from benchmarks.fixtures import logger, lwc_cli, private_env, scratch
from benchmarks.messages import INITIALIZED, initialize
from benchmarks.scenarios.memory import Session
from benchmarks.stats import median
from benchmarks.table import emit, machine, machine_line, markdown_table

RATIO_MAX: Final = 3.0
"""The Chinese Wiki's later questions, median, over the English Wiki's."""
SECTIONS: Final = 30
SECTION_CHARS: Final = 1_800
VOCABULARY: Final = (
    ("配置", "config"), ("缓存", "cache"), ("索引", "index"), ("查询", "query"),
    ("版本", "version"), ("依赖", "dependency"), ("测试", "test"), ("文件", "file"),
    ("目录", "directory"), ("模块", "module"), ("接口", "interface"), ("错误", "error"),
    ("日志", "log"), ("权限", "permission"), ("网络", "network"), ("数据库", "database"),
    ("线程", "thread"), ("进程", "process"), ("内存", "memory"), ("性能", "performance"),
    ("部署", "deploy"), ("构建", "build"), ("发布", "release"), ("插件", "plugin"),
    ("命令", "command"), ("参数", "argument"), ("选项", "option"), ("路径", "path"),
    ("用户", "user"), ("会话", "session"), ("请求", "request"), ("响应", "response"),
    ("超时", "timeout"), ("重试", "retry"), ("队列", "queue"), ("事务", "transaction"),
    ("签名", "signature"), ("证书", "certificate"), ("镜像", "image"), ("容器", "container"),
)  # fmt: skip
"""Chinese words and their English translations: the two Wikis say the same things."""
GLUE: Final = (("的", "of"), ("和", "and"), ("在", "in"), ("使用", "uses"), ("需要", "needs"))


Sentence = list[tuple[int, int]]
"""A sentence as draws: (vocabulary word, glue word) pairs, the last glue dropped."""


def _render(sentence: Sentence, lang: int) -> str:
    words = [w for word, glue in sentence for w in (VOCABULARY[word][lang], GLUE[glue][lang])]
    return ("" if lang == 0 else " ").join(words[:-1]) + ("。" if lang == 0 else ". ")


def _draws(n: int, seed: int) -> list[list[list[Sentence]]]:
    """Each Page's sections' sentences, drawn until the Chinese section has `SECTION_CHARS`
    characters: the English Page says the same, word for word."""
    rng = random.Random(seed)
    out = []
    for _page in range(n):
        sections = []
        for _section in range(SECTIONS):
            sentences: list[Sentence] = []
            chars = 0
            while chars < SECTION_CHARS:
                sentence = [
                    (rng.randrange(len(VOCABULARY)), rng.randrange(len(GLUE)))
                    for _ in range(rng.randint(4, 9))
                ]
                sentences.append(sentence)
                chars += len(_render(sentence, 0))
            sections.append(sentences)
        out.append(sections)
    return out


def pages(n: int, lang: int, seed: int = 37) -> list[dict[str, str]]:
    """`n` long Pages in Chinese (`lang` 0) or English (1): the same draws for both."""
    out = []
    for i, sections in enumerate(_draws(n, seed)):
        texts = []
        for j, sentences in enumerate(sections):
            heading = f"{VOCABULARY[(i + j) % len(VOCABULARY)][lang]} {j}"
            text = "".join(_render(sentence, lang) for sentence in sentences).strip()
            texts.append(f"## {heading}\n\n{text}\n")
        title = VOCABULARY[i % len(VOCABULARY)][lang]
        out.append({"slug": f"page-{i}", "title": title, "body": "\n".join(texts)})
    return out


def questions(n: int, lang: int, seed: int = 38) -> list[str]:
    """`n` questions, each two vocabulary words (the same pairs in both languages)."""
    rng = random.Random(seed)
    pairs = [rng.sample(VOCABULARY, 2) for _ in range(n)]
    return [("" if lang == 0 else " ").join(pair[k][lang] for k in (0, 1)) for pair in pairs]


def run(lang: int, n_pages: int, n_questions: int, log: Any) -> dict[str, Any]:
    """Import one Wiki and ask it every question; the figures."""
    name = ("chinese", "english")[lang]
    with scratch(f"lwc-cjk-{name}-") as root:
        home, ws = root / "home", root / "ws"
        home.mkdir()
        ws.mkdir()
        env = private_env(home)
        lwc_cli(["init", "--no-git-exclude"], env, ws)
        rows = pages(n_pages, lang)
        jsonl = root / "pages.jsonl"
        jsonl.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
        started = time.perf_counter()
        imported = lwc_cli(["page", "import", str(jsonl)], env, ws)
        import_s = time.perf_counter() - started
        if imported.get("created") != n_pages:
            raise SystemExit(f"cjk: {name} import created {imported}, not {n_pages} pages")
        log(f"{name}: {n_pages} pages imported in {import_s:.2f} s")
        session = Session(ws, home)
        times: list[float] = []
        bare = 0
        try:
            session.call("initialize", initialize(0)["params"])
            session.notify(INITIALIZED)
            for text in questions(n_questions, lang):
                arguments = {
                    "query": text, "projectPath": str(ws), "mode": "memory",
                    "scope": "project", "maxDocuments": 20,
                }  # fmt: skip
                ms, reply = session.call(
                    "tools/call", {"name": "lwc_explore", "arguments": arguments}
                )
                memory = json.loads(reply["result"]["content"][0]["text"])["memory"]
                if memory["state"] != "ready" or not memory["results"]:
                    raise SystemExit(f"cjk: {name} {text!r} found nothing: {str(memory)[:300]}")
                if not memory.get("pages"):  # ranked, but no body came
                    bare += 1
                    log(f"{name}: {text!r} came without Pages ({len(memory['results'])} results)")
                times.append(ms)
        finally:
            session.close()
    chars = sum(len(row["body"]) for row in rows) // n_pages
    return {
        "wiki": name, "page_chars": chars, "import_s": round(import_s, 2),
        "first_ms": round(times[0], 1), "later_p50_ms": round(median(times[1:]), 1),
        "later_max_ms": round(max(times[1:]), 1), "without_pages": bare,
    }  # fmt: skip


def report(result: dict[str, Any]) -> None:
    rows = [
        [r["wiki"], f"{r['page_chars']:,}", r["import_s"], r["first_ms"], r["later_p50_ms"],
         r["later_max_ms"], r["without_pages"]]
        for r in result["runs"]
    ]  # fmt: skip
    headers = ["Wiki", "chars a Page", "import s", "first question ms", "later p50 ms", "max ms",
               "answers without Pages"]  # fmt: skip
    print(markdown_table(headers, rows, "lrrrrrr"))
    verdict = "met" if result["ratio"] <= RATIO_MAX else "MISSED"
    print(f"\n{verdict}: later questions, Chinese over English {result['ratio']:.2f} "
          f"(at most {RATIO_MAX})")  # fmt: skip
    bare = sum(r["without_pages"] for r in result["runs"])
    print(f"{'met' if not bare else 'MISSED'}: every answer carries Pages ({bare} without)")
    print(machine_line(result["machine"]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pages", type=int, default=24)
    parser.add_argument("--questions", type=int, default=12)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.pages < 2 or args.questions < 2:
        parser.error("--pages and --questions: at least 2")
    log = logger("cjk", quiet=args.json)
    runs = [run(lang, args.pages, args.questions, log) for lang in (0, 1)]
    ratio = runs[0]["later_p50_ms"] / max(runs[1]["later_p50_ms"], 0.1)
    bare = sum(r["without_pages"] for r in runs)
    result = {"runs": runs, "ratio": round(ratio, 2), "pass": ratio <= RATIO_MAX and not bare,
              "machine": machine()}  # fmt: skip
    return emit(result, args.json, report)
