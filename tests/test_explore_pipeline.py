"""The explore pipeline on the real memory engine: every call's path check on the authorizer.

In every mode the path check runs on the authorizer's lane and the search on the memory
plane's: refusals answer SPEC §3's argument errors, a hung check answers at its 2 s deadline,
its thread is replaced, other calls do not wait for it, and faults meet the calls they were
scripted for.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from conftest_memory import MEMORY_FAULTS, new_store, page, put_pages
from lane_clock import Hang, HeldClock

from lwc_trio.actors.authorizer import THREADS as AUTH_THREADS
from lwc_trio.actors.authorizer import PathChecks
from lwc_trio.actors.explore import Explorer
from lwc_trio.actors.supervisor import Services
from lwc_trio.config import ServerConfig
from lwc_trio.exceptions import PathRuleError
from lwc_trio.faults import FaultPlan
from lwc_trio.paths import authorize_project_path


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """Virtual time that jumps once the loop has idled 1 s of real time: real threads start,
    check and search meanwhile (a scripted hang keeps a thread busy, so `held_clock` cannot
    serve these tests), and on a loaded CI machine, two cores beside three test workers and
    the host tests, a path check and search took over 100 ms of real time."""
    return trio.testing.MockClock(autojump_threshold=1.0)


@pytest.fixture
def config(workspace: Path, home: Path) -> ServerConfig:
    db = new_store(workspace)
    put_pages(db, [page("auth-flow", "Auth flow", "Login uses short-lived access tokens.")])
    (workspace / "sub").mkdir()
    return ServerConfig(workspace=workspace, home=home, env={"HOME": str(home)}, version="test")


@asynccontextmanager
async def explorer(config: ServerConfig, faults: str = "") -> AsyncIterator[Explorer]:
    services = Services(config, FaultPlan.from_env(faults))
    async with trio.open_nursery() as nursery:
        await nursery.start(services.run)
        yield services.explorer()
        nursery.cancel_scope.cancel()


def _without_timings(answer: tuple[dict[str, Any], bool]) -> tuple[dict[str, Any], bool]:
    structured, is_error = answer
    return {k: v for k, v in structured.items() if k != "timings"}, is_error


@pytest.mark.parametrize("mode", ["memory", "all"])
@pytest.mark.parametrize(
    "project",
    ["WS", "WS/sub", "WS/missing", "WS/../", "relative", "/", "HOME"],
)
async def test_each_path_answers_what_the_rules_say(
    config: ServerConfig, project: str, mode: str
) -> None:
    """Found results, each path refusal: the answer is what SPEC §3's rules give, in the
    default mode as in mode `all`."""
    raw = project.replace("WS", str(config.workspace)).replace("HOME", str(config.home))
    arguments = {"query": "login tokens", "projectPath": raw, "mode": mode}
    try:
        canonical = authorize_project_path(raw, config.workspace, config.env)
        refusal = None
    except PathRuleError as exc:
        refusal = {"code": exc.code, "message": exc.message, "field": "projectPath"}
    async with explorer(config) as ex:
        structured, is_error = await ex.run(arguments)
    if refusal is not None:
        assert is_error
        assert structured == {"error": refusal}
        return
    assert structured["projectPath"] == str(canonical)
    if project == "WS":
        assert not is_error
        assert structured["memory"]["results"][0]["identifier"] == "auth-flow"
        wanted = {"memoryMs"} if mode == "memory" else {"memoryMs", "codeMs"}
        assert set(structured["timings"]) == wanted


def _could_not_check(answer: tuple[dict[str, Any], bool]) -> bool:
    structured, is_error = answer
    return is_error and structured["error"] == {
        "code": "invalid_project_path",
        "message": "projectPath could not be checked within 2 s",
        "field": "projectPath",
    }


def _found(answer: tuple[dict[str, Any], bool]) -> bool:
    structured, is_error = answer
    return not is_error and structured["memory"]["results"][0]["identifier"] == "auth-flow"


EPS = 1e-9
"""Float slack for virtual times that are sums of deadlines."""


def _at_its_deadline(took: float, config: ServerConfig) -> bool:
    """A hung check's call answered `took` after it was sent: at its 2 s deadline."""
    return abs(took - config.auth_timeout) <= EPS


