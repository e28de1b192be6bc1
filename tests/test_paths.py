"""Path rules refuse every hostile projectPath or workspace with its exact code and accept only
real directories inside the workspace (SPEC §1 `--path`, §3)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from lwc_trio.paths import (
    SYSTEM_ROOTS,
    PathRuleError,
    authorize_project_path,
    is_within,
    nearest_upward,
    prohibited_roots,
    text_within,
    validate_workspace,
)

INVALID = "invalid_project_path"
OUTSIDE = "project_path_outside_workspace"
OK = "ok"


class Tree:
    """A scratch filesystem: `<base>/ws` is the workspace, with fake HOME and TMPDIR inside it so
    that only the prohibited-root rule (not containment) can refuse them."""

    def __init__(self, tmp_path: Path) -> None:
        self.base = Path(os.path.realpath(tmp_path))
        self.ws = self.base / "ws"
        (self.ws / "a" / "b").mkdir(parents=True)
        (self.ws / "home").mkdir()
        (self.ws / "tmpdir").mkdir()
        (self.ws / "file.txt").write_text("secret contents\n")
        (self.ws / "dirlink").symlink_to(self.ws / "a")
        (self.ws / "loop").symlink_to(self.ws / "loop")
        (self.base / "outside" / "sub").mkdir(parents=True)
        (self.ws / "escape").symlink_to(self.base / "outside")
        (self.base / "ws-evil").mkdir()
        self.env = {"HOME": str(self.ws / "home"), "TMPDIR": str(self.ws / "tmpdir")}

    def check(self, raw: str, workspace: Path | None = None) -> str:
        """Run the authorizer and return the error code, or OK after checking the result."""
        try:
            got = authorize_project_path(raw, workspace or self.ws, self.env)
        except PathRuleError as exc:
            error = exc
        else:
            assert got == Path(os.path.realpath(raw))
            return OK
        assert error.message.startswith("projectPath ")
        assert "secret contents" not in error.message
        return error.code


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    return Tree(tmp_path)


Case = tuple[str, Callable[[Tree], str], str]

CORPUS: list[Case] = [
    # happy paths
    ("workspace itself", lambda t: str(t.ws), OK),
    ("nested dir", lambda t: str(t.ws / "a" / "b"), OK),
    ("trailing slash", lambda t: f"{t.ws}/a/", OK),
    ("trailing slashes", lambda t: f"{t.ws}/a//", OK),
    # lexical rules
    ("empty string", lambda t: "", INVALID),
    ("relative", lambda t: "ws/a", INVALID),
    ("dot-relative", lambda t: "./a", INVALID),
    ("dotdot escape", lambda t: f"{t.ws}/../outside", INVALID),
    ("dotdot staying inside", lambda t: f"{t.ws}/a/../a", INVALID),
    ("dot component", lambda t: f"{t.ws}/./a", INVALID),
    ("empty component", lambda t: f"{t.ws}//a", INVALID),
    ("NUL byte", lambda t: f"{t.ws}/a\0/b", INVALID),
    ("5,000 characters", lambda t: f"{t.ws}/" + "x" * 5000, INVALID),
    ("lone surrogate", lambda t: f"{t.ws}/\ud800", INVALID),
    # filesystem rules
    ("symlinked project dir", lambda t: str(t.ws / "dirlink"), INVALID),
    ("symlink loop", lambda t: str(t.ws / "loop"), INVALID),
    ("through a symlink loop", lambda t: str(t.ws / "loop" / "x"), INVALID),
    ("component too long", lambda t: f"{t.ws}/" + "y" * 300, INVALID),
    ("file, not a directory", lambda t: str(t.ws / "file.txt"), INVALID),
    ("file with trailing slash", lambda t: f"{t.ws}/file.txt/", INVALID),
    ("below a file", lambda t: str(t.ws / "file.txt" / "x"), INVALID),
    ("nonexistent", lambda t: str(t.ws / "missing"), INVALID),
    # prohibited roots: refused before containment is even asked
    ("filesystem root", lambda t: "/", INVALID),
    ("double slash root", lambda t: "//", INVALID),
    ("$HOME inside workspace", lambda t: t.env["HOME"], INVALID),
    ("$TMPDIR inside workspace", lambda t: t.env["TMPDIR"], INVALID),
    ("/tmp", lambda t: "/tmp", INVALID),
    ("/proc/self", lambda t: "/proc/self", INVALID),
    ("/proc/self/cwd", lambda t: "/proc/self/cwd", INVALID),
    # containment
    ("sibling prefix", lambda t: str(t.base / "ws-evil"), OUTSIDE),
    ("parent of workspace", lambda t: str(t.base), OUTSIDE),
    ("real dir via symlinked parent", lambda t: str(t.ws / "escape" / "sub"), OUTSIDE),
]


@pytest.mark.parametrize(
    ("make", "expected"),
    [pytest.param(make, expected, id=name) for name, make, expected in CORPUS],
)
def test_corpus(tree: Tree, make: Callable[[Tree], str], expected: str) -> None:
    """Each hostile or happy projectPath gets exactly its SPEC §3 outcome."""
    assert tree.check(make(tree)) == expected


@pytest.mark.parametrize("root", [r for r in SYSTEM_ROOTS if os.path.lexists(r)])
def test_every_system_root_is_refused(tree: Tree, root: str) -> None:
    """Every listed system root present on this machine is invalid, not merely outside."""
    assert tree.check(root) == INVALID


def test_home_and_tmp_refused_even_with_a_root_workspace(tree: Tree) -> None:
    """With `/` as workspace (nothing is outside), `$HOME` and `/tmp` still fail as roots."""
    tree.env = {"HOME": str(tree.base), "TMPDIR": str(tree.ws)}
    for raw in (str(tree.base), str(tree.ws), "/tmp"):
        assert tree.check(raw, workspace=Path("/")) == INVALID
    assert tree.check(str(tree.ws / "a"), workspace=Path("/")) == OK


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux /proc and /sys")
def test_virtual_trees_refused_even_with_a_root_workspace(tree: Tree) -> None:
    """Directories below /proc, /sys and /dev are refused even when the workspace contains them."""
    candidates = ["/proc/1", "/proc/self/fd", "/sys/kernel", "/dev/pts", "/dev/shm"]
    present = [c for c in candidates if os.path.isdir(c) and not os.path.islink(c)]
    assert present
    for raw in present:
        assert tree.check(raw, workspace=Path("/")) == INVALID
    # Only the canonical form lies under /proc here: the given one goes through a workspace link.
    (tree.ws / "proclink").symlink_to("/proc")
    assert tree.check(str(tree.ws / "proclink" / "1"), workspace=Path("/")) == INVALID


@pytest.mark.skipif(not os.path.isdir("/proc/self/cwd"), reason="needs Linux /proc")
def test_proc_cwd_alias_into_workspace_is_refused(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`/proc/self/cwd/a` resolves inside the workspace but is refused for its given form."""
    monkeypatch.chdir(tree.ws)
    assert os.path.realpath("/proc/self/cwd/a") == str(tree.ws / "a")
    assert tree.check("/proc/self/cwd/a") == INVALID


