"""`LWC_FAULTS`: scripted fault injection for hosts testing plane isolation.

Grammar (SPEC §6): `PLANE=FAULT[*N]` entries separated by `;`, PLANE `memory`,
`code` or `auth` (the path check), FAULT `hang`, `raise`, `crash`, `garbage` or
`delay:S` (for `auth` only `hang`, `raise` and `delay:S`). A plane's
entries form a script over its successive calls: `*N` covers the next N calls,
an entry without a count covers every remaining call; after the script the
plane behaves normally.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Final, Literal

import attrs

from lwc_trio.exceptions import FaultSpecError

PLANES: Final = ("memory", "code", "auth")
AUTH_KINDS: Final = ("hang", "raise", "delay")
"""The path check has no worker to crash and no result shape to garble."""

Kind = Literal["hang", "raise", "crash", "garbage", "delay"]


@attrs.frozen
class Fault:
    """One injected behaviour for one call."""

    kind: Kind
    delay: float = 0.0

    def describe(self) -> str:
        return f"delay:{self.delay:g}" if self.kind == "delay" else self.kind


@attrs.frozen
class _Entry:
    fault: Fault
    count: int | None  # None: every remaining call


def _parse_fault(text: str, where: str) -> Fault:
    if text.startswith("delay:"):
        raw = text[len("delay:") :]
        try:
            seconds = float(raw)
        except ValueError:
            seconds = math.nan
        if not math.isfinite(seconds) or seconds < 0:
            raise FaultSpecError(f"LWC_FAULTS {where}: delay needs seconds >= 0, got {raw!r}")
        return Fault("delay", seconds)
    if text in ("hang", "raise", "crash", "garbage"):
        return Fault(text)  # type: ignore[arg-type]
    raise FaultSpecError(
        f"LWC_FAULTS {where}: unknown fault {text!r} (hang, raise, crash, garbage, delay:S)"
    )


def parse(spec: str) -> dict[str, list[_Entry]]:
    """Parse an `LWC_FAULTS` value into per-plane scripts.

    Raises:
        FaultSpecError: the value is malformed (message names the entry).
    """
    scripts: dict[str, list[_Entry]] = {plane: [] for plane in PLANES}
    for index, raw in enumerate(spec.split(";"), start=1):
        entry = raw.strip()
        if not entry:
            continue
        where = f"entry {index} ({entry!r})"
        plane, sep, rest = entry.partition("=")
        plane = plane.strip()
        if not sep or plane not in PLANES:
            raise FaultSpecError(
                f"LWC_FAULTS {where}: expected memory=FAULT, code=FAULT or auth=FAULT"
            )
        body, star, count_text = rest.strip().partition("*")
        count: int | None = None
        if star:
            # isdecimal() alone admits non-ASCII digits that int() may still refuse.
            if not (count_text.isascii() and count_text.isdecimal()) or int(count_text) < 1:
                raise FaultSpecError(f"LWC_FAULTS {where}: *N needs a positive integer")
            count = int(count_text)
        fault = _parse_fault(body.strip(), where)
        if plane == "auth" and fault.kind not in AUTH_KINDS:
            raise FaultSpecError(
                f"LWC_FAULTS {where}: the path check takes hang, raise or delay:S only"
            )
        scripts[plane].append(_Entry(fault, count))
    return scripts


@attrs.define
class FaultPlan:
    """The live scripts; `next(plane)` consumes one call's worth."""

    _scripts: dict[str, list[_Entry]] = attrs.field(factory=dict)
    _used: dict[str, int] = attrs.field(factory=dict)

    @classmethod
    def from_env(cls, value: str | None) -> FaultPlan:
        """Build from the `LWC_FAULTS` value (None or empty: no faults)."""
        return cls(parse(value or ""))

    @property
    def active(self) -> bool:
        return any(self._scripts.get(plane) for plane in PLANES)

    def next(self, plane: str) -> Fault | None:
        """The fault for this plane's next call, or None to behave normally."""
        script = self._scripts.get(plane)
        while script:
            head = script[0]
            if head.count is None:
                return head.fault
            used = self._used.get(plane, 0)
            if used < head.count:
                self._used[plane] = used + 1
                return head.fault
            script.pop(0)
            self._used[plane] = 0
        return None

    def describe(self) -> Iterable[str]:
        """One human line per plane script, for the start-up announcement."""
        for plane in PLANES:
            entries = self._scripts.get(plane) or []
            if entries:
                steps = ", ".join(
                    e.fault.describe() + (f" for {e.count} call(s)" if e.count else " from then on")
                    for e in entries
                )
                yield f"{plane}: {steps}"
