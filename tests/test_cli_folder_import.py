"""Folder imports finish: `.gitignore` and skipped folders honoured, non-text files listed."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from conftest import REPO, child_env
from conftest_memory import err_code, out_json, run_lwc, snapshot

from lwc_trio.memory.exchange.transfer import read_source_inputs
from lwc_trio.memory.exchange.walk import SKIPPED_DIRS, Skipped, list_folder

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"


@pytest.fixture
def env(tmp_path: Path) -> tuple[Path, Path]:
    """(project dir with an initialized store, home dir); no git repository."""
    home, project = tmp_path / "home", tmp_path / "home" / "proj"
    project.mkdir(parents=True)
    out_json(run_lwc("init", "--no-git-exclude", cwd=project, home=home))
    return project, home


def git_init(project: Path) -> None:
    """A real git work tree (the user's global config is the scratch HOME's: none)."""
    subprocess.run(["git", "init", "-q", str(project)], check=True, env=_git_env(project))


def _git_env(project: Path) -> dict[str, str]:
    return {**os.environ, "HOME": str(project.parent), "GIT_CONFIG_NOSYSTEM": "1"}


def write(root: Path, files: Mapping[str, bytes | str]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_bytes(content)


def titles(result: dict[str, object]) -> list[str]:
    sources = result["sources"]
    assert isinstance(sources, list)
    return sorted(str(s["title"]) for s in sources)


def test_source_add_dir_skips_a_binary_file_and_lists_it(env: tuple[Path, Path]) -> None:
    """3 text files and a PNG: the text is stored, the PNG listed with its reason; --strict
    keeps the old all-or-nothing refusal and writes nothing."""
    project, home = env
    write(project / "mixed", {"a.txt": "alpha", "b.md": "beta", "sub/c.txt": "gamma", "c.png": PNG})
    before = snapshot(project / ".lwc")
    strict = run_lwc("source", "add", "mixed", "--strict", cwd=project, home=home)
    assert strict.returncode == 1
    assert err_code(strict) == "invalid_source"
    assert "mixed/c.png is not UTF-8 (byte 0)" in strict.stderr.decode()
    assert snapshot(project / ".lwc") == before
    result = out_json(run_lwc("source", "add", "mixed", cwd=project, home=home))
    assert titles(result) == ["a.txt", "b.md", "sub/c.txt"]
    assert result["skipped"] == [{"path": "mixed/c.png", "reason": "not UTF-8 (byte 0)"}]


def test_source_add_dir_honours_gitignore_and_skips_dependency_folders(
    env: tuple[Path, Path],
) -> None:
    """In a git work tree, what .gitignore ignores is not read; node_modules, dist,
    __pycache__ and .venv are never read, tracked or not."""
    project, home = env
    git_init(project)
    write(
        project,
        {
            ".gitignore": "secret.txt\nlogs/\n*.log\n",
            "src/app.py": "print('app')",
            "src/secret.txt": "password",
            "src/logs/today.txt": "log line",
            "src/run.log": "log",
            "src/node_modules/dep/index.js": "module",
            "src/dist/bundle.js": "bundle",
            "src/pkg/__pycache__/m.cpython-312.pyc": "cache",
            "src/.venv/lib/site.py": "venv",
            "src/README.md": "readme",
        },
    )
    subprocess.run(
        ["git", "-C", str(project), "add", "src/dist/bundle.js"], check=True, env=_git_env(project)
    )
    result = out_json(run_lwc("source", "add", "src", cwd=project, home=home))
    assert titles(result) == ["README.md", "app.py"]
    assert sorted(item["path"] for item in result["skipped"]) == [
        "src/dist/",
        "src/node_modules/",
        "src/pkg/__pycache__/",
    ]


def test_source_add_dir_outside_git_still_skips_default_folders(env: tuple[Path, Path]) -> None:
    """Without a work tree the walk is plain (no .gitignore) but still skips the folder list."""
    project, home = env
    write(
        project / "docs",
        {
            ".gitignore": "b.txt\n",
            "a.txt": "a",
            "b.txt": "b",
            "node_modules/x.js": "x",
            "target/debug/out.txt": "t",
        },
    )
    result = out_json(run_lwc("source", "add", "docs", cwd=project, home=home))
    assert titles(result) == ["a.txt", "b.txt"]
    assert [s["path"] for s in result["skipped"]] == ["docs/node_modules/", "docs/target/"]


@pytest.mark.parametrize("in_git", [False, True])
def test_folder_walk_never_follows_a_symlink_out(tmp_path: Path, in_git: bool) -> None:
    """A link to a file or a folder outside is listed as skipped, and its target never read."""
    outside = tmp_path / "outside"
    write(outside, {"secret.txt": "top secret", "dir/inner.txt": "inner secret"})
    folder = tmp_path / "folder"
    write(folder, {"ok.txt": "fine"})
    (folder / "file-link.txt").symlink_to(outside / "secret.txt")
    (folder / "dir-link").symlink_to(outside / "dir")
    if in_git:
        git_init(folder)
    skipped: list[Skipped] = []
    inputs = list(read_source_inputs(folder, root=tmp_path, title=None, skipped=skipped))
    assert [(s.title, s.content) for s in inputs] == [("ok.txt", "fine")]
    reasons = {item.path.rsplit("/", 1)[-1]: item.reason for item in skipped}
    assert reasons == {
        "dir-link": "a symbolic link (links are not followed)",
        "file-link.txt": "a symbolic link (links are not followed)",
    }


def test_folder_walk_does_not_open_a_fifo(tmp_path: Path) -> None:
    """A FIFO in the folder is skipped without being opened (opening it would block)."""
    folder = tmp_path / "folder"
    write(folder, {"a.txt": "a"})
    os.mkfifo(folder / "pipe.txt")
    skipped: list[Skipped] = []
    inputs = list(read_source_inputs(folder, root=tmp_path, title=None, skipped=skipped))
    assert [s.title for s in inputs] == ["a.txt"]
    assert [(s.path, s.reason) for s in skipped] == [
        (f"{folder.as_posix()}/pipe.txt", "not a regular file")
    ]


def test_skipped_dirs_include_the_documented_ones(tmp_path: Path) -> None:
    """The default list holds the folders docs/cli.md promises, and the walk applies it."""
    promised = {".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".tox",
                "dist", "build", "target", ".mypy_cache", ".pytest_cache", ".lwc", ".codegraph"}  # fmt: skip
    assert promised <= SKIPPED_DIRS
    write(tmp_path / "f", {f"{name}/x.txt": "x" for name in sorted(promised)} | {"keep.txt": "k"})
    assert list_folder(tmp_path / "f").files == ("keep.txt",)


def test_page_import_dir_names_both_files_of_a_repeated_slug(env: tuple[Path, Path]) -> None:
    """`guide.md` and `guide/index.md` both give slug `guide`: the error names both files and
    nothing is written."""
    project, home = env
    write(project / "md", {"guide.md": "# A\n", "guide/index.md": "# B\n", "c.md": "# C\n"})
    before = snapshot(project / ".lwc")
    proc = run_lwc("page", "import", "md", cwd=project, home=home)
    assert proc.returncode == 1
    assert err_code(proc) == "invalid_page"
    message = proc.stderr.decode()
    assert "md/guide.md" in message
    assert "md/guide/index.md" in message
    assert snapshot(project / ".lwc") == before


DOC_TREE = {
    # MkDocs: index.md in several folders, attribute lists, a description, a `hide:` list.
    "index.md": "# Welcome { #welcome }\n\nStart here.\n",
    "concepts/index.md": "Overview without a heading.\n",
    "concepts/models.md": "---\ndescription: Models.\nhide:\n  - toc\n---\n\n## Basic {#basic}\n",
    "api/base_model.md": "::: pydantic.BaseModel\n",
    # mdBook: a README standing for its folder, headings after a code fence.
    "guide/README.md": "```sh\n# not a title\n```\n# Cargo Guide\n",
    "guide/Why Cargo.md": "# Why Cargo Exists\n",
    # Docusaurus: the title in the front matter, its `id` ignored.
    "ExpectAPI.md": "---\nid: expect\ntitle: Expect\n---\n\ntext\n",
    # Odd names: one maps to a slug, one makes none, one title is too long.
    "back\\slash.md": "# Back slash\n",
    "---.md": "# Dashes\n",
    "long.md": "# " + "t" * 400 + "\n",
}


def test_a_documentation_tree_imports_in_one_command(env: tuple[Path, Path]) -> None:
    """An MkDocs/mdBook/Docusaurus-shaped tree: slugs by path (index and README stand for
    their folder), titles from the front matter or the first heading without its attribute
    list; the file whose name makes no slug and the one whose title is too long are skipped
    and listed with the reason; --strict refuses instead, writing nothing."""
    project, home = env
    write(project / "docs", DOC_TREE)
    before = snapshot(project / ".lwc")
    strict = run_lwc("page", "import", "docs", "--strict", cwd=project, home=home)
    assert strict.returncode == 1
    assert "its name makes no slug" in strict.stderr.decode()
    assert snapshot(project / ".lwc") == before
    result = out_json(run_lwc("page", "import", "docs", cwd=project, home=home))
    assert result["created"] == 8
    assert [item["path"] for item in result["skipped"]] == ["docs/---.md", "docs/long.md"]
    reasons = [item["reason"] for item in result["skipped"]]
    assert reasons[0].startswith("its name makes no slug (no letter or digit); give it one")
    assert "the title has 400 characters (at most 300)" in reasons[1]
    pages = out_json(run_lwc("page", "list", cwd=project, home=home))["pages"]
    assert {p["slug"]: p["title"] for p in pages} == {
        "index": "Welcome",
        "concepts": "concepts",
        "concepts-models": "Basic",
        "api-base-model": "base_model",
        "guide": "Cargo Guide",
        "guide-why-cargo": "Why Cargo Exists",
        "expectapi": "Expect",
        "back-slash": "Back slash",
    }
    shown = out_json(run_lwc("page", "show", "concepts-models", cwd=project, home=home))
    assert (shown["summary"], shown["body"]) == ("Models.", "\n## Basic {#basic}\n")


LINKED_TREE = {
    "index.md": "[Install](guide/install.md), [the guide](guide/README.md), "
    "[keys](reference/config.md#keys), [a site](https://example.org/a.md)\n",
    "guide/README.md": "[Install](install.md) [config](../reference/config.md) [home](/index.md)\n",
    "guide/install.md": "[back](./README.md) [[reference-config]] [up](../../outside.md) "
    "[gone](nowhere.md) `[code](../index.md)`\n\n[another book]: ../../book/index.md\n",
    "reference/config.md": "---\nslug: cfg\n---\n[install](../guide/install.md) [me](config.md)\n"
    "See [the start][start].\n\n[start]: ../index.md\n",
}


def test_a_documentation_tree_keeps_its_own_links(env: tuple[Path, Path]) -> None:
    """A Markdown link to a `*.md` file of the folder (inline or by a reference definition)
    names the Page that file became (by its path, a front matter slug included); a link to a
    file the folder does not hold is no link — not its file name, which would name no Page
    or, for another book's `index.md`, this tree's `index`; code, URLs and self-links are no
    links. Importing the same tree again changes nothing."""
    project, home = env
    write(project / "docs", LINKED_TREE)
    assert out_json(run_lwc("page", "import", "docs", cwd=project, home=home))["created"] == 4
    assert _links_of(project, home) == TREE_LINKS
    again = out_json(run_lwc("page", "import", "docs", cwd=project, home=home))
    assert (again["created"], again["updated"], again["unchanged"]) == (0, 0, 4)


TREE_LINKS = {
    "index": ["cfg", "guide", "guide-install"],
    "guide": ["cfg", "guide-install", "index"],
    "guide-install": ["guide", "reference-config"],
    "cfg": ["guide-install", "index"],
}


def _links_of(project: Path, home: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for slug in TREE_LINKS:
        shown = out_json(run_lwc("page", "show", slug, cwd=project, home=home))
        out[slug] = [str(link) for link in shown["links"]]
    return out


def test_an_export_keeps_the_links_a_folder_import_resolved(env: tuple[Path, Path]) -> None:
    """`lwc export` then `lwc import` into a new Wiki gives every Page the links the folder
    import recorded: the export carries them (`links:`), where reading the bodies again,
    without the folder, would name each `*.md` link by its file's name."""
    project, home = env
    write(project / "docs", LINKED_TREE)
    out_json(run_lwc("page", "import", "docs", cwd=project, home=home))
    out_json(run_lwc("export", str(project / "out"), cwd=project, home=home))
    other = home / "other"
    other.mkdir()
    out_json(run_lwc("init", "--no-git-exclude", cwd=other, home=home))
    out_json(run_lwc("import", str(project / "out"), cwd=other, home=home))
    assert _links_of(other, home) == TREE_LINKS