async def _calls(
    config: ServerConfig, held: HeldClock, plan: list[tuple[float, str, str]]
) -> tuple[dict[str, tuple[float, tuple[dict[str, Any], bool]]], list[float]]:
    """Run `(at, name, project)` calls in mode memory; a check of `WS/sub` hangs (in a real
    lane thread, until the calls are done). Returns each call's answer with the virtual
    time it came, and the virtual times at which the hung checks started."""
    release = Hang(held)
    hangs: list[float] = []

    def check(raw: str) -> Path:
        if raw.endswith("/sub"):
            hangs.append(held.clock.current_time())
            release.wait()
        return authorize_project_path(raw, config.workspace, config.env)

    answers: dict[str, tuple[float, tuple[dict[str, Any], bool]]] = {}
    async with explorer(config) as plain:
        ex = attrs.evolve(plain, checks=PathChecks(config, rules=check))

        async def call(at: float, name: str, raw: str) -> None:
            await trio.sleep_until(at)
            arguments = {"query": "login tokens", "projectPath": raw, "mode": "memory"}
            answer = await ex.run(arguments)
            answers[name] = (trio.current_time(), answer)

        try:
            async with trio.open_nursery() as nursery:
                for at, name, project in plan:
                    raw = project.replace("WS", str(config.workspace))
                    nursery.start_soon(call, at, name, raw)
        finally:
            release.release()
    return answers, sorted(hangs)


async def test_a_hung_check_answers_at_its_deadline_and_others_do_not_wait(
    config: ServerConfig, autojump_clock: trio.testing.MockClock, held_clock: HeldClock
) -> None:
    """A check that hangs answers "could not be checked within 2 s" at its deadline; a call
    beside it takes the authorizer's other thread and is answered at once."""
    answers, hangs = await _calls(
        config, held_clock, [(0.0, "hung", "WS/sub"), (0.5, "beside", "WS")]
    )
    assert hangs == [0.0]
    assert _at_its_deadline(answers["hung"][0], config)
    assert _could_not_check(answers["hung"][1])
    assert abs(answers["beside"][0] - 0.5) <= EPS
    assert _found(answers["beside"][1])


async def test_stuck_check_threads_are_replaced(
    config: ServerConfig, autojump_clock: trio.testing.MockClock, held_clock: HeldClock
) -> None:
    """More hung checks than authorizer threads: the first ones start at once, the others
    wait for a thread; every call answers at its own 2 s deadline (a call never waits on a
    check longer), and a call after them all is served at once, on threads that replaced the
    stuck ones."""
    hung = AUTH_THREADS + 2
    plan = [(0.0, f"hung{i}", "WS/sub") for i in range(hung)] + [(5.0, "after", "WS")]
    answers, hangs = await _calls(config, held_clock, plan)
    assert hangs[:AUTH_THREADS] == [0.0] * AUTH_THREADS
    # The others start, if at all, on a replacement thread once the first give up.
    assert all(at >= config.auth_timeout - EPS for at in hangs[AUTH_THREADS:])
    assert all(_at_its_deadline(answers[f"hung{i}"][0], config) for i in range(hung))
    assert all(_could_not_check(answers[f"hung{i}"][1]) for i in range(hung))
    assert abs(answers["after"][0] - 5.0) <= EPS
    assert _found(answers["after"][1])


def _lane_threads(prefix: str) -> int:
    return sum(t.name.startswith(prefix) for t in threading.enumerate())


async def test_a_scripted_hang_blocks_an_authorizer_thread(
    config: ServerConfig, clock: trio.testing.MockClock
) -> None:
    """`auth=hang` in mode `memory` hangs the check where production runs it, on an
    authorizer lane thread; the call answers at 2 s and the next one normally."""
    arguments = {"query": "login tokens", "projectPath": str(config.workspace), "mode": "memory"}
    async with explorer(config, "auth=hang*1") as ex:
        hung = await ex.run(arguments)
        assert trio.current_time() == pytest.approx(config.auth_timeout, abs=0.3)
        assert _lane_threads("lwc-auth") > 0, "the hung check should hold an authorizer thread"
        after = await ex.run(arguments)
    assert _could_not_check(hung)
    assert _found(after)


def _memory_error(answer: tuple[dict[str, Any], bool]) -> str:
    structured, _ = answer
    assert structured["projectPath"], structured  # the path was checked and passed
    code: str = structured["memory"]["error"]["code"]
    return code


