"""A bulk import's second process: it analyzes the Pages while this one writes them.

`lwc page import` of many Pages spends about half of its time on work that needs only the
Pages' text (splitting, counting and locating words, numbering them for the batch, stemming,
links, grouping and encoding the postings) and half on work that needs the store (rows,
SQLite). `AnalysisWorker` starts a second, isolated Python (`_BOOT`), which runs
`indexer.BatchAnalyzer` on chunks of Pages sent through a pipe and sends the analyses back,
then groups and encodes each batch's postings (`indexer.HeldPostings`), so the two halves
run on two cores. The index written is the one an in-process write gives,
value for value (a test compares them).

The worker sits in its own process group (a Ctrl-C at the terminal reaches only `lwc`, which
decides what is kept) and ends when its input closes; `close` ends it in every case. A
worker whose parent is gone (killed) ends quietly at its next answer. Frames
are a little-endian uint64 length and a byte (1: the last answer to its request; a batch's
postings come in several frames), then a pickle; only this module's own processes exchange
them, over their private pipes.
"""

from __future__ import annotations

import collections
import contextlib
import os
import pickle
import queue
import signal
import struct
import subprocess
import sys
import threading
import traceback
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple

from lwc_trio.exceptions import WikiError
from lwc_trio.memory.index.document import PageAnalysis
from lwc_trio.memory.index.parts import (
    AnalyzedChunk,
    EncodedPart,
    Held,
    Placed,
    held,
    without_postings,
)

__all__ = ["CHUNK", "AnalysisWorker", "Analyzed", "main"]

CHUNK = 250
"""Pages per request: the writer starts on a chunk's Pages while the next is analyzed."""
_IN_FLIGHT = 2
"""Chunks sent to the worker and not answered yet, at most."""
_FRAME = struct.Struct("<QB")
"""A frame's header: its length, and 1 when it is its request's last answer."""
_PACKAGE = Path(__file__).resolve().parents[2]
"""The `lwc_trio` package this process runs: the worker runs the same one."""
_BOOT = """\
import importlib.util, sys
spec = importlib.util.spec_from_file_location(
    "lwc_trio", sys.argv[1], submodule_search_locations=[sys.argv[2]])
package = importlib.util.module_from_spec(spec)
sys.modules["lwc_trio"] = package
spec.loader.exec_module(package)
from lwc_trio.memory.index.analysis import main
sys.exit(main())
"""
"""The worker's start. `python -I` puts neither the working directory (a cloned repository
holding a `queue.py` or `pickle.py`) nor PYTHONPATH on `sys.path`, so the worker imports the
standard library and installed packages only, and loads `lwc_trio` from the very folder
this process loaded it from (a checkout or another release on PYTHONPATH included)."""
_NOTHING_PLACED = Placed(array("i"), array("i"), array("i"), [])
_GROUP, _PLACE = -1, -2
"""The numbers of a batch's two last requests: group its postings (sent once every chunk
is analyzed), then encode them for the documents written (sent once they are)."""


class Analyzed(NamedTuple):
    """One Page's analysis, as `AnalysisWorker.take` gives it."""

    page: PageAnalysis
    place: int
    """Its place in its batch: the worker holds its postings under it (`HeldPostings`)."""


class _Chunk:
    """A request to the worker: a chunk of a batch's Pages to analyze, or one of the
    batch's two last requests (`_GROUP`, `_PLACE`: `AnalysisWorker.batch`)."""

    __slots__ = ("batch", "held", "number", "pages", "placed", "start")

    def __init__(
        self, number: int, batch: int, pages: list[tuple[str, str, str | None, str]], start: int
    ) -> None:
        self.number = number
        self.batch = batch
        self.pages = pages
        self.start = start
        """The place of its first Page in the batch."""
        self.held: list[Held] = []
        """`_GROUP`'s: the postings of the batch's chunks analyzed here."""
        self.placed: Placed | None = None
        """`_PLACE`'s: the documents written. It is sent once they are known."""


def _read_frame(stream: IO[bytes]) -> tuple[bytes, bool] | None:
    """The next frame and whether it is its request's last; None at the end."""
    header = stream.read(_FRAME.size)
    if len(header) < _FRAME.size:
        return None
    size, last = _FRAME.unpack(header)
    data = stream.read(size)
    return (data, bool(last)) if len(data) == size else None


