"""CodeGraph's explore text is cut to a room by one rule (SPEC §5): the 15,000-character cap and
the budget alike keep source whenever CodeGraph sent any. Most cases cut answers the real
CodeGraph 1.6.1 gave (tests/data/codegraph/, recorded by tests/codegraph_fixture.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from codegraph_fixture import DATA
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.scenarios.code_answers import source_lines
from lwc_trio.codegraph.explore_output import ready_state
from lwc_trio.protocol.arguments import ExploreArgs
from lwc_trio.protocol.code_text import (
    CUT_MARK,
    TEXT_LIMIT,
    fit_state,
    fit_text,
    source_files,
)
from lwc_trio.protocol.explore_result import build_result, dumps
from lwc_trio.protocol.units import cost, text_cost

LONG_SECTION = (DATA / "long_section.md").read_text(encoding="utf-8")
"""Lists, then one 15,000-character section of `pkg/ledger.py`: longer than the cap's room."""
LONG_LINE = (DATA / "long_line.md").read_text(encoding="utf-8")
"""`pkg/blob.py`, whose second source line is 15,015 characters, then an epilogue."""
DEFAULT_CODE_ROOM = 9_600
"""About the cost units a code answer's text gets at the default budget in mode code."""
ALL_CODE_ROOM = 4_800
"""About its share in mode all, with memory using the other half."""


def section(path: str, lines: int, width: int = 30) -> str:
    body = "".join(f"{n}\t{'x' * width}\n" for n in range(1, lines + 1))
    return f"**`{path}`** — f(function)\n\n```python\n{body}```\n\n"


def head_list(text: str, heading: str) -> list[str]:
    """The lines of the bulleted list under `heading` in `text`."""
    after = text.split(f"{heading}\n", 1)[1]
    return [line for line in after.split("\n\n", 1)[0].split("\n") if line.startswith("- ")]


def test_the_recordings_are_what_the_tests_say() -> None:
    """The recorded answers still have the shapes the cases below rely on."""
    assert len(LONG_SECTION) > TEXT_LIMIT
    start = LONG_SECTION.index("**`pkg/ledger.py`**")
    assert 0 < start < 2_000
    assert "**`" not in LONG_SECTION[start + 5 :]  # one file section
    assert len(head_list(LONG_SECTION, "**calls:**")) == 11  # ten edges and "... and 20 more"
    assert max(len(line) for line in LONG_LINE.split("\n")) > TEXT_LIMIT


def test_a_long_first_section_is_cut_inside_at_a_line_boundary() -> None:
    """The cap keeps whole source lines of a first section longer than its room."""
    state = ready_state(LONG_SECTION)
    text = state["text"]
    assert state["truncated"] is True
    assert len(text) <= TEXT_LIMIT
    assert len(text) >= TEXT_LIMIT // 2
    assert source_lines(text) >= 200
    assert state["files"] == ["pkg/ledger.py"]
    last = text.rstrip("\n").rsplit("\n", 1)[1]
    assert re.fullmatch(r"\d+\t.*", last)
    assert last + "\n" in LONG_SECTION  # a whole source line ends the text


def test_the_budget_keeps_source_of_a_long_first_section() -> None:
    """The budget's code room, in mode code and mode all, holds source lines of the long section."""
    capped = ready_state(LONG_SECTION)
    for room in (DEFAULT_CODE_ROOM, ALL_CODE_ROOM):
        state = fit_state(capped, room)
        assert text_cost(dumps(state["text"])) <= room
        assert source_lines(state["text"]) >= 20, room
        assert state["files"] == ["pkg/ledger.py"]
        assert state["truncated"] is True


def test_mode_all_fits_the_budget_with_memorys_page_beside_the_code() -> None:
    """Mode all keeps within the budget and keeps memory's Page: code text is measured escaped."""
    memory = {
        "state": "ready",
        "results": [{"identifier": "notes", "snippet": "ledger notes"}],
        "pages": [{"slug": "notes", "body": "Ledger notes. " * 140}],
        "graph": [],
        "stores": [],
    }
    args = ExploreArgs(query="ledger", projectPath="/ws", mode="all")
    out, _ = build_result(args, "/ws", memory, ready_state(LONG_SECTION), 3, 5)
    assert text_cost(dumps(out)) + 16 <= args.maxTokens * 4  # TIMINGS_ROOM kept for the digits
    assert out["memory"]["pages"]
    assert source_lines(out["codeGraph"]["text"]) >= 20


