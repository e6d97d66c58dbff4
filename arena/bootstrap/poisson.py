"""Fast exact Poisson draws for many cells with small integer means, by table inversion.

Bootstrap weights draw one Poisson(count) per (cell, replicate): up to ~10^9 draws for an arena of
1,000 models, where numpy's per-draw samplers cost 40-100 ns. Cell counts are integers with few distinct
values, so each distinct mean gets an inversion table over 16-bit buckets of the uniform (a guide table,
Chen & Asau 1974; Devroye 1986, 'Non-uniform random variate generation', III.2.4): a draw is one 16-bit
random integer and one table look-up. A bucket that straddles a CDF jump (< 1% of draws) is resolved by
a fresh uniform within the bucket and a CDF search, so the result is the inversion of a uniform on [0, 1):
exact up to the float64 CDF (the mass beyond ``c + 12 sqrt(c) + 20`` is below 1e-30 and is folded into
the last value). Means above :data:`MAX_TABLE_MEAN` use numpy's sampler.
"""

from __future__ import annotations

import math
from functools import cached_property, lru_cache

import numpy as np

BITS = 16
BUCKETS = 1 << BITS
COARSE_SHIFT = 4
"""A first look-up over 2^12 coarse buckets (8 KiB a mean, cache-resident; the 128 KiB fine tables of a
few dozen means are not): only the ~1% of coarse buckets that span more than one fine value read the fine
table, so the draws are the same numbers, fetched faster."""
MIXED = np.iinfo(np.int16).min
COARSE_FROM = 16
"""Distinct means from which the coarse table is used: fewer fine tables (2 MiB) stay in cache anyway (1,000
models, 9 means: the extra pass costs more than it saves)."""
MAX_TABLE_MEAN = 4096
"""Larger counts are few (an arena's cells are many only when each is small): numpy draws them."""


def poisson_cdf(mean: int) -> np.ndarray:
    """CDF of Poisson(mean) at 0, 1, ..., c + 12 sqrt(c) + 20, the last value set to 1."""
    m = np.arange(int(mean + 12 * math.sqrt(mean) + 21))
    if mean == 0:
        return np.ones(1)
    log_fact = np.concatenate([[0.0], np.cumsum(np.log(m[1:]))])
    cdf = np.minimum(np.cumsum(np.exp(m * math.log(mean) - mean - log_fact)), 1.0)
    cdf[-1] = 1.0
    return cdf


@lru_cache(maxsize=4096)
def inversion_table(mean: int) -> tuple[np.ndarray, np.ndarray]:
    """(guide table over the 2^16 buckets, CDF) for Poisson(mean); negative entries ``-1 - k`` mark buckets
    that straddle a CDF jump, k being the smallest value drawn there."""
    cdf = poisson_cdf(mean)
    scaled = cdf * BUCKETS  # exact: BUCKETS is a power of two
    # at bucket b's start k = #{m: F(m) <= b / B}: the value m on buckets [ceil(B F(m-1)), ceil(B F(m)));
    # a bucket straddles a jump exactly when it is floor(B F(m)) for a B F(m) that is not an integer
    lut = np.repeat(np.arange(cdf.size, dtype=np.int16), np.diff(np.ceil(scaled), prepend=0).astype(np.int64))
    jumps = np.floor(scaled)
    inside = jumps[jumps != scaled].astype(np.int64)
    lut[inside] = -1 - lut[inside]  # (the CLI builds ~200 tables per run: int16 throughout, one pass)
    lut.flags.writeable = cdf.flags.writeable = False
    return lut, cdf


