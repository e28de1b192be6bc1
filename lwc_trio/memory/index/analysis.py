"""A bulk import's second process: it analyzes the Pages while this one writes them.

`lwc page import` of many Pages spends about half of its time on work that needs only the
Pages' text (splitting, counting and locating words, numbering them for the batch, stemming,
links, grouping and encoding the postings) and half on work that needs the store (rows,
SQLite). `AnalysisWorker` starts a second, isolated Python (`_BOOT`, `analysis_main.py`)
that does the first half on the second core. The index written is the one an in-process
write gives, value for value (a test compares them).

**Requests** (this process to the worker), one `Request` each, of three kinds:

- `ANALYZE`: a chunk of a write batch's Pages (`CHUNK` of them). The worker analyzes it
  (`chunks.BatchAnalyzer`), keeps its postings (`held.HeldPostings`) and answers with the
  Pages' analyses (`parts.without_postings`).
- `GROUP`: every chunk of the batch is analyzed. It carries the postings of the chunks this
  process analyzed itself (below). The worker answers with the batch's words and stems,
  then groups the postings by term while the writer still writes the batch's last rows.
- `PLACE`: the batch's documents written (`parts.Placed`: their places and doc ids; none
  when every Page was unchanged). The worker answers with the batch's postings encoded,
  part after part (`parts.EncodedPart`), which the writer stores as they come.

**Answers** are `Answer`s (`ok` and a value, or a traceback: the worker then exits) in
**frames**: a little-endian uint64 length, a byte (1: the request's last answer; `PLACE`
has several), then a pickle. Only this module's own two processes exchange them, over
their private pipes.

**This process's side** (`AnalysisWorker`): `submit` queues a batch's `ANALYZE` requests,
then its `GROUP` and `PLACE`; a feeder thread sends them in order, at most `_IN_FLIGHT`
unanswered (the worker is never idle, and the rest stay here), `GROUP` once no chunk of
its batch is being analyzed here and `PLACE` once the documents are known; a reader thread
collects the answer frames, so neither process waits on a full pipe while the other does.
`take` gives the Pages' analyses in order. When the writer needs a chunk the worker has not
answered yet, it analyzes a chunk not sent yet itself (the last one, or the one it needs)
instead of waiting, and that chunk's postings go with `GROUP`: both cores analyze until the
writer has rows to write. `batch` then hands the writer's index buffer a `GroupedBatch`:
its `words` are `GROUP`'s answer, its `parts` send `PLACE` and read the encoded postings.
The parent submits at most one batch ahead of the one it writes, which bounds what is held.

**The worker's side** (`analysis_main.py`) is a loop over requests with one batch's state:
the postings it holds (collecting, from the first `ANALYZE` of a batch), then the batch
being grouped (from `GROUP` to `PLACE`), then nothing held again. A request out of that
order is an error.

The worker sits in its own process group (a Ctrl-C at the terminal reaches only `lwc`, which
decides what is kept) and ends when its input closes; `close` ends it in every case. A
worker whose parent is gone (killed) ends quietly at its next answer. The standard
library's process pools were not used: the postings a batch's chunks leave in the worker
would have to travel back to this process (pickled, about as large as the batch's text) to
be grouped here, the cost this design avoids.
"""

from __future__ import annotations

import collections
import contextlib
import enum
import pickle
import queue
import struct
import subprocess
import sys
import threading
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, NamedTuple

from lwc_trio.exceptions import WikiError
from lwc_trio.memory.index.document import PageAnalysis
from lwc_trio.memory.index.parts import (
    AnalyzedChunk,
    EncodedPart,
    Held,
    PageText,
    Placed,
    held,
    without_postings,
)

if TYPE_CHECKING:
    from lwc_trio.memory.index.chunks import BatchAnalyzer

__all__ = [
    "CHUNK",
    "AnalysisWorker",
    "Analyzed",
    "Answer",
    "Kind",
    "Request",
    "read_frame",
    "write_frame",
]

