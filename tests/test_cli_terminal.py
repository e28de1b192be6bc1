"""The CLI at a real terminal (a pseudo-terminal it controls) and through a pipe (SPEC §7).

On a terminal an error is a sentence and the next step, waits and interrupts say what is
happening; piped, every error stays the `{"error"}` JSON line. Each `lwc` here runs under
`pty.fork`, so its stdin, stdout and stderr are a terminal and Ctrl-C is a real SIGINT from
the terminal's line discipline — nothing fakes `isatty`.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from conftest import lwc_command

pytestmark = pytest.mark.slow


class Terminal:
    """One `lwc` process whose controlling terminal is a pty this test reads and types into."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        argv = lwc_command(*args)
        pid, fd = os.forkpty()
        if pid == 0:  # the child: become lwc at once
            try:
                os.chdir(cwd)
                os.execve(argv[0], argv, {**env, "TERM": "dumb", "NO_COLOR": "1"})
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        self.output = b""
        self.closed = False

    def _read(self, timeout: float) -> bool:
        """Read what is there within `timeout`; False once the terminal is closed."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child closed its end
            data = b""
        if not data:
            self.closed = True
            return False
        self.output += data
        return True

    def read_until(self, text: bytes, timeout: float = 60) -> None:
        """Read until `text` has appeared (fails on timeout or when lwc exits first)."""
        deadline = time.monotonic() + timeout
        while text not in self.output:
            assert time.monotonic() < deadline, f"no {text!r} in {self.output!r}"
            assert self._read(0.1), f"lwc exited before {text!r}: {self.output!r}"

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def wait(self, timeout: float = 120) -> int:
        """Read to the end and return lwc's exit code."""
        deadline = time.monotonic() + timeout
        while not self.closed and time.monotonic() < deadline:
            self._read(0.1)
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status)

    @property
    def text(self) -> str:
        return self.output.decode("utf-8", "replace").replace("\r\n", "\n")