@pytest.mark.skipif(sys.platform == "darwin", reason="APFS refuses non-UTF-8 names")
def test_existing_non_utf8_directory_is_refused(tree: Tree) -> None:
    """A real directory with a non-UTF-8 name gives a clean error, not an exception."""
    os.mkdir(os.fsencode(tree.ws) + b"/\xff")
    raw = os.fsdecode(os.fsencode(tree.ws) + b"/\xff")
    assert "\udcff" in raw
    assert tree.check(raw) == INVALID


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permissions")
def test_unsearchable_parent_is_refused(tree: Tree) -> None:
    """EACCES while resolving becomes invalid_project_path."""
    locked = tree.ws / "locked"
    (locked / "inner").mkdir(parents=True)
    locked.chmod(0)
    try:
        assert tree.check(str(locked / "inner")) == INVALID
    finally:
        locked.chmod(0o755)


def test_error_messages_name_the_rule(tree: Tree) -> None:
    """Messages say which rule failed, for the field projectPath."""
    cases = {
        "a/b": "projectPath must be absolute",
        str(tree.ws / "dirlink"): "projectPath must not be a symbolic link",
        str(tree.ws / "missing"): "projectPath does not exist",
        str(tree.ws / "file.txt"): "projectPath must be a directory",
        str(tree.base): "projectPath must be the workspace or inside it",
        "/" + "x" * 5000: "projectPath must be at most 4,096 characters",
        "/x\0": "projectPath must not contain a NUL byte",
        "/\udcff": "projectPath must be valid UTF-8",
        f"{tree.ws}/./a": "projectPath must not contain '.', '..' or empty components",
        "/usr": "projectPath must not be the filesystem root, $HOME, a temp root or a system root",
    }
    for raw, message in cases.items():
        with pytest.raises(PathRuleError) as info:
            authorize_project_path(raw, tree.ws, tree.env)
        assert info.value.message == message


def test_is_within_compares_components() -> None:
    """`/ws-evil` is not inside `/ws`; `/ws` and `/ws/x` are."""
    assert is_within(Path("/ws"), Path("/ws"))
    assert is_within(Path("/ws/x/y"), Path("/ws"))
    assert not is_within(Path("/ws-evil"), Path("/ws"))
    assert not is_within(Path("/"), Path("/ws"))
    assert is_within(Path("/anything"), Path("/"))