CHUNK = 250
"""Pages per request: the writer starts on a chunk's Pages while the next is analyzed."""
_IN_FLIGHT = 2
"""Requests sent to the worker and not answered yet, at most."""
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
from lwc_trio.memory.index.analysis_main import main
sys.exit(main())
"""
"""The worker's start. `python -I` puts neither the working directory (a cloned repository
holding a `queue.py` or `pickle.py`) nor PYTHONPATH on `sys.path`, so the worker imports the
standard library and installed packages only, and loads `lwc_trio` from the very folder
this process loaded it from (a checkout or another release on PYTHONPATH included)."""
_NOTHING_PLACED = Placed(array("i"), array("i"), array("i"), [])
_NO_CHUNK = -1
"""The chunk number of a `GROUP` or `PLACE` request (an `ANALYZE`'s counts from 0)."""
_OUT_OF_STEP = "the page analysis process answered out of step"


class Kind(enum.Enum):
    """What a request asks of the worker (see the module's docstring)."""

    ANALYZE = "analyze"
    GROUP = "group"
    PLACE = "place"


class Request(NamedTuple):
    """One request, as it travels to the worker."""

    kind: Kind
    new_batch: bool
    """The first request of a write batch: the worker numbers the batch's keys anew."""
    pages: list[PageText]
    """`ANALYZE`'s Pages (slug, title, summary, body)."""
    start: int
    """`ANALYZE`'s place of its first Page in the batch."""
    held: list[Held]
    """`GROUP`'s postings of the chunks this process analyzed itself."""
    placed: Placed | None
    """`PLACE`'s documents written."""


class Answer(NamedTuple):
    """One frame of the worker's answer: `ok` and the value, or the worker's traceback."""

    ok: bool
    value: object


def read_frame(stream: IO[bytes]) -> tuple[bytes, bool] | None:
    """The next frame and whether it is its request's last; None at the end."""
    header = stream.read(_FRAME.size)
    if len(header) < _FRAME.size:
        return None
    size, last = _FRAME.unpack(header)
    data = stream.read(size)
    return (data, bool(last)) if len(data) == size else None


def write_frame(stream: IO[bytes], value: Request | Answer, *, last: bool = True) -> None:
    """Send `value` as one frame (`last`: the last answer to its request)."""
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_FRAME.pack(len(data), last))
    stream.write(data)
    stream.flush()


class Analyzed(NamedTuple):
    """One Page's analysis, as `AnalysisWorker.take` gives it."""

    page: PageAnalysis
    place: int
    """Its place in its batch: the worker holds its postings under it (`HeldPostings`)."""


class _Queued:
    """A request waiting to be sent, then to be answered (`AnalysisWorker`'s bookkeeping)."""

    __slots__ = ("batch", "held", "kind", "number", "pages", "placed", "start")

    def __init__(
        self, kind: Kind, number: int, batch: int, pages: list[PageText], start: int
    ) -> None:
        self.kind = kind
        self.number = number
        """An `ANALYZE` request's chunk number (in submission order, across batches)."""
        self.batch = batch
        self.pages = pages
        self.start = start
        """The place of its first Page in the batch."""
        self.held: list[Held] = []
        """`GROUP`'s: the postings of the batch's chunks analyzed here."""
        self.placed: Placed | None = None
        """`PLACE`'s: the documents written. It is sent once they are known."""

    def request(self, new_batch: bool) -> Request:
        return Request(self.kind, new_batch, self.pages, self.start, self.held, self.placed)


