"""Long CJK and Hindi Pages: import and questions through `lwc serve --mcp`, against English
Pages of the same shape in the same run.

    scripts/bench cjk [--pages 24] [--questions 12] [--json]

Three deterministic Wikis of `--pages` Pages, each 30 sections of about 1,800 characters (in
Chinese): one Chinese (CJK words from a fixed vocabulary, with punctuation; about 54,000
characters and 160 kB a Page), one English and one Hindi, word for word the same vocabulary
translated (the English one has about 5 times fewer terms: a CJK run indexes each character
and each pair; the Hindi one is Devanagari, three UTF-8 bytes a character, with vowel signs
and viramas inside its words). Each is imported with `lwc page import` (timed), then served
by one `lwc serve --mcp`, and asked the same `--questions` (vocabulary pairs) at
`maxDocuments` 20, so that every question's best hits are all long Pages: the first question
analyses them, the later ones find their analyses kept.

Checks: the Chinese and the Hindi Wiki's later questions each take at most `RATIO_MAX` of
the English ones' (median), and every answer carries Pages. Before this scenario, twenty
results' snippets of 90 CJK characters took the default budget, and every Chinese answer came
without a Page; and where Pages came, their analyses did not fit their budget and each
question analysed them again. Before format 7, every Hindi answer came without a Page too
(its snippets cost 270 units, and its long paragraphs had no sentence end to be cut at) and
a later question took 307 ms, mostly because its words were split at their vowel signs and
its queries matched one-letter pieces (docs/benchmarks.md, "Long CJK Pages"). That split is
held by the search tests, not by this scenario, which checks no ranking. Exit 0 when all
hold, 1 when not.
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

RATIO_MAX: Final = {"chinese": 3.0, "hindi": 4.0}
"""The Chinese or Hindi Wiki's later questions, median, over the English Wiki's at most. The
Hindi Pages hold about three times the English ones' UTF-8 bytes (Devanagari is three bytes
a character), and SQLite reads a Page's row whole, whatever of it is read: in process, about
20 ms of a Hindi question's 45 ms (docs/benchmarks.md, "Long CJK Pages")."""
LANGUAGES: Final = ("chinese", "english", "hindi")
"""The Wikis, by `lang` index into each `VOCABULARY` and `GLUE` entry."""
SECTIONS: Final = 30
SECTION_CHARS: Final = 1_800
VOCABULARY: Final = (
    ("配置", "config", "विन्यास"),
    ("缓存", "cache", "कैश"),
    ("索引", "index", "सूचकांक"),
    ("查询", "query", "प्रश्न"),
    ("版本", "version", "संस्करण"),
    ("依赖", "dependency", "निर्भरता"),
    ("测试", "test", "परीक्षण"),
    ("文件", "file", "फ़ाइल"),
    ("目录", "directory", "निर्देशिका"),
    ("模块", "module", "मॉड्यूल"),
    ("接口", "interface", "इंटरफ़ेस"),
    ("错误", "error", "त्रुटि"),
    ("日志", "log", "लॉग"),
    ("权限", "permission", "अनुमति"),
    ("网络", "network", "नेटवर्क"),
    ("数据库", "database", "डेटाबेस"),
    ("线程", "thread", "थ्रेड"),
    ("进程", "process", "प्रक्रिया"),
    ("内存", "memory", "स्मृति"),
    ("性能", "performance", "प्रदर्शन"),
    ("部署", "deploy", "परिनियोजन"),
    ("构建", "build", "निर्माण"),
    ("发布", "release", "रिलीज़"),
    ("插件", "plugin", "प्लगइन"),
    ("命令", "command", "आदेश"),
    ("参数", "argument", "तर्क"),
    ("选项", "option", "विकल्प"),
    ("路径", "path", "पथ"),
    ("用户", "user", "उपयोगकर्ता"),
    ("会话", "session", "सत्र"),
    ("请求", "request", "अनुरोध"),
    ("响应", "response", "प्रतिक्रिया"),
    ("超时", "timeout", "समयसीमा"),
    ("重试", "retry", "पुनःप्रयास"),
    ("队列", "queue", "कतार"),
    ("事务", "transaction", "लेनदेन"),
    ("签名", "signature", "हस्ताक्षर"),
    ("证书", "certificate", "प्रमाणपत्र"),
    ("镜像", "image", "छवि"),
    ("容器", "container", "कंटेनर"),
)
"""Chinese words, their English and Hindi translations: the Wikis say the same things."""
GLUE: Final = (
    ("的", "of", "का"), ("和", "and", "और"), ("在", "in", "में"), ("使用", "uses", "उपयोग करता है"),
    ("需要", "needs", "चाहिए"),
)  # fmt: skip
SPACES: Final = ("", " ", " ")
"""What joins words, by `lang`."""
STOPS: Final = ("。", ". ", "। ")
"""What ends a sentence, by `lang`."""


