"""Settings of a leaderboard fit, each a small frozen value that checks itself when it is built.

:class:`IntervalOptions` says how the uncertainty is computed (sandwich and/or bootstrap, level, replicates,
seed, sampling unit); :class:`EloScale` how strengths become ratings; :data:`arena.bt.likelihood.Ties` which tie model
is fitted. :func:`arena.leaderboard.fit_leaderboard` and :func:`arena.ppi.board.ppi_leaderboard` take them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

from arena.bootstrap.weights import WeightKind
from arena.bt.likelihood import TIES
from arena.bt.units import UNITS, Unit

CI = Literal["bootstrap", "sandwich", "both"]
CIS: tuple[str, ...] = get_args(CI)
WEIGHT_KINDS: tuple[str, ...] = get_args(WeightKind)


@dataclass(frozen=True)
class EloScale:
    """Rating scale: ``scale * log_base(strength) + init`` (Chatbot Arena: 400, 10, 1000)."""

    scale: float = 400.0
    base: float = 10.0
    init: float = 1000.0

    @property
    def per_nat(self) -> float:
        return self.scale / math.log(self.base)


@dataclass(frozen=True)
class IntervalOptions:
    """How a leaderboard's intervals are computed.

    ``ci``: ``"bootstrap"`` (percentile intervals and rank bounds from ``n_bootstrap`` refits, seeded by
    ``seed``), ``"sandwich"`` (Wald intervals from the robust covariance) or ``"both"``; ``lower``/``upper`` are
    the bootstrap's when there is one. ``level``: the coverage of every interval. ``unit`` (:mod:`arena.bt.units`):
    ``"item"`` clusters the sandwich and resamples items whenever an item holds several battles, ``"battle"``
    treats battles as independent. ``weights``: multinomial or Poisson bootstrap weights
    (:mod:`arena.bootstrap.weights`).
    ``cluster``: a battle column whose values are the resampling unit instead (style control only).
    """

    ci: CI = "bootstrap"
    level: float = 0.95
    n_bootstrap: int = 1000
    seed: int = 0
    unit: Unit = "item"
    weights: WeightKind = "multinomial"
    cluster: str | None = None

    def __post_init__(self) -> None:
        if self.ci not in CIS:
            raise ValueError(f"ci must be 'bootstrap', 'sandwich' or 'both', not {self.ci!r}")
        if not 0 < self.level < 1:
            raise ValueError(f"level must be between 0 and 1, not {self.level}")
        if self.unit not in UNITS:
            raise ValueError(f"unit must be one of {UNITS}, not {self.unit!r}")
        if self.weights not in WEIGHT_KINDS:
            raise ValueError(f"weights must be one of {WEIGHT_KINDS}, not {self.weights!r}")
        if self.bootstrap and self.n_bootstrap < 2:
            raise ValueError("n_bootstrap must be at least 2 for bootstrap intervals (or use ci='sandwich')")

    @property
    def sandwich(self) -> bool:
        """Whether sandwich intervals are wanted."""
        return self.ci in ("sandwich", "both")

    @property
    def bootstrap(self) -> bool:
        """Whether bootstrap intervals (and rank bounds) are wanted."""
        return self.ci in ("bootstrap", "both")

    @property
    def replicates(self) -> int:
        """Bootstrap refits to run: ``n_bootstrap``, or 0 without bootstrap intervals."""
        return self.n_bootstrap if self.bootstrap else 0


def check_ties(ties: str) -> None:
    """Refuse a tie model other than :data:`arena.bt.likelihood.TIES`."""
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, not {ties!r}")


def check_ridge(ridge: float) -> None:
    """Refuse a ridge that is not positive (it pins the free additive constant of the strengths)."""
    if not ridge > 0:
        raise ValueError(f"ridge must be positive, not {ridge}")