def test_relationship_lists_are_shortened_before_source_lines_are_dropped() -> None:
    """Lists go down to three items and a count of the rest before any source line goes."""
    calls = head_list(LONG_SECTION, "**calls:**")
    shortened = LONG_SECTION.replace(
        "\n".join(calls) + "\n", "\n".join([*calls[:3], "- ... and 27 more"]) + "\n"
    )
    assert len(shortened) < len(LONG_SECTION)
    kept, truncated = fit_text(LONG_SECTION, len(shortened))
    assert truncated
    assert kept == shortened
    assert source_lines(kept) == source_lines(LONG_SECTION)
    blast = "**Blast radius — what depends on these (update/verify before editing)**"
    assert head_list(kept, blast) == head_list(LONG_SECTION, blast)  # two items: within three


def test_lists_go_further_when_source_would_get_less_than_half_the_room() -> None:
    """In a small room the lists shrink (to one item, then away) until source has half of it."""
    for room in (3_000, 1_650, 1_400):
        kept, _ = fit_text(LONG_SECTION, room)
        assert len(kept) <= room
        assert source_lines(kept) >= 1, room
        head = kept.split("**`pkg/ledger.py`**", 1)[0]
        assert len(head) * 2 <= room
    kept, _ = fit_text(LONG_SECTION, 1_650)
    assert head_list(kept, "**calls:**") == ["- step_000 → settle", "- ... and 29 more"]
    kept, _ = fit_text(LONG_SECTION, 1_400)
    assert "**calls:**" not in kept
    assert "**Relationships**" not in kept
    assert "**Blast radius" not in kept
    assert "\n\nFound 30 symbols across 1 file.\n\n**Source Code**\n\n> The code below" in kept


def test_a_source_line_longer_than_the_room_is_cut_at_a_character_and_marked() -> None:
    """A 15,015-character source line is kept cut at a character and marked, under cap and budget."""
    state = ready_state(LONG_LINE)
    text = state["text"]
    assert len(text) <= TEXT_LIMIT
    assert text.endswith(CUT_MARK)
    assert len(text) > TEXT_LIMIT - 10
    assert state["files"] == ["pkg/blob.py"]
    assert LONG_LINE.split("\n2\t", 1)[1].startswith(text.split("\n2\t", 1)[1][: -len(CUT_MARK)])
    budget = fit_state(state, DEFAULT_CODE_ROOM)
    assert text_cost(dumps(budget["text"])) <= DEFAULT_CODE_ROOM
    assert budget["text"].endswith(CUT_MARK)
    assert '\n2\t    return "0000000001' in budget["text"]


def test_an_answer_that_is_one_40000_character_line_is_never_empty() -> None:
    """An answer of one 40,000-character line is cut and marked, never left empty, at any room."""
    state = ready_state("y" * 40_000)
    assert state["text"] == "y" * (TEXT_LIMIT - len(CUT_MARK)) + CUT_MARK
    for room in (DEFAULT_CODE_ROOM, ALL_CODE_ROOM, 3):
        fitted = fit_state(state, room)
        assert fitted["text"].startswith("y")
        assert fitted["text"].endswith(CUT_MARK)
        assert fitted["truncated"] is True
        if room > 10:
            assert text_cost(dumps(fitted["text"])) <= room


def test_the_epilogue_goes_before_any_file_section() -> None:
    """Over the room only by what follows the last section (pointers, notes): just that goes."""
    body = section("a.py", 40) + section("b.py", 40)
    epilogue = "**Not shown above — explore these names for their source**\n\n- c.py: f:1\n"
    text = "**Exploration: q**\n\n**Source Code**\n\n" + body + epilogue
    kept, truncated = fit_text(text, len(text) - 5)
    assert truncated
    assert kept == text[: text.index("**Not shown") - 1]  # up to the closing fence
    assert source_files(kept) == ["a.py", "b.py"]


def test_whole_sections_come_whole_when_they_fill_half_the_room() -> None:
    """The cut is at the last file section that fits when that keeps at least half the room."""
    head = "**Exploration: q**\n\n**Source Code**\n\n"
    sections = [section(f"pkg/m{n}.py", 100) for n in range(5)]
    text = head + "".join(sections)
    kept, truncated = fit_text(text, len(head) + 3 * len(sections[0]) + 50)
    assert truncated
    assert kept == head + "".join(sections[:3])
    assert source_files(kept) == ["pkg/m0.py", "pkg/m1.py", "pkg/m2.py"]