@pytest.mark.parametrize(
    ("child", "parent"),
    [("/ws", "/ws"), ("/ws/x/y", "/ws"), ("/ws-evil", "/ws"), ("/", "/ws"), ("/any", "/"),
     ("/", "/"), ("/wsx/ws", "/ws")],
)  # fmt: skip
def test_text_within_agrees_with_is_within(child: str, parent: str) -> None:
    """The string form used on every call decides exactly as the Path form does."""
    assert text_within(child, parent) == is_within(Path(child), Path(parent))


def test_prohibited_roots_are_canonical(tmp_path: Path) -> None:
    """HOME and TMPDIR are canonicalised; relative or empty values are ignored."""
    real = Path(os.path.realpath(tmp_path))
    (real / "h").mkdir()
    (real / "hl").symlink_to(real / "h")
    roots = prohibited_roots({"HOME": f"{real}/hl/", "TMPDIR": "relative"})
    assert real / "h" in roots
    assert Path(os.path.realpath("/tmp")) in roots
    assert Path("/") in roots
    assert Path(os.path.realpath("relative")) not in roots
    assert all(root == Path(os.path.realpath(root)) for root in roots)


# validate_workspace


def test_workspace_ok_relative_and_canonical(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative `--path`, even through a symlink, becomes the canonical directory."""
    monkeypatch.chdir(tree.ws)
    assert validate_workspace("dirlink", tree.env) == tree.ws / "a"
    assert validate_workspace(".", tree.env) == tree.ws
    assert validate_workspace(f"{tree.ws}/a/b/", tree.env) == tree.ws / "a" / "b"


@pytest.mark.parametrize(
    ("make", "code"),
    [
        pytest.param(lambda t: str(t.ws / "file.txt"), "invalid_workspace", id="file"),
        pytest.param(lambda t: str(t.ws / "missing"), "invalid_workspace", id="missing"),
        pytest.param(lambda t: str(t.ws / "loop"), "invalid_workspace", id="symlink-loop"),
        pytest.param(lambda t: "", "invalid_workspace", id="empty"),
        pytest.param(lambda t: f"{t.ws}/\udcff", "invalid_workspace", id="surrogate"),
        pytest.param(lambda t: f"{t.ws}\0", "invalid_workspace", id="nul"),
        pytest.param(lambda t: "/", "workspace_too_broad", id="root"),
        pytest.param(lambda t: t.env["HOME"], "workspace_too_broad", id="home"),
        pytest.param(lambda t: t.env["TMPDIR"] + "/", "workspace_too_broad", id="tmpdir"),
        pytest.param(lambda t: "/tmp", "workspace_too_broad", id="tmp"),
        pytest.param(lambda t: "/usr", "workspace_too_broad", id="usr"),
        pytest.param(lambda t: "/etc/../usr", "workspace_too_broad", id="usr-dotdot"),
    ],
)
def test_workspace_refused(tree: Tree, make: Callable[[Tree], str], code: str) -> None:
    """A `--path` that is not a usable directory or is a prohibited root gets its exact code."""
    with pytest.raises(PathRuleError) as info:
        validate_workspace(make(tree), tree.env)
    assert info.value.code == code
    assert info.value.message.startswith("--path ")


# nearest_upward


def test_nearest_upward_finds_the_nearest(tree: Tree) -> None:
    """The closest `.lwc/wiki.db` wins over one further up; a dangling link still counts."""
    (tree.ws / ".lwc").mkdir()
    (tree.ws / ".lwc" / "wiki.db").write_bytes(b"")
    deep = tree.ws / "a" / "b"
    assert nearest_upward(deep, tree.ws, ".lwc/wiki.db") == tree.ws / ".lwc" / "wiki.db"
    assert nearest_upward(tree.ws, tree.ws, ".lwc/wiki.db") == tree.ws / ".lwc" / "wiki.db"
    (tree.ws / "a" / ".lwc").symlink_to(tree.base / "nowhere")
    assert nearest_upward(deep, tree.ws, ".lwc") == tree.ws / "a" / ".lwc"


def test_nearest_upward_never_looks_above_root(tree: Tree) -> None:
    """A store above the root is ignored; a start outside the root finds nothing."""
    (tree.base / ".lwc").mkdir()
    (tree.base / ".lwc" / "wiki.db").write_bytes(b"")
    assert nearest_upward(tree.ws / "a" / "b", tree.ws, ".lwc/wiki.db") is None
    assert nearest_upward(tree.base / "outside", tree.ws, ".lwc/wiki.db") is None
    assert nearest_upward(tree.ws, tree.base, ".lwc/wiki.db") == tree.base / ".lwc" / "wiki.db"


def test_nearest_upward_rejects_escaping_relative(tree: Tree) -> None:
    """A `relative` that is absolute or climbs with `..` is a programming error."""
    for bad in ("/etc/passwd", "../x", "a/../../x"):
        with pytest.raises(ValueError, match="relative"):
            nearest_upward(tree.ws, tree.ws, bad)