Sentence = list[tuple[int, int]]
"""A sentence as draws: (vocabulary word, glue word) pairs, the last glue dropped."""


def _render(sentence: Sentence, lang: int) -> str:
    words = [w for word, glue in sentence for w in (VOCABULARY[word][lang], GLUE[glue][lang])]
    return SPACES[lang].join(words[:-1]) + STOPS[lang]


def _draws(n: int, seed: int) -> list[list[list[Sentence]]]:
    """Each Page's sections' sentences, drawn until the Chinese section has `SECTION_CHARS`
    characters: the English and Hindi Pages say the same, word for word."""
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
    """`n` long Pages in Chinese (`lang` 0), English (1) or Hindi (2): the same draws for
    each."""
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
    """`n` questions, each two vocabulary words (the same pairs in every language)."""
    rng = random.Random(seed)
    pairs = [rng.sample(VOCABULARY, 2) for _ in range(n)]
    return [SPACES[lang].join(pair[k][lang] for k in (0, 1)) for pair in pairs]


def run(lang: int, n_pages: int, n_questions: int, log: Any) -> dict[str, Any]:
    """Import one Wiki and ask it every question; the figures."""
    name = LANGUAGES[lang]
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
    size = sum(len(row["body"].encode()) for row in rows) // n_pages
    return {
        "wiki": name, "page_chars": chars, "page_bytes": size, "import_s": round(import_s, 2),
        "first_ms": round(times[0], 1), "later_p50_ms": round(median(times[1:]), 1),
        "later_max_ms": round(max(times[1:]), 1), "without_pages": bare,
    }  # fmt: skip


def report(result: dict[str, Any]) -> None:
    rows = [
        [r["wiki"], f"{r['page_chars']:,}", f"{r['page_bytes']:,}", r["import_s"], r["first_ms"],
         r["later_p50_ms"],
         r["later_max_ms"], r["without_pages"]]
        for r in result["runs"]
    ]  # fmt: skip
    headers = ["Wiki", "chars a Page", "bytes a Page", "import s", "first question ms",
               "later p50 ms", "max ms", "answers without Pages"]  # fmt: skip
    print(markdown_table(headers, rows, "lrrrrrrr"))
    print()
    for name, ratio in result["ratios"].items():
        verdict = "met" if ratio <= RATIO_MAX[name] else "MISSED"
        print(f"{verdict}: later questions, {name.capitalize()} over English {ratio:.2f} "
              f"(at most {RATIO_MAX[name]})")  # fmt: skip
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
    runs = [run(lang, args.pages, args.questions, log) for lang in range(len(LANGUAGES))]
    english = max(runs[LANGUAGES.index("english")]["later_p50_ms"], 0.1)
    ratios = {
        r["wiki"]: round(r["later_p50_ms"] / english, 2) for r in runs if r["wiki"] != "english"
    }
    bare = sum(r["without_pages"] for r in runs)
    passed = all(ratio <= RATIO_MAX[name] for name, ratio in ratios.items()) and not bare
    result = {"runs": runs, "ratios": ratios, "pass": passed, "machine": machine()}
    return emit(result, args.json, report)