def test_a_section_boundary_below_half_the_room_gives_way_to_lines() -> None:
    """Two short sections then a long one: the cut goes on inside the long one, line by line."""
    text = section("a.py", 2) + section("b.py", 2) + section("c.py", 2_000)
    kept, _ = fit_text(text, 10_000)
    assert len(kept) > 9_900
    assert kept.endswith("\n")
    assert text.startswith(kept)
    assert source_files(kept) == ["a.py", "b.py", "c.py"]


def test_a_header_at_offset_zero_is_no_boundary() -> None:
    """A text that starts with its only long section is cut inside it, not before it."""
    text = section("huge.py", 4_000)
    kept, truncated = fit_text(text, TEXT_LIMIT)
    assert truncated
    assert 0 < len(kept) <= TEXT_LIMIT
    assert kept.endswith("\n")
    assert source_files(kept) == ["huge.py"]


def test_without_sections_the_cut_is_at_the_last_line_break() -> None:
    """No section header: keep whole lines up to the room."""
    lines = "".join(f"line {n:05d} " + "y" * 80 + "\n" for n in range(400))
    kept, truncated = fit_text(lines, TEXT_LIMIT)
    assert truncated
    assert kept.endswith("\n")
    assert TEXT_LIMIT - 100 < len(kept) <= TEXT_LIMIT
    assert lines.startswith(kept)


def test_a_section_starting_exactly_at_the_room_keeps_what_precedes_it() -> None:
    """Nothing of the section fits at all: the text before it is kept, unmarked."""
    filler = "x" * (TEXT_LIMIT - 1) + "\n"
    assert fit_text(filler + section("late.py", 3), TEXT_LIMIT) == (filler, True)


def test_the_cap_counts_code_points_and_the_budget_cost_units() -> None:
    """The cap counts code points; the budget counts cost units (UTF-8 bytes, escapes, CJK twice)."""
    text = "é" * TEXT_LIMIT
    assert fit_text(text, TEXT_LIMIT) == (text, False)
    cjk = "\n".join("系统运行稳定" * 10 for _ in range(100))
    state = fit_state({"state": "ready", "text": cjk, "truncated": False, "files": []}, 2_000)
    assert text_cost(dumps(state["text"])) <= 2_000
    assert text_cost(dumps(state["text"])) > 2_000 - 200


def test_files_lists_only_sections_whose_source_survives() -> None:
    """A header kept without any of its source lines is not listed; each path once, in order."""
    text = section("b.py", 1) + "**Relationships**\n" + section("a.py", 1) + section("b.py", 1)
    assert source_files(text) == ["b.py", "a.py"]
    assert source_files("**`c.py`** — f\n\n```python\n") == []


def test_protocol_imports_no_plane() -> None:
    """The sans-IO core imports neither plane (the budget fitter once came from codegraph/)."""
    protocol = Path(__file__).resolve().parents[1] / "lwc_trio" / "protocol"
    planes = ("lwc_trio.codegraph", "lwc_trio.memory", "lwc_trio.actors", "lwc_trio.cli")
    for path in sorted(protocol.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not [n for n in names if n.startswith(planes)], path.name


_LINE = st.one_of(
    st.from_regex(r"\d{1,4}\t[a-z ()=é系\"\\]{0,60}", fullmatch=True),
    st.from_regex(r"- [a-z_]{1,12} → [a-z_]{1,12}", fullmatch=True),
    st.from_regex(r"\*\*`[a-z]{1,8}/[a-z]{1,8}\.py`\*\*( — f\(function\))?", fullmatch=True),
    st.sampled_from(["", "```python", "```", "**calls:**", "- ... and 7 more", "y" * 3_000]),
)


@given(st.lists(_LINE, min_size=1, max_size=120), st.integers(0, 20_000))
def test_any_text_fits_any_room_and_is_never_empty(lines: list[str], room: int) -> None:
    """Any explore-shaped text and room: within it (once one character fits), never empty."""
    text = "\n".join(lines)
    if not text:
        return
    kept, truncated = fit_text(text, room, cost)
    assert kept
    assert truncated == (cost(text) > room)
    if room >= cost(text[:1] + CUT_MARK):
        assert cost(kept) <= room
    files = source_files(kept)
    assert all(f in source_files(text) for f in files)