class AnalysisWorker:
    """This process's side: `submit` a write batch's Pages, `take` their analyses in order,
    then have the worker group and encode the batch's postings (`batch`, a `GroupedBatch`).
    See the module's docstring for the requests, the threads and who analyzes what."""

    def __init__(self) -> None:
        # Deferred for start-up speed: the analyzer needs numpy (~0.1 s), which a write too
        # small for a second process never loads.
        from lwc_trio.memory.index.chunks import BatchAnalyzer

        self._process = subprocess.Popen(
            [sys.executable, "-I", "-c", _BOOT, str(_PACKAGE / "__init__.py"), str(_PACKAGE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd="/",
            process_group=0,
        )
        self._lock = threading.Condition()
        self._queued: collections.deque[_Queued] = collections.deque()
        """Requests submitted and not sent to the worker yet (the feeder takes the first,
        `take` may analyze the last `ANALYZE` or the first itself)."""
        self._sent: collections.deque[_Queued] = collections.deque()
        self._closing = False
        self._slots = threading.Semaphore(_IN_FLIGHT)
        self._answers: queue.SimpleQueue[tuple[bytes, bool] | None] = queue.SimpleQueue()
        self._local: BatchAnalyzer = BatchAnalyzer(first=1)
        self._local_batch = -1
        self._done: dict[int, AnalyzedChunk] = {}
        """Chunks `take` analyzed itself, by number (their postings go to the worker)."""
        self._analyzing = 0
        """Chunks taken from the queue and being analyzed here: the batch's `GROUP`
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
                    queued = self._queued.popleft()
                    self._sent.append(queued)
                new_batch, batch = queued.batch != batch, queued.batch
                write_frame(stdin, queued.request(new_batch))
        except (BrokenPipeError, ValueError, OSError):
            pass  # the worker is gone: `take` says so
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    def _waits(self, queued: _Queued) -> bool:
        """Whether `queued`, first in the queue, must wait (the lock held)."""
        if queued.kind is Kind.GROUP:
            return self._analyzing > 0
        return queued.kind is Kind.PLACE and queued.placed is None

    def _collect(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        try:
            while (frame := read_frame(stdout)) is not None:
                self._answers.put(frame)
                if frame[1]:
                    self._slots.release()
        except (ValueError, OSError):
            pass
        self._answers.put(None)

    def submit(self, pages: Sequence[PageText]) -> None:
        """Queue one write batch's Pages (slug, title, summary, body) for analysis, then
        the grouping of its postings (`batch`)."""
        with self._lock:
            for start in range(0, len(pages), CHUNK):
                chunk = list(pages[start : start + CHUNK])
                self._queued.append(
                    _Queued(Kind.ANALYZE, self._chunks, self._batches, chunk, start)
                )
                self._chunks += 1
            for kind in (Kind.GROUP, Kind.PLACE):
                self._queued.append(_Queued(kind, _NO_CHUNK, self._batches, [], 0))
            self._batches += 1
            self._lock.notify_all()

    def take(self) -> Analyzed:
        """The next submitted Page's analysis (waits for it, or works it out)."""
        for found in self._current:
            return found
        self._current = self._split(self._chunk())
        return next(self._current)

    def _analyze(self, queued: _Queued) -> None:
        """Analyze `queued` (taken from the queue, `_analyzing` counted) here; its postings
        go with its batch's `GROUP` request, still queued."""
        try:
            new_batch, self._local_batch = queued.batch != self._local_batch, queued.batch
            analyzed = self._local.chunk(queued.pages, new_batch=new_batch)
            self._done[queued.number] = without_postings(analyzed, queued.start)
            with self._lock:
                group = next(
                    (r for r in self._queued if r.kind is Kind.GROUP and r.batch == queued.batch),
                    None,
                )
                if group is None:  # sent without this chunk's postings: never
                    raise RuntimeError("a batch's grouping request left before its postings")
                group.held.append(held(analyzed, queued.start))
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
        answer = self._answer(number)
        if not isinstance(answer, AnalyzedChunk):
            raise WikiError("internal_error", _OUT_OF_STEP)
        return answer

    def _last_queued(self) -> _Queued | None:
        """Take the last chunk not sent yet, if any: the batch's `GROUP` and `PLACE`, last in
        the queue, stay there."""
        queued = self._queued
        if len(queued) < 3 or queued[-3].kind is not Kind.ANALYZE:
            return None
        ends = queued.pop(), queued.pop()
        chunk = queued.pop()
        queued.extend(reversed(ends))
        return chunk

    def batch(self) -> _WorkerBatch:
        """The `GroupedBatch` of the batch whose Pages were all taken (`take`): its
        postings (those of the chunks analyzed here too) as the worker groups them."""
        return _WorkerBatch(self)

    def words(self) -> tuple[list[str], list[str]]:
        """`GROUP`'s answer for the batch whose Pages were all taken: its body words and,
        aligned, their stems."""
        words = self._answer(_NO_CHUNK, Kind.GROUP)
        if not (isinstance(words, tuple) and len(words) == 2):
            raise WikiError("internal_error", _OUT_OF_STEP)
        found: tuple[list[str], list[str]] = words
        return found

    def place(self, placed: Placed) -> Iterator[EncodedPart]:
        """Send the documents written of the batch whose Pages were all taken; its
        postings encoded by the worker, part after part, read as they are asked for
        (after its words: `words`)."""
        with self._lock:
            request = next((r for r in self._queued if r.kind is Kind.PLACE), None)
            if request is None or request.placed is not None:
                raise RuntimeError("no batch is waiting for its documents")
            request.placed = placed
            self._lock.notify_all()
        return self._parts()

    def _parts(self) -> Iterator[EncodedPart]:
        while True:
            part, last = self._frame(_NO_CHUNK, Kind.PLACE)
            if last:
                return
            if not isinstance(part, tuple):
                raise WikiError("internal_error", _OUT_OF_STEP)
            yield part

    def discard(self) -> None:
        """The batch whose Pages were all taken is not written (every Page unchanged):
        the worker drops its postings."""
        parts = self.place(_NOTHING_PLACED)
        self._answer(_NO_CHUNK, Kind.GROUP)
        for _part in parts:
            raise WikiError("internal_error", _OUT_OF_STEP)

    def _answer(self, number: int, kind: Kind = Kind.ANALYZE) -> object:
        """The worker's answer to the request of `kind` (an `ANALYZE`'s: to chunk
        `number`), which must be its next."""
        value, last = self._frame(number, kind)
        if not last:
            raise WikiError("internal_error", _OUT_OF_STEP)
        return value

    def _frame(self, number: int, kind: Kind = Kind.ANALYZE) -> tuple[object, bool]:
        """The worker's next answer frame, which must answer the request of `kind` (and
        chunk `number`), and whether it is that request's last."""
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
            sent = self._sent.popleft() if frame[1] else self._sent[0]
        answer = pickle.loads(frame[0])
        if not isinstance(answer, Answer):
            raise WikiError("internal_error", _OUT_OF_STEP)
        if not answer.ok:
            raise WikiError("internal_error", f"the page analysis process failed:\n{answer.value}")
        if sent.kind is not kind or sent.number != number:
            raise WikiError("internal_error", _OUT_OF_STEP)
        value = answer.value
        if kind is Kind.ANALYZE and not (
            isinstance(value, AnalyzedChunk) and len(value.pages) == len(sent.pages)
        ):
            raise WikiError("internal_error", _OUT_OF_STEP)
        return value, frame[1]

    def _split(self, chunk: AnalyzedChunk) -> Iterator[Analyzed]:
        if chunk.held < 0:
            raise WikiError("internal_error", _OUT_OF_STEP)
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
        return self._worker.words()

    def parts(self, placed: Placed) -> Iterator[EncodedPart]:
        return self._worker.place(placed)