def at_terminal(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run `lwc ARGS` at a terminal to its end: (exit code, what it showed)."""
    term = Terminal(args, cwd, env)
    code = term.wait()
    return code, term.text


def piped(
    args: list[str], cwd: Path, env: dict[str, str], stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        lwc_command(*args), cwd=cwd, env=env, input=stdin, capture_output=True, timeout=120
    )


def ok_json(args: list[str], cwd: Path, env: dict[str, str], stdin: bytes = b"") -> dict:  # type: ignore[type-arg]
    done = piped(args, cwd, env, stdin)
    assert done.returncode == 0, done.stderr.decode()
    value: dict = json.loads(done.stdout)  # type: ignore[type-arg]
    return value


def piped_error(done: subprocess.CompletedProcess[bytes]) -> dict[str, str]:
    """The one JSON error line a piped command printed on stderr."""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1, done.stderr.decode()
    error: dict[str, str] = json.loads(lines[0])["error"]
    return error


@pytest.fixture
def wiki(workspace: Path, lwc_env: dict[str, str]) -> Path:
    """A project Wiki with one Page, `auth-flow`."""
    ok_json(["init"], workspace, lwc_env)
    ok_json(["page", "put", "auth-flow", "--title", "Auth flow", "--file", "-"], workspace,
            lwc_env, b"Login sends a token.\n")  # fmt: skip
    return workspace


# ------------------------------------------------------------------------- init


def test_init_inside_another_wiki_refuses_and_names_it(wiki: Path, lwc_env: dict[str, str]) -> None:
    """`lwc init` in a subdirectory names the Wiki above and `--nested`; nothing is created;
    commands run there keep using the Wiki above; `--nested` makes a second one on purpose."""
    sub = wiki / "src" / "deep"
    sub.mkdir(parents=True)
    refused = piped(["init"], sub, lwc_env)
    assert refused.returncode == 1
    error = piped_error(refused)
    assert error["code"] == "store_exists_above"
    assert str(wiki / ".lwc" / "wiki.db") in error["message"]
    assert "lwc init --nested" in error["message"]
    assert not (sub / ".lwc").exists()
    assert not (wiki / "src" / ".lwc").exists()
    # From the subdirectory, reads and writes reach the Wiki above.
    found = ok_json(["search", "login"], sub, lwc_env)
    assert [row["identifier"] for row in found["results"]] == ["auth-flow"]
    ok_json(["page", "put", "from-sub", "--title", "From sub", "--file", "-"], sub, lwc_env,
            b"Written from a subdirectory.\n")  # fmt: skip
    listed = ok_json(["page", "list"], wiki, lwc_env)
    assert {page["slug"] for page in listed["pages"]} == {"auth-flow", "from-sub"}
    nested = ok_json(["init", "--nested"], sub, lwc_env)
    assert nested["created"] is True
    assert nested["path"] == str(sub / ".lwc" / "wiki.db")
    # Running init again where a Wiki already is stays "already initialized".
    assert ok_json(["init"], wiki, lwc_env)["created"] is False


# ----------------------------------------------------------------- human output


def test_bare_lwc_prints_usage_and_exits_2(workspace: Path, lwc_env: dict[str, str]) -> None:
    code, shown = at_terminal([], workspace, lwc_env)
    assert code == 2
    assert shown.startswith("usage: lwc")
    assert "Examples:" in shown
    assert '{"error"' not in shown
    done = piped([], workspace, lwc_env)
    assert done.returncode == 2
    assert done.stderr.decode().startswith("usage: lwc")


def test_terminal_error_is_a_sentence_and_a_next_step(wiki: Path, lwc_env: dict[str, str]) -> None:
    """A typo'd slug: on a terminal a sentence plus the suggestion; piped, the JSON object
    (with the same suggestion); `--json` at a terminal keeps JSON too."""
    code, shown = at_terminal(["page", "show", "auth-flo"], wiki, lwc_env)
    assert code == 1
    assert "{" not in shown
    lines = shown.strip().splitlines()
    assert lines[0] == "Error: No page 'auth-flo'."
    assert lines[1] == "Did you mean 'auth-flow'?"
    done = piped(["page", "show", "auth-flo"], wiki, lwc_env)
    assert done.returncode == 1
    assert piped_error(done) == {
        "code": "page_not_found",
        "message": "no page 'auth-flo'; did you mean 'auth-flow'?",
    }
    code, shown = at_terminal(["page", "show", "auth-flo", "--json"], wiki, lwc_env)
    assert code == 1
    assert json.loads(shown)["error"]["code"] == "page_not_found"


def test_unknown_commands_get_suggestions(wiki: Path, lwc_env: dict[str, str]) -> None:
    done = piped(["serch", "login"], wiki, lwc_env)
    assert done.returncode == 2
    assert piped_error(done)["message"] == "lwc: unknown command 'serch'; did you mean 'search'?"
    done = piped(["page", "shwo", "auth-flow"], wiki, lwc_env)
    assert done.returncode == 2
    assert "did you mean 'show'?" in piped_error(done)["message"]
    code, shown = at_terminal(["serch", "login"], wiki, lwc_env)
    assert code == 2
    assert "usage: lwc" in shown
    assert "Error: lwc: unknown command 'serch'." in shown
    assert "Did you mean 'search'?" in shown
    # Nothing close: no guess.
    assert "did you mean" not in piped_error(piped(["zzzzqqq"], wiki, lwc_env))["message"]


def test_unknown_options_get_suggestions_from_their_own_command(
    wiki: Path, lwc_env: dict[str, str]
) -> None:
    """A mistyped option is matched against the options of the command it was given to,
    and the usage shown is that command's."""
    done = piped(["page", "list", "--jsn"], wiki, lwc_env)
    assert done.returncode == 2
    assert piped_error(done)["message"] == (
        "lwc page list: unrecognized arguments: --jsn; did you mean '--json'?"
    )
    done = piped(["search", "login", "--limt", "3"], wiki, lwc_env)
    assert "did you mean '--limit'?" in piped_error(done)["message"]
    code, shown = at_terminal(["page", "list", "--jsn"], wiki, lwc_env)
    assert code == 2
    assert "usage: lwc page list" in shown
    # Nothing close, or not an option: no guess.
    done = piped(["page", "list", "--zzzzqqq", "extra"], wiki, lwc_env)
    assert piped_error(done)["message"] == (
        "lwc page list: unrecognized arguments: --zzzzqqq extra"
    )


def test_store_not_found_on_a_terminal_says_what_to_run(
    workspace: Path, lwc_env: dict[str, str]
) -> None:
    code, shown = at_terminal(["page", "list"], workspace, lwc_env)
    assert code == 1
    assert shown.strip().splitlines() == [
        "Error: No Wiki store in this directory or its parents.",
        "Run `lwc init` first.",
    ]


# --------------------------------------------------------- waits and interrupts


def test_file_dash_from_a_terminal_says_it_reads_stdin(wiki: Path, lwc_env: dict[str, str]) -> None:
    term = Terminal(["page", "put", "typed", "--title", "Typed", "--file", "-"], wiki, lwc_env)
    term.read_until(b"Ctrl-D")
    assert "Reading the page body from stdin" in term.text
    term.send(b"Typed at the terminal.\n\x04")
    assert term.wait() == 0
    page = ok_json(["page", "show", "typed"], wiki, lwc_env)
    assert page["body"] == "Typed at the terminal.\n"


def test_a_write_waiting_for_another_writer_says_so(wiki: Path, lwc_env: dict[str, str]) -> None:
    """Another connection holds the write lock: after about a second lwc says it is waiting,
    and finishes once the lock is released."""
    (wiki / "body.md").write_text("Waited for the lock.\n", encoding="utf-8")
    holder = sqlite3.connect(wiki / ".lwc" / "wiki.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        term = Terminal(["page", "put", "waited", "--title", "W", "--file", "body.md"], wiki,
                        lwc_env)  # fmt: skip
        # Well inside the writer's 10 s busy timeout.
        term.read_until(b"Waiting for another lwc command", timeout=8)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert term.wait() == 0
    assert ok_json(["page", "show", "waited"], wiki, lwc_env)["body"] == "Waited for the lock.\n"


def test_ctrl_c_during_page_import_says_what_was_kept(
    workspace: Path, lwc_env: dict[str, str]
) -> None:
    """Ctrl-C part-way: exit 130, "N of 30,000 pages written; run the same command again",
    N is what the store holds; running it again finishes."""
    ok_json(["init"], workspace, lwc_env)
    total = 30_000
    with (workspace / "pages.jsonl").open("w", encoding="utf-8") as handle:
        for index in range(total):
            record = {"slug": f"page-{index}", "title": f"Page {index}", "body": f"body {index}"}
            handle.write(json.dumps(record) + "\n")
    term = Terminal(["page", "import", "pages.jsonl", "--batch", "100"], workspace, lwc_env)
    term.read_until(f"/{total}".encode())  # the first batch is committed
    term.send(b"\x03")
    assert term.wait() == 130, term.text
    shown = term.text
    assert "Interrupted: " in shown, shown
    assert " of 30,000 pages written.\nRun the same command again to finish.\n" in shown, shown
    kept = shown.split(" of 30,000 pages written")[0].split()[-1]
    written = int(kept.replace(",", ""))
    assert 0 < written < total, shown
    pages = ok_json(["page", "list"], workspace, lwc_env)["pages"]
    assert len(pages) == written
    again = ok_json(["page", "import", "pages.jsonl"], workspace, lwc_env)
    assert again["created"] == total - written
    assert again["unchanged"] == written


def _blocked_in_write(pid: int) -> bool:
    """Whether process `pid` sits in write(2) (Linux: /proc/PID/syscall's first field)."""
    try:
        fields = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    return bool(fields) and fields[0] == "1"


@pytest.mark.skipif(not Path("/proc/self/syscall").exists(), reason="needs Linux /proc")
def test_ctrl_c_while_the_progress_bar_is_being_written(
    workspace: Path, lwc_env: dict[str, str]
) -> None:
    """The Ctrl-C lands while lwc is inside a write of its progress bar (the terminal is not
    being read, so the write blocks): the handler's notice must not re-enter that write
    (Python raises "reentrant call" and lwc died with a traceback, exit 1)."""
    ok_json(["init"], workspace, lwc_env)
    total = 20_000
    with (workspace / "pages.jsonl").open("w", encoding="utf-8") as handle:
        for index in range(total):
            handle.write(json.dumps({"slug": f"p-{index}", "title": "T", "body": "b"}) + "\n")
    term = Terminal(["page", "import", "pages.jsonl", "--batch", "1"], workspace, lwc_env)
    term.read_until(f"/{total}".encode())
    deadline = time.monotonic() + 60
    while not _blocked_in_write(term.pid):  # stop reading until the terminal's buffer is full
        assert time.monotonic() < deadline, "lwc never blocked writing to its terminal"
        time.sleep(0.05)
    time.sleep(0.2)
    assert _blocked_in_write(term.pid)
    term.send(b"\x03")
    code = term.wait()
    assert "reentrant call" not in term.text, term.text[-3000:]
    assert code == 130, term.text[-3000:]
    assert " pages written.\nRun the same command again to finish.\n" in term.text


def test_ctrl_c_while_reading_stdin_writes_nothing(wiki: Path, lwc_env: dict[str, str]) -> None:
    term = Terminal(["page", "put", "never", "--title", "N", "--file", "-"], wiki, lwc_env)
    term.read_until(b"Ctrl-D")
    term.send(b"half a body")
    term.send(b"\x03")
    code = term.wait()
    assert code == 130, term.text
    assert "Interrupted: Nothing was written." in term.text
    assert piped_error(piped(["page", "show", "never"], wiki, lwc_env))["code"] == "page_not_found"


# ------------------------------------------------------------------- completion


def test_bash_completion_script_loads_and_completes_a_subcommand(
    workspace: Path, lwc_env: dict[str, str]
) -> None:
    bash = shutil.which("bash")
    assert bash is not None
    script = piped(["completion", "bash"], workspace, lwc_env)
    assert script.returncode == 0, script.stderr.decode()
    (workspace / "lwc.bash").write_bytes(script.stdout)
    probe = (
        "source ./lwc.bash\n"
        "complete -p lwc\n"
        "COMP_WORDS=(lwc sea); COMP_CWORD=1; COMP_LINE='lwc sea'; COMP_POINT=7\n"
        "\"$(complete -p lwc | sed -E 's/.*-F ([^ ]+) .*/\\1/')\" lwc sea lwc\n"
        'echo "top: ${COMPREPLY[*]}"\n'
        "COMP_WORDS=(lwc source re); COMP_CWORD=2; COMP_LINE='lwc source re'; COMP_POINT=13\n"
        "\"$(complete -p lwc | sed -E 's/.*-F ([^ ]+) .*/\\1/')\" lwc re source\n"
        'echo "source: ${COMPREPLY[*]}"\n'
    )
    done = subprocess.run([bash, "--norc", "-c", probe], cwd=workspace, capture_output=True,
                          timeout=60, env={"PATH": os.environ.get("PATH", "")})  # fmt: skip
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()
    assert "complete " in out
    assert " lwc" in out
    assert "top: search" in out
    assert "source: remove" in out


def test_zsh_completion_script_is_generated(workspace: Path, lwc_env: dict[str, str]) -> None:
    script = piped(["completion", "zsh"], workspace, lwc_env)
    assert script.returncode == 0
    text = script.stdout.decode()
    assert text.startswith("#compdef lwc")
    assert "completion" in text
    assert "search" in text
    zsh = shutil.which("zsh")
    if zsh is not None:  # the script at least parses where zsh is installed
        (workspace / "_lwc").write_text(text, encoding="utf-8")
        done = subprocess.run([zsh, "-n", str(workspace / "_lwc")], capture_output=True)
        assert done.returncode == 0, done.stderr.decode()


def test_completion_needs_a_known_shell(workspace: Path, lwc_env: dict[str, str]) -> None:
    done = piped(["completion", "fish"], workspace, lwc_env)
    assert done.returncode == 2
    assert piped_error(done)["code"] == "invalid_usage"


# -------------------------------------------------------- the missing verbs


def test_source_list_remove_and_config_show(wiki: Path, lwc_env: dict[str, str]) -> None:
    (wiki / "a.txt").write_text("alpha source\n", encoding="utf-8")
    (wiki / "b.txt").write_text("beta source\n", encoding="utf-8")
    added = ok_json(["source", "add", "a.txt"], wiki, lwc_env)["sources"][0]
    cited = ok_json(["source", "add", "b.txt"], wiki, lwc_env)["sources"][0]
    ok_json(["page", "put", "cites-b", "--title", "C", "--file", "-", "--source", cited["id"]],
            wiki, lwc_env, b"Cites b.\n")  # fmt: skip
    listed = ok_json(["source", "list"], wiki, lwc_env)["sources"]
    assert sorted(s["id"] for s in listed) == sorted([added["id"], cited["id"]])
    assert {s["id"]: s["length"] for s in listed}[added["id"]] == len("alpha source\n")
    assert "content" not in listed[0]
    in_use = piped(["source", "remove", cited["id"]], wiki, lwc_env)
    assert in_use.returncode == 1
    assert piped_error(in_use)["code"] == "source_in_use"
    assert "cites-b" in piped_error(in_use)["message"]
    typo = piped(["source", "remove", added["id"][:-1]], wiki, lwc_env)
    assert piped_error(typo)["code"] == "source_not_found"
    assert added["id"] in piped_error(typo)["message"]  # did you mean ...
    assert ok_json(["source", "remove", added["id"]], wiki, lwc_env)["removed"] is True
    assert [s["id"] for s in ok_json(["source", "list"], wiki, lwc_env)["sources"]] == [cited["id"]]
    assert ok_json(["search", "alpha"], wiki, lwc_env)["results"] == []
    shown = ok_json(["config", "show"], wiki, lwc_env)["stores"]
    assert [(s["scope"], s["settings"]) for s in shown] == [("project", {"graph": "disabled"})]
    ok_json(["config", "set", "--graph", "enabled"], wiki, lwc_env)
    assert ok_json(["config", "show"], wiki, lwc_env)["stores"][0]["settings"] == {
        "graph": "enabled"
    }


# ---------------------------------------------------------------- work verbs


@pytest.mark.parametrize("engine", ["grafeo", "surrealdb"])
def test_config_set_graph_prints_work_that_watch_reports_done(
    wiki: Path, lwc_env: dict[str, str], engine: str
) -> None:
    """LWC's shape: `config set --graph ENGINE` → `work.id`; `work watch|status ID` →
    succeeded, completed == total == the Pages; the graph is ready without `graph build`."""
    ok_json(["page", "put", "engine-b", "--title", "B", "--file", "-"], wiki, lwc_env,
            b"Links to [[auth-flow]].\n")  # fmt: skip
    configured = ok_json(["config", "set", "--graph", engine], wiki, lwc_env)
    assert configured["graph"]["setting"] == engine
    assert configured["graph"]["status"] == "ready"
    work_id = configured["work"]["id"]
    for verb in ("watch", "status"):
        done = ok_json(["work", verb, work_id], wiki, lwc_env)["work"]
        assert done["id"] == work_id
        assert (done["state"], done["completed"], done["total"]) == ("succeeded", 2, 2)
    assert ok_json(["work", "list"], wiki, lwc_env)["works"][0]["id"] == work_id
    missing = piped(["work", "watch", work_id[:-1] + "x"], wiki, lwc_env)
    assert missing.returncode == 1
    assert piped_error(missing)["code"] == "work_not_found"
    assert work_id in piped_error(missing)["message"]


def test_help_is_the_parser_in_a_child_too(workspace: Path, lwc_env: dict[str, str]) -> None:
    """`lwc explore --help` names the default the run uses (scope all)."""
    shown = piped(["explore", "--help"], workspace, lwc_env).stdout.decode()
    assert "default: all" in " ".join(shown.split())


def test_ctrl_c_during_import_from_lwc_says_nothing_was_written(
    workspace: Path, tmp_path: Path, lwc_env: dict[str, str]
) -> None:
    """`import --from-lwc` is one transaction: Ctrl-C in the middle of it exits 130 saying
    nothing was written, and the project Wiki holds no page of it."""
    from benchmarks.lwc_store import LwcPage, make_lwc_store

    total = 30_000
    old = make_lwc_store(
        tmp_path / "old" / ".lwc" / "wiki.db",
        (LwcPage(slug=f"old-{i}", title=f"Old {i}", body=f"old body {i}") for i in range(total)),
    )
    ok_json(["init"], workspace, lwc_env)
    term = Terminal(["import", "--from-lwc", str(old)], workspace, lwc_env)
    term.read_until(b"Importing [")  # past reading: inside the write transaction
    term.send(b"\x03")
    assert term.wait() == 130
    assert "Interrupted: Nothing was written, and the LWC store is unchanged." in term.text, (
        term.text
    )
    assert ok_json(["page", "list"], workspace, lwc_env)["pages"] == []


# ------------------------------------------------------- store text on a terminal

ESCAPES = "\x1b]0;pwned\x07\x1b]52;c;ZWNobyBoaQ==\x07\x1b[2J\x07\x9b31m\x08\u202e"
"""A window title (OSC 0), a clipboard write (OSC 52), clear-screen, BEL, a C1 CSI, a
backspace and a right-to-left override."""


def _raw_controls(shown: bytes) -> set[str]:
    """The control characters that reached the pty, other than line feeds, tabs and the
    carriage returns of the terminal's CR LF and of lwc's own progress bar."""
    text = shown.decode("utf-8", "replace")
    return {ch for ch in text if (ord(ch) < 0x20 and ch not in "\n\t\r") or 0x7F <= ord(ch) <= 0x9F
            or ch == "\u202e"}  # fmt: skip


def test_store_text_on_a_terminal_has_its_control_characters_neutralised(
    wiki: Path, lwc_env: dict[str, str]
) -> None:
    """A Page and a Source carrying terminal escapes: `page show`, `page list`, `search`,
    `source list` and `source show` print them as visible escapes on a terminal (no raw ESC,
    BEL, C1 or override reaches it; the body keeps its line breaks and tabs), while the JSON
    (piped, or `--json` on the terminal) holds the text unchanged."""
    (wiki / "body.md").write_text(f"zebra line one {ESCAPES}\n\tindented\n", encoding="utf-8")
    ok_json(["page", "put", "evil", "--title", f"Zebra {ESCAPES}", "--summary", ESCAPES,
             "--file", "body.md"], wiki, lwc_env)  # fmt: skip
    (wiki / f"notes{ESCAPES[:10]}.txt").write_text(f"zebra source {ESCAPES}\n", encoding="utf-8")
    source = ok_json(["source", "add", "."], wiki, lwc_env)["sources"]
    (ident,) = [s["id"] for s in source if s["title"].startswith("notes")]
    for args in (["page", "show", "evil"], ["page", "list"], ["search", "zebra"],
                 ["source", "list"], ["source", "show", ident], ["source", "add", "."]):  # fmt: skip
        term = Terminal(args, wiki, lwc_env)
        assert term.wait() == 0, term.text
        assert _raw_controls(term.output) == set(), (args, term.output)
        assert "\\x1b]0;pwned\\x07" in term.text, (args, term.text)
    code, shown = at_terminal(["page", "show", "evil"], wiki, lwc_env)
    assert code == 0
    assert "\n\tindented\n" in shown
    assert "\\u202e" in shown
    assert "\\x9b31m" in shown
    as_json = ok_json(["page", "show", "evil"], wiki, lwc_env)
    assert (as_json["title"], as_json["summary"]) == (f"Zebra {ESCAPES}", ESCAPES)
    code, shown = at_terminal(["page", "show", "evil", "--json"], wiki, lwc_env)
    assert code == 0
    assert json.loads(shown)["body"] == f"zebra line one {ESCAPES}\n\tindented\n"


def test_an_error_quoting_a_file_name_neutralises_it(wiki: Path, lwc_env: dict[str, str]) -> None:
    """An error on a terminal that names a file with escapes in its name shows them escaped;
    piped, the JSON error keeps the name as it is."""
    name = f"bin{ESCAPES[:10]}.txt"
    (wiki / name).write_bytes(b"\xff\xfe not text")
    code, shown = at_terminal(["source", "add", name], wiki, lwc_env)
    assert code == 1
    assert "is not UTF-8" in shown
    assert _raw_controls(shown.encode()) == set(), shown
    assert "\\x1b]0;pwned\\x07" in shown
    done = piped(["source", "add", name], wiki, lwc_env)
    assert name in piped_error(done)["message"]
