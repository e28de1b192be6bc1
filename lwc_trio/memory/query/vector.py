"""BM25F scoring over whole posting segments with numpy (`search.py` imports it lazily).

The same arithmetic as `scoring.score_prepared`, a few numpy operations per segment instead
of one Python step per posting: each document's score is the sum of its terms' parts
weight × tf / denominator, added in the order of the terms given, every part and sum an
IEEE double. Element-wise numpy operations are correctly rounded like Python's floats and a
document is added to at most once per step, so every score is bit for bit the one the
Python loop computes.

Imported only for queries with many postings (`scoring.VECTOR_MIN`): numpy costs about
0.1 s to import and 20 MB of memory, which a one-shot CLI search of a small store should
not pay.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import numpy.typing as npt

__all__ = [
    "DENSE_SLACK",
    "SORT_MAX",
    "VectorScores",
    "denominators",
    "near_signatures",
    "score",
    "signatures",
    "valid_postings",
]

DENSE_SLACK = 1 << 18
"""Doc ids up to this (or 4 × the postings scored) index a dense score array (at most 2 MB
of scores for a query of fewer postings); beyond it (a store of more documents, or one
rewritten many times, has high ids) the ids are first mapped to 0..n−1. At 100,000 Pages
(ids past 65,536) the mapping's sort cost a query of 10,000–40,000 postings 1–5 ms, the dense
array's few passes a tenth of that."""

SORT_MAX = 4_096
"""Tuples `VectorScores.best` sorts in Python at most (a few ms); more are ordered by numpy."""

Prepared = tuple["array[int]", "array[int]", "array[float]", "array[int]"]


def signatures(words: Sequence[str], length: int, chunk: int) -> npt.NDArray[np.uint32]:
    """`fuzzy.signature` of each of `words` (all `length` characters long), `chunk` words
    per step: their UTF-32 code points side by side, one bit per code mod 32, OR-ed."""
    out = np.empty(len(words), dtype=np.uint32)
    one = np.uint32(1)
    for start in range(0, len(words), chunk):
        part = words[start : start + chunk]
        codes = np.frombuffer("".join(part).encode("utf-32-le"), dtype=np.uint32)
        bits = np.left_shift(one, codes & np.uint32(31)).reshape(len(part), length)
        out[start : start + len(part)] = np.bitwise_or.reduce(bits, axis=1)
    return out


def near_signatures(sigs: npt.NDArray[np.uint32], signature: int, most: int) -> list[int]:
    """The positions of `sigs` (32-bit character-set masks, `fuzzy.signature`) that differ
    from `signature` in at most `most` bits: one numpy pass over a vocabulary bucket
    instead of a rapidfuzz comparison per word."""
    diff = sigs ^ np.uint32(signature)
    if hasattr(np, "bitwise_count"):  # numpy ≥ 2
        bits = np.bitwise_count(diff)
    else:  # pragma: no cover - numpy 1.26
        bits = np.unpackbits(diff.view(np.uint8)).reshape(-1, 32).sum(axis=1)
    found: list[int] = np.flatnonzero(bits <= most).tolist()
    return found


def _ints(values: array[int]) -> npt.NDArray[np.int32]:
    return np.frombuffer(values, dtype=np.int32)


def denominators(tws: array[int], dls: array[int], k: float, kb: float) -> array[float]:
    """tw + k + kb × dl per posting, as `scoring.prepare` computes it ((tw + k) first)."""
    dens = array("d")
    dens.frombytes((_ints(tws) + k + kb * _ints(dls)).tobytes())
    return dens


def valid_postings(blob: bytes) -> bool:
    """`scoring._segment`'s checks of a packed segment (whole postings already checked):
    ascending distinct positive doc ids, positive counts, lengths ≥ 0, firsts ≥ −1."""
    rows = np.frombuffer(blob, dtype="<i4").reshape(-1, 4)
    ids = rows[:, 0]
    low = rows.min(axis=0)  # each column's minimum, one reduction (ascending ids: the first)
    return bool(
        low[0] >= 1
        and low[1] >= 1
        and low[2] >= 0
        and low[3] >= -1
        and (len(ids) < 2 or (ids[1:] > ids[:-1]).all())
    )