def buckets(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """``rng.integers(0, BUCKETS, shape, dtype=np.uint16)``, the same numbers and the same state after it,
    at about half the cost: numpy draws each pair of 16-bit integers from one 32-bit one, low half first,
    so they are read from 32-bit draws directly (tests/arena/test_refit.py pins the equality)."""
    size = shape[0] * shape[1]
    words = rng.integers(0, 1 << 32, (size + 1) // 2, dtype=np.uint32)
    return words.astype("<u4", copy=False).view("<u2")[:size].reshape(shape)


def _first_above(cdf: np.ndarray, off: np.ndarray, lo: np.ndarray, hi: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Per element, the first m in [lo, hi] with ``cdf[off + m] > u``, else hi: the inversion of ``u`` where
    every value below lo is known to have CDF <= u. A binary search (the tail buckets span tens of values:
    bucket 0 of Poisson(67) holds 0-35, so walking up cost ~35 passes for one draw in 65,536)."""
    lo, hi = lo.copy(), hi.copy()
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) // 2
        right = cdf[off + mid] <= u
        lo = np.where(active & right, mid + 1, lo)
        hi = np.where(active & ~right, mid, hi)


class PoissonTable:
    """Inversion tables for the integer means ``counts`` (C,); :meth:`draw` gives (n, C) Poisson counts."""

    def __init__(self, counts: np.ndarray):
        counts = np.asarray(counts)
        self.counts = counts
        self.size = counts.size
        integer = np.all(counts == np.round(counts)) and counts.size > 0 and counts.min() >= 0
        small = (counts <= MAX_TABLE_MEAN) if integer else np.zeros(counts.size, bool)
        self.big = np.flatnonzero(~small)  # drawn by numpy
        self.big_mean = counts[self.big].astype(np.float64)
        self.small = np.flatnonzero(small)
        values, group = np.unique(counts[self.small].astype(np.int64), return_inverse=True)
        luts, cdfs, offsets = [], [], [0]
        for v in values:
            lut, cdf = inversion_table(int(v))
            luts.append(lut)
            cdfs.append(cdf)
            offsets.append(offsets[-1] + cdf.size)
        self.top = max(cdf.size for cdf in cdfs) - 1 if cdfs else 0  # the largest value a table draws
        self.lut = np.concatenate(luts) if luts else np.zeros(0, np.int16)
        self.cdf = np.concatenate(cdfs) if cdfs else np.zeros(0)
        self.cdf_offset = np.asarray(offsets[:-1], np.int64)[group] if luts else np.zeros(0, np.int64)
        self.cdf_size = np.diff(offsets)[group] if luts else np.zeros(0, np.int64)
        self.base = (group * BUCKETS).astype(np.intp)  # (intp: take would convert int32 indices first)
        self.coarse = None
        if len(luts) >= COARSE_FROM:
            fine = self.lut.reshape(-1, 1 << COARSE_SHIFT)
            self.coarse = np.where((fine == fine[:, :1]).all(axis=1), fine[:, 0], MIXED).astype(np.int16)
            self.coarse_base = (group * (BUCKETS >> COARSE_SHIFT)).astype(np.int32)
        self.contiguous = self.small.size == self.size  # every cell from the tables: no scatter needed

    @cached_property
    def total(self) -> int:
        """The counts' sum, rounded: the multinomial's fixed total."""
        return int(round(float(np.sum(self.counts, dtype=np.float64))))

    @cached_property
    def share_cdf(self) -> np.ndarray:
        """Cumulative count shares (C,): the CDF over cells of a battle drawn from the counts."""
        return np.cumsum(self.counts) / self.counts.sum()

    def draw(self, n: int, rng: np.random.Generator, integer: bool = False) -> np.ndarray:
        """(n, C) float64 Poisson draws, row r independent of the others; with ``integer``, the same numbers
        as int16 when every cell is drawn from the tables (:attr:`contiguous`: each draw is below
        ``4096 + 12 * 64 + 21``), sparing callers that gather from them a float64 copy."""
        b = buckets(rng, (n, self.small.size))
        if self.coarse is None:
            k = np.take(self.lut, np.add(self.base, b, dtype=np.intp), mode="clip")  # (~2x fancy indexing)
        else:
            k = np.take(self.coarse, np.add(self.coarse_base, np.right_shift(b, COARSE_SHIFT), dtype=np.int32))
        amb = np.flatnonzero(k < 0)  # straddling fine buckets (and with the coarse table, mixed coarse ones)
        if amb.size and self.coarse is not None:  # the fine table for those
            cell = amb % self.small.size
            k.flat[amb] = self.lut[self.base[cell] + b.flat[amb]]
            amb = amb[k.flat[amb] < 0]
        if amb.size:
            start = -1 - k.flat[amb]
            cell = amb % self.small.size
            u = (b.flat[amb] + rng.random(amb.size)) / BUCKETS  # uniform within the bucket
            off, size = self.cdf_offset[cell], self.cdf_size[cell]
            k.flat[amb] = _first_above(self.cdf, off, start.astype(np.int64), size - 1, u)
        if self.contiguous:
            return k if integer else k.astype(np.float64)
        out = np.empty((n, self.size))
        out[:, self.small] = k
        out[:, self.big] = rng.poisson(np.broadcast_to(self.big_mean, (n, self.big.size)))
        return out
