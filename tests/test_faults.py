"""LWC_FAULTS parses the SPEC §6 grammar, refuses malformed values with a FaultSpecError naming the
entry, and plays each plane's script over its successive calls."""

from __future__ import annotations

import pytest

from lwc_trio.exceptions import FaultSpecError, UsageError
from lwc_trio.faults import Fault, FaultPlan, parse

HANG, RAISE, CRASH, GARBAGE = Fault("hang"), Fault("raise"), Fault("crash"), Fault("garbage")


def _script(spec: str) -> dict[str, list[tuple[Fault, int | None]]]:
    # `auth` (the path check) is listed only when it has a script, to keep the cases short.
    return {
        plane: [(e.fault, e.count) for e in entries]
        for plane, entries in parse(spec).items()
        if plane != "auth" or entries
    }


def _calls(plan: FaultPlan, plane: str, n: int) -> list[Fault | None]:
    return [plan.next(plane) for _ in range(n)]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("", {"memory": [], "code": []}),
        ("  ;; ; ", {"memory": [], "code": []}),
        ("memory=hang", {"memory": [(HANG, None)], "code": []}),
        ("code=raise*3", {"memory": [], "code": [(RAISE, 3)]}),
        ("memory=crash*1", {"memory": [(CRASH, 1)], "code": []}),
        ("code=garbage*01", {"memory": [], "code": [(GARBAGE, 1)]}),
        ("memory=delay:0.5", {"memory": [(Fault("delay", 0.5), None)], "code": []}),
        ("memory=delay:0", {"memory": [(Fault("delay", 0.0), None)], "code": []}),
        ("code=delay:2*4", {"memory": [], "code": [(Fault("delay", 2.0), 4)]}),
        (
            "memory=hang*2;memory=raise*1;code=garbage;memory=delay:1.25",
            {
                "memory": [(HANG, 2), (RAISE, 1), (Fault("delay", 1.25), None)],
                "code": [(GARBAGE, None)],
            },
        ),
        (
            "  memory = hang*2 ;\tcode=crash  ;  ",
            {"memory": [(HANG, 2)], "code": [(CRASH, None)]},
        ),
        ("auth=hang", {"memory": [], "code": [], "auth": [(HANG, None)]}),
        (
            "auth=delay:3*2;auth=raise",
            {"memory": [], "code": [], "auth": [(Fault("delay", 3.0), 2), (RAISE, None)]},
        ),
    ],
)
def test_grammar(spec: str, expected: dict[str, list[tuple[Fault, int | None]]]) -> None:
    """Plain faults, *N counts, several entries per plane, delay:S and surrounding whitespace."""
    assert _script(spec) == expected


@pytest.mark.parametrize(
    ("spec", "entry"),
    [
        ("disk=hang", "disk=hang"),
        ("Memory=hang", "Memory=hang"),
        ("memory=hang;codegraph=raise", "codegraph=raise"),
        ("memory=boom", "memory=boom"),
        ("code=", "code="),
        ("memory=HANG", "memory=HANG"),
        ("memory=delay", "memory=delay"),
        ("memory=hang*0", "memory=hang*0"),
        ("memory=hang*x", "memory=hang*x"),
        ("memory=hang*", "memory=hang*"),
        ("memory=hang*-1", "memory=hang*-1"),
        ("memory=hang*1.5", "memory=hang*1.5"),
        ("memory=hang*2*2", "memory=hang*2*2"),
        ("code=raise*\u00b2", "code=raise*\u00b2"),
        ("memory=delay:-1", "memory=delay:-1"),
        ("memory=delay:nan", "memory=delay:nan"),
        ("memory=delay:inf", "memory=delay:inf"),
        ("memory=delay:1e400", "memory=delay:1e400"),
        ("memory=delay:abc", "memory=delay:abc"),
        ("memory=delay:", "memory=delay:"),
        ("memory=hang;memoryhang", "memoryhang"),
        ("hang", "hang"),
        ("=hang", "=hang"),
        ("auth=crash", "auth=crash"),
        ("auth=garbage*1", "auth=garbage*1"),
    ],
)
def test_malformed_values_raise_naming_the_entry(spec: str, entry: str) -> None:
    """Every malformed value is a FaultSpecError (a usage error: exit 2) naming the bad entry."""
    with pytest.raises(FaultSpecError) as info:
        parse(spec)
    err = info.value
    assert isinstance(err, UsageError)
    assert err.code == "invalid_faults"
    assert repr(entry) in err.message
    assert "LWC_FAULTS" in err.message
    with pytest.raises(FaultSpecError):
        FaultPlan.from_env(spec)


def test_error_names_the_entry_position() -> None:
    """The message says which `;`-separated entry is wrong."""
    with pytest.raises(FaultSpecError, match=r"entry 3"):
        parse("memory=hang;code=raise;memory=nope")


@pytest.mark.parametrize("value", [None, "", " ; "])
def test_no_faults(value: str | None) -> None:
    """Unset or empty LWC_FAULTS: inactive, every call behaves normally."""
    plan = FaultPlan.from_env(value)
    assert plan.active is False
    assert _calls(plan, "memory", 3) == [None] * 3
    assert _calls(plan, "code", 3) == [None] * 3
    assert list(plan.describe()) == []


def test_counted_entries_then_normal() -> None:
    """`*N` entries cover the next N calls each, in order; after the script, None."""
    plan = FaultPlan.from_env("memory=hang*2;memory=raise*1")
    assert plan.active is True
    assert _calls(plan, "memory", 5) == [HANG, HANG, RAISE, None, None]


def test_uncounted_entry_covers_every_remaining_call() -> None:
    """An entry without a count applies to every later call; entries after it never run."""
    plan = FaultPlan.from_env("memory=crash*1;memory=delay:0.5;memory=hang")
    assert _calls(plan, "memory", 6) == [CRASH] + [Fault("delay", 0.5)] * 5


def test_planes_have_independent_scripts() -> None:
    """Calls on one plane do not consume the other plane's script."""
    plan = FaultPlan.from_env("code=garbage*2;memory=raise*1")
    assert _calls(plan, "code", 1) == [GARBAGE]
    assert _calls(plan, "memory", 3) == [RAISE, None, None]
    assert _calls(plan, "code", 3) == [GARBAGE, None, None]


def test_only_code_faults_leave_memory_normal() -> None:
    """A plane with no entries always behaves normally."""
    plan = FaultPlan.from_env("code=hang")
    assert _calls(plan, "memory", 3) == [None] * 3
    assert _calls(plan, "code", 3) == [HANG] * 3


def test_describe_announces_each_plane() -> None:
    """The start-up announcement names each scripted plane and its steps."""
    lines = list(FaultPlan.from_env("code=delay:0.5*2;memory=hang;code=raise").describe())
    assert lines == [
        "memory: hang from then on",
        "code: delay:0.5 for 2 call(s), raise from then on",
    ]