def test_source_add_of_a_deep_tree_skips_a_path_over_300_characters(
    env: tuple[Path, Path],
) -> None:
    """A file whose path (the Source's title) is over 300 characters is skipped and listed;
    the rest of the folder is stored."""
    project, home = env
    deep = "/".join(["d" * 60] * 5) + "/file.txt"
    write(project / "tree", {"short.txt": "short", deep: "deep"})
    result = out_json(run_lwc("source", "add", "tree", cwd=project, home=home))
    assert titles(result) == ["short.txt"]
    assert result["skipped"] == [
        {
            "path": f"tree/{deep}",
            "reason": "its path is longer than 300 characters (a source title's limit)",
        }
    ]


def test_page_import_dir_skips_non_utf8_and_strict_refuses(env: tuple[Path, Path]) -> None:
    """A Markdown file that is not UTF-8 is skipped and listed; --strict refuses the import."""
    project, home = env
    write(
        project / "md",
        {"good.md": "# Good\n\ntext", "bad.md": b"# Bad \xff\n", "node_modules/n.md": "# N"},
    )
    before = snapshot(project / ".lwc")
    strict = run_lwc("page", "import", "md", "--strict", cwd=project, home=home)
    assert (strict.returncode, err_code(strict)) == (1, "invalid_import")
    assert snapshot(project / ".lwc") == before
    result = out_json(run_lwc("page", "import", "md", cwd=project, home=home))
    assert (result["created"], result["skipped"]) == (
        1,
        [
            {"path": "md/bad.md", "reason": "not UTF-8 (byte 6)"},
            {"path": "md/node_modules/", "reason": "dependency, build or VCS folder"},
        ],
    )


