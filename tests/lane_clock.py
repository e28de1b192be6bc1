"""Trio's autojump clock, held still while a thread lane's real threads work.

The autojump clock jumps to the next deadline once every task has waited for its threshold
in real time. Threads are invisible to it: while a lane thread starts, checks a path or
searches, virtual time runs on to whatever deadline is next, so on a loaded machine a
search "took" 2 s of virtual time and a test about deadlines failed now and then.

`HeldClock` is the lanes' `BUSY_OBSERVER`: while any lane thread is busy, the clock does not
jump at all; once every thread is idle (or hung on purpose, in `Hang.wait()`), it jumps as
soon as every task waits. A thread's work then takes no virtual time however slow the
machine is, and the virtual times a test sees are the ones the code's deadlines give.
"""

from __future__ import annotations

import contextlib
import math
import threading

import trio
import trio.testing

from lwc_trio.actors.lanes import BUSY_OBSERVER


class HeldClock:
    """Counts busy lane threads and holds `clock` still while any is; create it in the run."""

    def __init__(self, clock: trio.testing.MockClock) -> None:
        self.clock = clock
        self._threshold = clock.autojump_threshold
        self._token = trio.lowlevel.current_trio_token()
        self._trio_thread = threading.get_ident()
        self._lock = threading.Lock()
        self._busy = 0
        BUSY_OBSERVER.set(self)

    def __call__(self, delta: int) -> None:
        """The lanes' report: `delta` threads more (or fewer) are busy."""
        with self._lock:
            self._busy += delta
        if threading.get_ident() == self._trio_thread:
            # Handed work: hold the clock before the loop can next idle.
            self._apply()
        else:
            # Posting wakes the loop, so it cannot jump before `_apply` runs.
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(self._apply)

    def _apply(self) -> None:
        with self._lock:
            busy = self._busy
        # Below 0 only for a moment, as a lane closes while a hung thread is let go.
        self.clock.autojump_threshold = math.inf if busy > 0 else self._threshold


class Hang:
    """A deliberate hang in lane threads, which virtual time does not wait for; the test lets
    go of it with `release()`, in the trio thread, so the clock is held again at once."""

    def __init__(self, held: HeldClock) -> None:
        self._held = held
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._released = False
        self._waiting = 0

    def wait(self) -> None:
        """In a lane thread: block until `release()`; the thread does not count as busy."""
        with self._lock:
            if self._released:
                return
            self._waiting += 1
            self._held(-1)
        self._event.wait()

    def release(self) -> None:
        """In the trio thread: the hung threads run on, busy again from this moment."""
        with self._lock:
            self._released = True
            waiting, self._waiting = self._waiting, 0
        self._held(waiting)
        self._event.set()
