"""The analysis process's own side: it answers `analysis.AnalysisWorker`'s requests.

Started by `analysis._BOOT` (an isolated Python); reads `Request` frames on stdin and writes
`Answer` frames on stdout until its input closes (see `analysis.py` for the requests and
their order). It holds one write batch at a time (`_Batches`): the postings of the batch's
chunks (collecting, from its first `ANALYZE`), then the batch being grouped (from `GROUP` to
`PLACE`); a request that comes out of that order is answered with an error, and any error
ends the process.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import traceback
from collections.abc import Iterator
from typing import IO

from lwc_trio.memory.index.analysis import Answer, Kind, Request, read_frame, write_frame
from lwc_trio.memory.index.chunks import BatchAnalyzer
from lwc_trio.memory.index.held import HeldBatch, HeldPostings
from lwc_trio.memory.index.parts import AnalyzedChunk, EncodedPart, held, without_postings

__all__ = ["main"]


def main() -> int:
    """The worker: answer each request until the input closes or nobody reads the answers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what a Ctrl-C stops
    try:
        return _serve(sys.stdin.buffer, sys.stdout.buffer)
    except BrokenPipeError:
        # The parent is gone: nobody reads the answers, and its terminal wants no traceback
        # (nor the one Python would print flushing stdout at exit).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


class _Batches:
    """The worker's state: the batch analyzer (keys numbered per batch), the postings held
    for the current batch, and that batch once it is being grouped."""

    def __init__(self) -> None:
        self.analyzer = BatchAnalyzer(first=0)
        self.kept = HeldPostings()
        self.grouping: HeldBatch | None = None
        """From `GROUP` to `PLACE`: the batch being grouped."""
        self.failed: str | None = None
        """The grouping failed after the words were sent: `PLACE`'s answer."""

    def analyze(self, request: Request) -> AnalyzedChunk:
        """`ANALYZE`: the chunk's analyses; its postings are held."""
        if request.new_batch and (len(self.kept) or self.grouping is not None):
            raise RuntimeError("a write batch began before the last one was grouped")
        analyzed = self.analyzer.chunk(request.pages, new_batch=request.new_batch)
        self.kept.hold(held(analyzed, request.start))
        return without_postings(analyzed, request.start)

    def group(self, request: Request, stdout: IO[bytes]) -> None:
        """`GROUP`: every chunk analyzed (the writer's postings come with it). The words are
        answered at once, then the postings are grouped while the writer writes."""
        for chunk in request.held:
            self.kept.hold(chunk)
        self.grouping = self.kept.group()
        write_frame(stdout, Answer(True, self.grouping.words()))
        try:
            self.grouping.group()  # while the writer writes the batch's last rows
        except Exception:
            self.failed = traceback.format_exc(limit=5)

    def place(self, request: Request) -> Iterator[EncodedPart]:
        """`PLACE`: the batch's postings encoded for the documents written, in parts."""
        if self.failed is not None:
            raise RuntimeError(self.failed)
        if self.grouping is None or request.placed is None:
            raise RuntimeError("a batch's documents came before its postings")
        grouping, self.grouping = self.grouping, None
        return grouping.parts(request.placed)


def _serve(stdin: IO[bytes], stdout: IO[bytes]) -> int:
    batches = _Batches()
    while (frame := read_frame(stdin)) is not None:
        request = pickle.loads(frame[0])
        try:
            if not isinstance(request, Request):
                raise TypeError("a request that is not a `Request`")
            if request.kind is Kind.GROUP:
                batches.group(request, stdout)
                continue
            if request.kind is Kind.PLACE:
                for part in batches.place(request):
                    write_frame(stdout, Answer(True, part), last=False)
                answer = Answer(True, None)
            else:
                answer = Answer(True, batches.analyze(request))
        except Exception:
            answer = Answer(False, traceback.format_exc(limit=5))
        write_frame(stdout, answer)
        if not answer.ok:
            return 1
    return 0