def test_skipped_files_are_listed_for_people_on_a_terminal(env: tuple[Path, Path]) -> None:
    """On a terminal the skipped files are printed as lines a person reads, not JSON."""
    project, home = env
    write(project / "mixed", {"a.txt": "alpha", "c.png": PNG})
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "lwc_trio", "source", "add", "mixed"],
            cwd=project,
            env={**os.environ, "HOME": str(home), "NO_COLOR": "1"},
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
        os.close(follower)
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(leader)
    assert proc.returncode == 0, proc.stderr
    text = drawn.decode().replace("\r\n", "\n")
    assert "Skipped 1 (use --strict to refuse instead):\n  mixed/c.png: not UTF-8 (byte 0)" in text
    assert "{" not in text


def _refuses_other_owners() -> bool:
    """Whether this git refuses a repository it takes for another user's (git ≥ 2.35.2 does,
    and honours GIT_TEST_ASSUME_DIFFERENT_OWNER, its own test-suite's switch for that)."""
    done = subprocess.run(
        ["git", "rev-parse", "--git-dir"],
        cwd=REPO,
        env={**os.environ, "GIT_TEST_ASSUME_DIFFERENT_OWNER": "1", "LC_ALL": "C"},
        capture_output=True,
        check=False,
    )
    return done.returncode != 0 and b"dubious ownership" in done.stderr


