"""A documentation tree's files become Pages as the site names them: slug by path, title by
front matter or first heading (SPEC §7)."""

from __future__ import annotations

import time

import pytest

from lwc_trio.exceptions import WikiError
from lwc_trio.memory.exchange.doc_tree import (
    front_matter_fields,
    page_from_markdown,
    path_slug,
    split_front_matter,
)
from lwc_trio.memory.text.markdown import attribute_free as strip_attribute_list
from lwc_trio.memory.text.markdown import first_heading


@pytest.mark.parametrize(
    ("relative", "slug"),
    [
        ("guide/install.md", "guide-install"),
        ("guide/index.md", "guide"),
        ("guide/README.md", "guide"),
        ("guide/Readme.md", "guide"),
        ("index.md", "index"),
        ("README.md", "readme"),
        ("ExpectAPI.md", "expectapi"),
        ("Getting Started.md", "getting-started"),
        ("api/pydantic_extra_types_color.md", "api-pydantic-extra-types-color"),
        ("back\\slash.md", "back-slash"),
        ("_TypeScriptExamplesNote.md", "typescriptexamplesnote"),
        ("reference/registry-index.md", "reference-registry-index"),
        ("Café/数据.md", "café-数据"),
        ("---.md", ""),
        ("🙂.md", ""),
    ],
)
def test_the_slug_comes_from_the_path(relative: str, slug: str) -> None:
    """Lowercased path, `/` and runs of other characters as one `-`, index/README standing
    for the folder; a name with no letter or digit makes no slug."""
    assert path_slug(relative) == slug


@pytest.mark.parametrize(
    ("heading", "title"),
    [
        ("Fields { #fields }", "Fields"),
        ("Fields {#fields}", "Fields"),
        ("Fields {#fields .wide}", "Fields"),
        ("Fields {: .wide }", "Fields"),
        ("Sets {a, b}", "Sets {a, b}"),
        (
            "`testEnvironment` \\[node | jsdom | string]",
            "`testEnvironment` \\[node | jsdom | string]",
        ),
    ],
)
def test_attribute_lists_are_removed_from_titles(heading: str, title: str) -> None:
    """`{ #id }`, `{#id}`, `{#id .class}` and `{: .class }` go; other braces stay."""
    assert strip_attribute_list(heading) == title


def test_the_first_heading_outside_code_fences_is_the_title() -> None:
    """A `#` comment in a fenced block is no heading; closing `#`s and the attribute list go."""
    body = (
        "Intro text.\n\n```bash\n# install it\npip install x\n```\n\n~~~~\n# not\n~~~\n# still not\n"
        "~~~~\n    # indented code\n#hashtag\n## Real title ## {#real}\n# Later\n"
    )
    assert first_heading(body) == "Real title"
    assert first_heading("no heading at all\n") is None
    # An empty heading names nothing: the next one is the title.
    assert first_heading("#\n\n## {#anchor}\n\n# Title\n") == "Title"


def test_front_matter_keeps_the_keys_lwc_uses_and_skips_structures() -> None:
    """Docusaurus and MkDocs front matter: plain, quoted and JSON values are read; lists and
    maps written as lines do not break the reading."""
    text = (
        "---\nid: expect\ntitle: 'It''s Expect'\nhide:\n  - navigation\n  - toc\n"
        'description: "Matchers: all of them" # a comment\nsearch:\n  boost: 2\n'
        "summary: >\n  folded\n  text\n---\nBody\n"
    )
    yaml, body = split_front_matter(text)
    assert yaml is not None
    assert body == "Body\n"
    fields = front_matter_fields(yaml)
    assert fields["id"] == "expect"
    assert fields["title"] == "It's Expect"
    assert fields["hide"] is None
    assert fields["search"] is None
    assert fields["description"] == "Matchers: all of them"
    assert fields["summary"] == "folded text"


def test_a_page_from_a_documentation_file() -> None:
    """Front matter title and description, slug from the path; without front matter the
    first heading; `slug:` in the front matter wins."""
    page = page_from_markdown(
        "---\nid: expect\ntitle: Expect\ndescription: Matchers.\n---\nBody\n",
        name="docs/ExpectAPI.md",
        relative="ExpectAPI.md",
    )
    assert (page.slug, page.title, page.summary, page.body) == (
        "expectapi",
        "Expect",
        "Matchers.",
        "Body\n",
    )
    page = page_from_markdown("## Install { #install }\ntext\n", name="x", relative="a/B c.md")
    assert (page.slug, page.title) == ("a-b-c", "Install")
    page = page_from_markdown('---\nslug: "mine"\n---\nstub\n', name="x", relative="a/b.md")
    assert (page.slug, page.title) == ("mine", "b")


def test_a_name_that_makes_no_slug_is_refused_with_the_fix() -> None:
    """`---.md` has no letter or digit: the error names the file and the front matter fix."""
    with pytest.raises(WikiError, match=r"docs/---\.md: its name makes no slug") as caught:
        page_from_markdown("text\n", name="docs/---.md", relative="---.md")
    assert 'slug: "..."' in caught.value.message


@pytest.mark.parametrize(
    "line",
    [
        "# " + "{#" * 100_000,
        "# " + " " * 200_000 + "x",
        "#" * 200_000,
        " #" * 100_000,
        "```" + "`" * 200_000,
        "# title " + "#" * 100_000 + " {" * 50_000 + "}",
        "[" * 100_000,
        "'" + "''" * 100_000,
    ],
)
def test_heading_reading_is_linear_on_a_long_adversarial_line(line: str) -> None:
    """Each pattern of the title reading, fed one 200,000-character adversarial line, stays
    linear (a quadratic scan of it would take minutes)."""
    started = time.perf_counter()
    first_heading(line + "\n" + line)
    strip_attribute_list(line)
    front_matter_fields(f"title: {line}\n")
    assert time.perf_counter() - started < 5