def _write_frame(stream: IO[bytes], value: Any, *, last: bool = True) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_FRAME.pack(len(data), last))
    stream.write(data)
    stream.flush()


def main() -> int:
    """The worker: analyze each request until the input closes or nobody reads the answers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what a Ctrl-C stops
    try:
        return _serve(sys.stdin.buffer, sys.stdout.buffer)
    except BrokenPipeError:
        # The parent is gone: nobody reads the answers, and its terminal wants no traceback
        # (nor the one Python would print flushing stdout at exit).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _serve(stdin: IO[bytes], stdout: IO[bytes]) -> int:
    from lwc_trio.memory.index.chunks import BatchAnalyzer
    from lwc_trio.memory.index.held import HeldBatch, HeldPostings

    analyzer = BatchAnalyzer(first=0)
    kept = HeldPostings()
    batch: HeldBatch | None = None
    failed: str | None = None
    """The batch's grouping failed after its words were sent: `_PLACE`'s answer."""
    while (request := _read_frame(stdin)) is not None:
        number, new_batch, pages, start, theirs, placed = pickle.loads(request[0])
        try:
            if number == _GROUP:  # every chunk analyzed: the writer's postings come too
                for chunk in theirs:
                    kept.hold(chunk)
                batch = kept.group()
                _write_frame(stdout, ("ok", batch.words()))
                try:
                    batch.group()  # while the writer writes the batch's last rows
                except Exception:
                    failed = traceback.format_exc(limit=5)
                continue
            if number == _PLACE:  # the documents written: the postings encoded, in parts
                if failed is not None:
                    raise RuntimeError(failed)
                if batch is None:
                    raise RuntimeError("a batch's documents came before its postings")
                parts, batch = batch.parts(placed), None
                for part in parts:
                    _write_frame(stdout, ("ok", part), last=False)
                answer: tuple[str, Any] = ("ok", None)
            elif new_batch and (len(kept) or batch is not None):
                raise RuntimeError("a write batch began before the last one was grouped")
            else:
                analyzed = analyzer.chunk(pages, new_batch=new_batch)
                kept.hold(held(analyzed, start))
                answer = ("ok", without_postings(analyzed, start))
        except Exception:
            answer = ("error", traceback.format_exc(limit=5))
        _write_frame(stdout, answer)
        if answer[0] == "error":
            return 1
    return 0


class AnalysisWorker:
    """The parent's side: `submit` a write batch's Pages, `take` their analyses in order,
    then have the worker group and encode the batch's postings (`batch`, a `GroupedBatch`).

    A feeder thread sends the chunks (two at a time at most: the worker is never idle, and
    the rest stay here) and a reader thread collects the answers, so neither process ever
    waits on a full pipe while the other does. When the writer needs a chunk the worker has
    not answered yet, it analyzes one of the chunks not sent yet itself (the last one, or
    the one it needs) instead of waiting: both cores analyze until the writer has rows to
    write. The worker keeps the postings of the chunks it analyzed; those of the chunks
    analyzed here go with the request to group (`_GROUP`, queued after the batch's chunks
    and sent once none of them is being analyzed here). The worker answers with the batch's
    words and groups the postings by term while the writer still writes the batch's rows;
    at the flush the writer sends the documents written (`_PLACE`), writes the words, and
    writes the postings the worker encodes meanwhile, part after part, as they come: the
    second core does that part of the flush too. The parent submits at most one batch ahead
    of the one it writes, which bounds what is held in memory."""

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-I", "-c", _BOOT, str(_PACKAGE / "__init__.py"), str(_PACKAGE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd="/",
            process_group=0,
        )
        self._lock = threading.Condition()
        self._queued: collections.deque[_Chunk] = collections.deque()
        """Chunks submitted and not sent to the worker yet (the feeder takes the first,
        `take` may analyze the last or the first itself)."""
        self._sent: collections.deque[_Chunk] = collections.deque()
        self._closing = False
        self._slots = threading.Semaphore(_IN_FLIGHT)
        self._answers: queue.SimpleQueue[tuple[bytes, bool] | None] = queue.SimpleQueue()
        from lwc_trio.memory.index.chunks import BatchAnalyzer

        self._local = BatchAnalyzer(first=1)
        self._local_batch = -1
        self._done: dict[int, AnalyzedChunk] = {}
        """Chunks `take` analyzed itself, by number (their postings go to the worker)."""
        self._analyzing = 0
        """Chunks taken from the queue and being analyzed here: the batch's `_GROUP`
        request waits for their postings."""
        self._batches = 0
        self._chunks = 0
        self._next = 0
        """The number of the chunk `take` reads next."""
        self._current: Iterator[Analyzed] = iter(())
        self._threads = [
            threading.Thread(target=self._feed, name="lwc-analysis-feed", daemon=True),
            threading.Thread(target=self._collect, name="lwc-analysis-read", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _feed(self) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        batch = -1
        try:
            while True:
                self._slots.acquire()
                with self._lock:
                    while not self._closing and (not self._queued or self._waits(self._queued[0])):
                        self._lock.wait()
                    if self._closing:
                        return
                    chunk = self._queued.popleft()
                    self._sent.append(chunk)
                new_batch, batch = chunk.batch != batch, chunk.batch
                request = (
                    chunk.number,
                    new_batch,
                    chunk.pages,
                    chunk.start,
                    chunk.held,
                    chunk.placed,
                )
                _write_frame(stdin, request)
        except (BrokenPipeError, ValueError, OSError):
            pass  # the worker is gone: `take` says so
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    def _waits(self, chunk: _Chunk) -> bool:
        """Whether the request `chunk`, first in the queue, must wait (the lock held)."""
        if chunk.number == _GROUP:
            return self._analyzing > 0
        return chunk.number == _PLACE and chunk.placed is None

    def _collect(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        try:
            while (frame := _read_frame(stdout)) is not None:
                self._answers.put(frame)
                if frame[1]:
                    self._slots.release()
        except (ValueError, OSError):
            pass
        self._answers.put(None)

    def submit(self, pages: Sequence[tuple[str, str, str | None, str]]) -> None:
        """Queue one write batch's Pages (slug, title, summary, body) for analysis, then
        the grouping of its postings (`batch`)."""
        with self._lock:
            for start in range(0, len(pages), CHUNK):
                chunk = _Chunk(
                    self._chunks, self._batches, list(pages[start : start + CHUNK]), start
                )
                self._queued.append(chunk)
                self._chunks += 1
            self._queued.append(_Chunk(_GROUP, self._batches, [], 0))
            self._queued.append(_Chunk(_PLACE, self._batches, [], 0))
            self._batches += 1
            self._lock.notify_all()

    def take(self) -> Analyzed:
        """The next submitted Page's analysis (waits for it, or works it out)."""
        for found in self._current:
            return found
        self._current = self._split(self._chunk())
        return next(self._current)

    def _analyze(self, chunk: _Chunk) -> None:
        """Analyze `chunk` (taken from the queue, `_analyzing` counted) here; its postings
        go with its batch's `_GROUP` request, still queued."""
        try:
            new_batch, self._local_batch = chunk.batch != self._local_batch, chunk.batch
            analyzed = self._local.chunk(chunk.pages, new_batch=new_batch)
            self._done[chunk.number] = without_postings(analyzed, chunk.start)
            with self._lock:
                request = next(
                    (r for r in self._queued if r.number == _GROUP and r.batch == chunk.batch),
                    None,
                )
                if request is None:  # sent without this chunk's postings: never
                    raise RuntimeError("a batch's grouping request left before its postings")
                request.held.append(held(analyzed, chunk.start))
        finally:
            with self._lock:
                self._analyzing -= 1
                self._lock.notify_all()

    def _chunk(self) -> AnalyzedChunk:
        number = self._next
        if number >= self._chunks:
            raise RuntimeError("no Pages were submitted for analysis")
        self._next += 1
        while number not in self._done:
            with self._lock:
                if self._sent and self._sent[0].number == number:
                    if not self._answers.empty():
                        break
                    mine = self._last_queued()
                elif self._queued and self._queued[0].number == number:
                    mine = self._queued.popleft()
                else:
                    mine = None
                if mine is not None:
                    self._analyzing += 1
            if mine is None:
                break  # sent: wait for the worker's answer
            self._analyze(mine)
        found = self._done.pop(number, None)
        if found is not None:
            return found
        answer: AnalyzedChunk = self._answer(number)
        return answer

    def _last_queued(self) -> _Chunk | None:
        """Take the last chunk not sent yet, if any: the batch's two last requests, last in
        the queue, stay there."""
        queued = self._queued
        if len(queued) < 3 or queued[-3].number < 0:
            return None
        ends = queued.pop(), queued.pop()
        chunk = queued.pop()
        queued.extend(reversed(ends))
        return chunk

    def batch(self) -> _WorkerBatch:
        """The `GroupedBatch` of the batch whose Pages were all taken (`take`): its
        postings (those of the chunks analyzed here too) as the worker groups them."""
        return _WorkerBatch(self)

    def place(self, placed: Placed) -> Iterator[EncodedPart]:
        """Send the documents written of the batch whose Pages were all taken; its
        postings encoded by the worker, part after part, read as they are asked for
        (after its words: `_WorkerBatch.words`)."""
        with self._lock:
            request = next((r for r in self._queued if r.number == _PLACE), None)
            if request is None or request.placed is not None:
                raise RuntimeError("no batch is waiting for its documents")
            request.placed = placed
            self._lock.notify_all()
        return self._parts()

    def _parts(self) -> Iterator[EncodedPart]:
        while True:
            part, last = self._frame(_PLACE)
            if last:
                return
            yield part

    def discard(self) -> None:
        """The batch whose Pages were all taken is not written (every Page unchanged):
        the worker drops its postings."""
        parts = self.place(_NOTHING_PLACED)
        self._answer(_GROUP)
        for _part in parts:
            raise WikiError("internal_error", "the page analysis process answered out of step")

    def _answer(self, number: int) -> Any:
        """The worker's answer to the request `number`, which must be its next."""
        value, last = self._frame(number)
        if not last:
            raise WikiError("internal_error", "the page analysis process answered out of step")
        return value

    def _frame(self, number: int) -> tuple[Any, bool]:
        """The worker's next answer frame, which must answer the request `number`, and
        whether it is that request's last."""
        frame = self._answers.get()
        if frame is None:
            # The worker is gone: whatever was asked (sent or not yet, the feeder may not
            # have taken the request), every later answer is this one too.
            self._answers.put(None)
            code = self._process.poll()
            raise WikiError(
                "internal_error",
                f"the page analysis process ended unexpectedly (exit status {code}); "
                "batches written before stay",
            )
        with self._lock:
            if not self._sent:
                raise WikiError("internal_error", "the page analysis process answered unasked")
            chunk = self._sent.popleft() if frame[1] else self._sent[0]
        status, value = pickle.loads(frame[0])
        if status != "ok":
            raise WikiError("internal_error", f"the page analysis process failed:\n{value}")
        if chunk.number != number or (number >= 0 and len(value.pages) != len(chunk.pages)):
            raise WikiError("internal_error", "the page analysis process answered out of step")
        return value, frame[1]

    def _split(self, chunk: AnalyzedChunk) -> Iterator[Analyzed]:
        if chunk.held < 0:
            raise WikiError("internal_error", "the page analysis process answered out of step")
        for place, page in enumerate(chunk.pages, chunk.held):
            yield Analyzed(page, place)

    def close(self) -> None:
        """End the worker (at once when analyses are still pending) and its threads."""
        with self._lock:
            self._closing = True
            self._lock.notify_all()
        self._slots.release()
        if self._next < self._chunks:
            self._process.kill()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        for thread in self._threads:
            thread.join(timeout=10)
        if self._process.stdout is not None:
            self._process.stdout.close()


class _WorkerBatch:
    """`AnalysisWorker.batch`: a `GroupedBatch` whose postings the worker keeps."""

    def __init__(self, worker: AnalysisWorker) -> None:
        self._worker = worker

    def words(self) -> tuple[list[str], list[str]]:
        words: tuple[list[str], list[str]] = self._worker._answer(_GROUP)
        return words

    def parts(self, placed: Placed) -> Iterator[EncodedPart]:
        return self._worker.place(placed)