@pytest.mark.skipif(not _refuses_other_owners(), reason="this git has no ownership check")
@pytest.mark.parametrize("command", ["source", "page"])
def test_git_refusing_the_work_tree_is_an_error_not_a_full_walk(
    env: tuple[Path, Path], command: str
) -> None:
    """git refuses the repository ("dubious ownership": another user's checkout, a container
    mount): the folder import fails with `git_refused`, giving git's `safe.directory` command,
    and reads nothing — never a silent walk that imports what .gitignore excludes."""
    project, home = env
    git_init(project)
    write(project, {".gitignore": "secret.md\n", "docs/a.md": "# A\n", "docs/secret.md": "# S\n"})
    before = snapshot(project / ".lwc")
    args = ["source", "add", "docs"] if command == "source" else ["page", "import", "docs"]
    proc = subprocess.run(
        [sys.executable, "-m", "lwc_trio", *args],
        cwd=project,
        env={**child_env(home), "GIT_TEST_ASSUME_DIFFERENT_OWNER": "1"},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout
    assert err_code(proc) == "git_refused"
    message = json.loads(proc.stderr)["error"]["message"]
    assert "dubious ownership" in message
    assert f"git config --global --add safe.directory {project}" in message
    assert snapshot(project / ".lwc") == before
    # Outside any work tree the walk is still the plain one.
    (project / ".git").rename(project / "not-git")
    result = out_json(run_lwc(*args, cwd=project, home=home))
    assert result.get("created", len(result.get("sources", []))) == 2
