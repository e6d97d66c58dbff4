"""The ties models' parameter for a tie share (pure float math, shared by the fits and the simulator)."""

from __future__ import annotations

import math


def tie_parameter_for_rate(ties: str, tie_rate: float) -> float:
    """Ties-model parameter giving tie probability ``tie_rate`` between two equally strong models.

    Rao & Kupper (1967): ``P(tie | equal) = (theta - 1) / (theta + 1)`` so ``theta = (1 + r) / (1 - r)``.
    Davidson (1970): ``P(tie | equal) = nu / (2 + nu)`` so ``nu = 2 r / (1 - r)``. Plain BT returns 0.
    """
    if ties == "rao-kupper":
        return (1.0 + tie_rate) / (1.0 - tie_rate)
    if ties == "davidson":
        return 2.0 * tie_rate / (1.0 - tie_rate)
    return 0.0


def initial_psi(tie_share: float, ties: str) -> float:
    """The fit's log tie parameter matching a tie share at equal strengths (0 for ``half``, where it is
    unused): ``psi = log(log theta)`` for Rao-Kupper (``eta = exp(psi) = log theta``), ``log nu`` for Davidson."""
    share = min(max(tie_share, 1e-3), 0.999)
    if ties == "rao-kupper":
        return math.log(math.log(tie_parameter_for_rate(ties, share)))
    if ties == "davidson":
        return math.log(tie_parameter_for_rate(ties, share))
    return 0.0


def tie_parameter_from_psi(psi: float, ties: str) -> float | None:
    """The fits' log parameter ``psi`` on its classical scale: Rao-Kupper (1967) theta = exp(exp(psi)) (>= 1),
    Davidson (1970) nu = exp(psi); None for plain BT (``half``). The inverse of :func:`initial_psi`."""
    if ties == "half":
        return None
    return math.exp(math.exp(psi)) if ties == "rao-kupper" else math.exp(psi)