class VectorScores:
    """Scores of the documents any term matched (`scoring.Scores`)."""

    def __init__(
        self,
        ids: npt.NDArray[np.int64],
        values: npt.NDArray[np.float64],
        exact: npt.NDArray[np.bool_] | None,
    ) -> None:
        self.ids = ids  # ascending
        self.values = values
        self.exact = exact
        self._last: tuple[int, npt.NDArray[np.bool_]] | None = None
        """The last `_top` asked for: a walk's windows share their bounds."""

    def __len__(self) -> int:
        return len(self.ids)

    def finite(self) -> bool:
        return bool(np.isfinite(self.values).all())

    def _top(self, n: int) -> npt.NDArray[np.bool_]:
        """Which documents are the best `n` by (−score, doc id), found without sorting them:
        one partition finds the n-th best score, and of the documents tied at it the
        lowest ids (the first in `ids`, which ascend) fill the rest. O(len) whatever the
        ties (a store can make every score equal)."""
        if self._last is not None and self._last[0] == n:
            return self._last[1]
        mask = self._select(n)
        self._last = (n, mask)
        return mask

    def _select(self, n: int) -> npt.NDArray[np.bool_]:
        values = self.values
        if n >= len(values):
            return np.ones(len(values), dtype=np.bool_)
        if n <= 0:
            return np.zeros(len(values), dtype=np.bool_)
        cutoff = np.partition(values, len(values) - n)[len(values) - n]
        keep: npt.NDArray[np.bool_] = values > cutoff
        ties = np.flatnonzero(values == cutoff)[: n - int(np.count_nonzero(keep))]
        keep[ties] = True
        return keep

    def best(self, n: int) -> list[tuple[float, int]]:
        """`(−score, doc_id)` of the best `n`, best first, ties by doc id (`best_first`)."""
        if n <= 0:
            return []
        keep = self._top(n)
        ids, values = self.ids[keep], self.values[keep]
        if len(ids) > SORT_MAX:  # n large: ordered by numpy, n of them only
            order = np.lexsort((ids, -values))
            return list(zip((-values[order]).tolist(), ids[order].tolist(), strict=True))
        return sorted(zip((-values).tolist(), ids.tolist(), strict=True))

    def ranked(self, start: int, stop: int, chunk: int) -> Iterator[list[tuple[float, int]]]:
        """`(−score, doc_id)` of the documents ranked `start` to `stop` (excluded), in no
        particular order, `chunk` at a time: two partitions, no sort, and only a chunk
        turned into Python tuples at once, so each step stays short however many
        documents there are (a sort of millions held a thread for seconds)."""
        before = self._top(start)
        window = np.flatnonzero(self._top(stop) & ~before)
        for at in range(0, len(window), chunk):
            part = window[at : at + chunk]
            yield list(zip((-self.values[part]).tolist(), self.ids[part].tolist(), strict=True))

    def is_exact(self, doc_id: int) -> bool:
        if self.exact is None:
            return True
        i = int(np.searchsorted(self.ids, doc_id))
        return i < len(self.ids) and int(self.ids[i]) == doc_id and bool(self.exact[i])


SLICE = 1 << 20
"""Postings scored in one step: the steps between which `score` checks the request's
cancellation (a few milliseconds each)."""


def score(
    terms: Sequence[tuple[float, int, Sequence[Prepared]]],
    postings: int,
    corrected: bool,
    check: Callable[[], None] = lambda: None,
) -> VectorScores:
    """BM25F over `(weight, exact, segments)` per query term, in term order; `postings` is
    their total length, `corrected` whether any term is a correction (else every match is
    exact); `check()` runs between steps (it raises to stop).

    Segment after segment in term order, `SLICE` postings at a time, each part (w × tf) / den
    as the Python loop groups it is added to its document's score: a document appears at
    most once in a segment (its ids ascend, checked when it was decoded), so each addition
    is one step of the loop's own sum, in its order, and every score is the loop's, bit for
    bit."""
    top = max(int(seg[0][-1]) for _w, _e, segs in terms for seg in segs if len(seg[0])) + 1
    universe: npt.NDArray[np.int64] | None = None
    size = top
    if top > max(4 * postings, DENSE_SLACK):
        # The distinct ids, ascending (`np.unique`, whose hashing took 2–3 times as long).
        every = np.frombuffer(
            b"".join([seg[0] for _w, _e, segs in terms for seg in segs]), dtype=np.int32
        )
        ordered = np.sort(every.astype(np.int64))
        first = np.empty(len(ordered), dtype=np.bool_)
        first[:1] = True
        np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
        universe = ordered[first]
        size = len(universe)
    values = np.zeros(size, dtype=np.float64)
    touched = np.zeros(size, dtype=np.bool_)
    exact = np.zeros(size, dtype=np.bool_) if corrected else None
    for w, is_exact, segs in terms:
        for seg in segs:
            ids = np.frombuffer(seg[0], dtype=np.int32)
            tws = np.frombuffer(seg[1], dtype=np.int32)
            dens = np.frombuffer(seg[2], dtype=np.float64)
            for at in range(0, len(ids), SLICE):
                check()
                end = at + SLICE
                index: npt.NDArray[np.integer] = ids[at:end]
                if universe is not None:
                    index = np.searchsorted(universe, index)
                values[index] += w * tws[at:end] / dens[at:end]
                touched[index] = True
                if exact is not None and is_exact:
                    exact[index] = True
    check()
    where = np.flatnonzero(touched)
    found = where if universe is None else universe[where]
    return VectorScores(
        found.astype(np.int64), values[where], None if exact is None else exact[where]
    )