@pytest.mark.parametrize(("fault", "code", "at"), [*MEMORY_FAULTS, ("delay:1", None, 1.0)])
async def test_memory_faults_after_the_path_check(
    config: ServerConfig,
    clock: trio.testing.MockClock,
    fault: str,
    code: str | None,
    at: float,
) -> None:
    """A memory fault in mode `memory` on the real engine: the path is checked first (a
    refused path is the argument error at once, and uses its call's entry: entries are drawn
    in arrival order as the call's check starts), then the fault hits the search, which
    keeps its own deadline; the next call is normal."""
    ws = str(config.workspace)
    arguments = {"query": "login tokens", "projectPath": ws, "mode": "memory"}
    refused = {**arguments, "projectPath": str(config.home)}
    async with explorer(config, f"memory={fault}*2") as ex:
        outside = await ex.run(refused)
        assert trio.current_time() == pytest.approx(0.0, abs=0.3)
        started = trio.current_time()
        faulty = await ex.run(arguments)
        took = trio.current_time() - started
        normal = await ex.run(arguments)
    assert outside[1] is True
    assert outside[0]["error"]["field"] == "projectPath"
    assert took == pytest.approx(at, abs=0.3)
    if code is None:
        assert _found(faulty)
    else:
        assert _memory_error(faulty) == code
    assert _found(normal)


@pytest.mark.parametrize(
    ("query", "refused"),
    [
        (" ".join(f"w{i}" for i in range(64)), False),
        (" ".join(f"w{i}" for i in range(65)), True),
        (" ".join(["same"] * 200), False),  # 200 runs, one term: the stemmer decides
        (" ".join(f"wé{i}" for i in range(65)), True),  # not ASCII: always the stemmer
        (" ".join(f"w{i}" for i in range(60)) + " the of and to a in", False),  # stop words
    ],
)
def test_memory_term_limit(query: str, refused: bool) -> None:
    """More than 64 distinct search terms is `invalid_query`; repeats and stop words do not
    count (the run-count shortcut never refuses on its own)."""
    from lwc_trio.actors.planes import check_memory_arguments
    from lwc_trio.exceptions import ArgumentError
    from lwc_trio.protocol.arguments import validate

    args = validate({"query": query, "projectPath": "/x"})
    if refused:
        with pytest.raises(ArgumentError) as err:
            check_memory_arguments(args)
        assert err.value.code == "invalid_query"
    else:
        check_memory_arguments(args)


async def test_a_call_on_a_small_store_answers_while_typo_calls_hold_every_thread(
    config: ServerConfig,
    autojump_clock: trio.testing.MockClock,
    held_clock: HeldClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """More typo calls on one store than the memory lane has threads, each stuck in its
    corrections (a scripted hang standing for a large store's typo work): a call on another,
    one-Page store still answers within the lane's grow delay, while they all still run
    (issue 36 item 12: it waited 5.1 s for the memory threads)."""
    from lwc_trio.actors.planes import MEMORY_GROW_AFTER, MEMORY_THREADS
    from lwc_trio.memory.query import fuzzy, search

    ws = config.workspace
    put_pages(new_store(ws / "big"), [page("d", "Deployment", "rollout steps")])
    put_pages(new_store(ws / "small"), [page("auth-flow", "Auth flow", "Login tokens.")])
    release = Hang(held_clock)
    real = fuzzy.near_words

    def stuck(vocab: Any, word: str, edits: int) -> Any:
        release.wait()  # fault injection: typo work that takes every thread for long
        return real(vocab, word, edits)

    monkeypatch.setattr(search, "near_words", stuck)
    answers: dict[str, tuple[float, tuple[dict[str, Any], bool]]] = {}
    async with explorer(config) as ex:

        async def call(name: str, project: Path, query: str) -> None:
            arguments = {"query": query, "projectPath": str(project), "mode": "memory"}
            answer = await ex.run(arguments)
            answers[name] = (trio.current_time(), answer)

        try:
            async with trio.open_nursery() as nursery:
                for i in range(MEMORY_THREADS + 2):
                    nursery.start_soon(call, f"typo{i}", ws / "big", "deploymnet")
                await trio.sleep(1.0)
                nursery.start_soon(call, "control", ws / "small", "login tokens")
                await trio.sleep(1.0)
                assert sorted(answers) == ["control"]  # the typo calls all still run
                at, (structured, _) = answers["control"]
                assert at <= 1.0 + MEMORY_GROW_AFTER + EPS
                assert [r["identifier"] for r in structured["memory"]["results"]] == ["auth-flow"]
        finally:
            release.release()
