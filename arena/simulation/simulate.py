"""Simulated arenas with known truth: Bradley-Terry voters with ties, position and length bias, noisy voters.

The generator is vectorised numpy (10M battles in a few seconds). The math is three small pure
functions (:func:`tie_parameter`, :func:`outcome_probabilities`, :func:`draw_outcomes`); :func:`simulate_codes`
composes them into integer arrays, :func:`simulate` turns those into a validated :class:`arena.io.battles.Battles`
(Chatbot Arena layout, with ``sum_assistant_a_tokens``/``_b`` token counts for style control) plus a truth table.

Scale: strengths are natural-log Bradley-Terry scores, ``P(a beats b) = sigmoid(s_a - s_b)`` without ties;
the ties models are parameterised so that the same strengths are the ones the ties-aware fits recover.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from arena.bt.ties import tie_parameter_for_rate
from arena.io.battles import LAYOUTS as _LAYOUTS
from arena.io.battles import (
    STYLE_COLUMNS,
    Battles,
    validate,
)
from preflab.outcomes import BATTLE_LABELS, Outcome

TiesModel = Literal["none", "rao-kupper", "davidson"]
TIES_MODELS: tuple[str, ...] = ("none", "rao-kupper", "davidson")

SEED_STRENGTHS: tuple[float, ...] = (1.60, 1.20, 0.90, 0.40, 0.0)
"""The seed's recovery setting (``arena_sim.py``): five models, the last anchored at 0."""


@dataclass(frozen=True)
class ArenaSpec:
    """Everything that defines a simulated arena (the truth), as plain data.

    ``strengths`` are natural-log BT scores. ``tie_rate`` is the tie probability between two equally strong
    models under ``ties`` (ignored for ``"none"``). ``position_bias`` adds to the logit of the left answer
    (``model_a``). ``length_bias`` multiplies the length feature ``(len_a - len_b) / (len_a + len_b)`` on the
    logit scale; each model's answer length is log-normal around ``mean_tokens[i]`` with log-sd
    ``length_sigma``. ``random_voters`` / ``adversarial_voters`` are fractions of the ``n_voters`` voters
    who vote a fair coin (with the same tie rate) or flip the winner. ``bothbad_share`` of the ties are
    recorded as Chatbot Arena's ``tie (bothbad)`` (a label only: both tie kinds are ties to every fit).
    """

    strengths: tuple[float, ...]
    models: tuple[str, ...] = ()
    ties: TiesModel = "none"
    tie_rate: float = 0.0
    position_bias: float = 0.0
    length_bias: float = 0.0
    mean_tokens: tuple[float, ...] = ()
    length_sigma: float = 0.5
    n_voters: int = 1
    random_voters: float = 0.0
    adversarial_voters: float = 0.0
    bothbad_share: float = 0.0
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        k = len(self.strengths)
        if k < 2:
            raise ValueError(f"an arena needs at least 2 models; got {k} strength(s)")
        if not self.models:
            object.__setattr__(self, "models", default_model_names(k))
        if not self.mean_tokens:
            object.__setattr__(self, "mean_tokens", (500.0,) * k)
        if len(self.models) != k or len(self.mean_tokens) != k:
            raise ValueError(f"models ({len(self.models)}) and mean_tokens ({len(self.mean_tokens)}) must "
                             f"have one entry per strength ({k})")
        if len(set(self.models)) != k:
            raise ValueError("model names must be distinct")
        self._check_rates()

    def _check_rates(self) -> None:
        """The tie model and every rate, share and length setting within its range."""
        if self.ties not in TIES_MODELS:
            raise ValueError(f"ties must be one of {TIES_MODELS}; got {self.ties!r}")
        if not 0.0 <= self.tie_rate < 1.0 or (self.ties == "none" and self.tie_rate > 0):
            raise ValueError(f"tie_rate must be in [0, 1) and 0 when ties='none'; got {self.tie_rate} "
                             f"with ties={self.ties!r} (choose --ties-model rao-kupper or davidson)")
        if self.n_voters < 1 or not 0 <= self.random_voters + self.adversarial_voters <= 1:
            raise ValueError("need n_voters >= 1 and random_voters + adversarial_voters in [0, 1]")
        if not 0.0 <= self.bothbad_share <= 1.0:
            raise ValueError(f"bothbad_share must be in [0, 1]; got {self.bothbad_share}")
        if min(self.mean_tokens) <= 0 or self.length_sigma < 0:
            raise ValueError("mean_tokens must be positive and length_sigma non-negative")

    @property
    def n_models(self) -> int:
        return len(self.strengths)

    @property
    def tie_param(self) -> float:
        return tie_parameter_for_rate(self.ties, self.tie_rate)


def default_model_names(k: int) -> tuple[str, ...]:
    """``model-00``, ``model-01``, ... zero-padded so that sorted order equals index order."""
    width = max(2, len(str(k - 1)))
    return tuple(f"model-{i:0{width}d}" for i in range(k))


def spread_strengths(k: int, spread: float) -> tuple[float, ...]:
    """``k`` evenly spaced strengths from ``spread`` down to 0 (the last model is the anchor)."""
    return tuple(float(x) for x in np.linspace(spread, 0.0, k))


# ------------------------------------------------------------------------------------------ pure math


def outcome_probabilities(delta: np.ndarray, ties: str, tie_param: float) -> tuple[np.ndarray, np.ndarray]:
    """``(P(a wins), P(b wins))`` for logit differences ``delta = s_a - s_b (+ biases)``; ties take the rest.

    Bradley & Terry (1952): ``P(a) = sigmoid(delta)``. Rao & Kupper (1967) with ``pi = exp(s)``:
    ``P(a) = pi_a / (pi_a + theta pi_b) = sigmoid(delta - log theta)``. Davidson (1970):
    ``P(a) = pi_a / (pi_a + pi_b + nu sqrt(pi_a pi_b)) = e^{d/2} / (e^{d/2} + e^{-d/2} + nu)``.
    """
    delta = np.asarray(delta, dtype=np.float64)
    if ties == "rao-kupper":
        shift = np.log(tie_param)
        return _sigmoid(delta - shift), _sigmoid(-delta - shift)
    if ties == "davidson":
        half = np.clip(delta / 2.0, -350.0, 350.0)
        up, down = np.exp(half), np.exp(-half)
        denom = up + down + tie_param
        return up / denom, down / denom
    p = _sigmoid(delta)
    return p, 1.0 - p


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # overflow-free logistic


def draw_outcomes(p_a: np.ndarray, p_b: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Outcome codes (``Outcome.FIRST``, ``Outcome.SECOND``, ``Outcome.TIE``) from uniforms ``u`` by inverse CDF."""
    out = np.full(u.shape, Outcome.TIE, dtype=np.int8)
    out[u < p_a + p_b] = Outcome.SECOND
    out[u < p_a] = Outcome.FIRST
    return out


def length_feature(len_a: np.ndarray, len_b: np.ndarray) -> np.ndarray:
    """Normalised length difference ``(a - b) / (a + b)`` — the Chatbot Arena style-control feature."""
    len_a, len_b = np.asarray(len_a, np.float64), np.asarray(len_b, np.float64)
    return (len_a - len_b) / (len_a + len_b)


# ------------------------------------------------------------------------------------------ generator


@dataclass(frozen=True)
class SimulatedCodes:
    """Integer arrays of one simulated arena (one row per battle)."""

    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    tokens_a: np.ndarray
    tokens_b: np.ndarray
    voter: np.ndarray


MARKDOWN_TOKENS_PER: dict[str, float] = {"header_count": 400.0, "list_count": 150.0, "bold_count": 250.0}
"""Markdown elements emitted per answer: Poisson with mean ``tokens / value`` (they do not sway voters)."""


def uniform_pairs(n: int, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` ordered pairs uniformly over all ``k (k - 1)`` (a, b) with a != b (random left/right)."""
    a = rng.integers(0, k, n, dtype=np.int32)
    b = rng.integers(0, k - 1, n, dtype=np.int32)
    return a, b + (b >= a)


def pairs_from_probabilities(probs: np.ndarray, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` ordered pairs drawn from a (k, k) matrix of unordered-pair probabilities, random orientation."""
    k = probs.shape[0]
    flat = np.asarray(probs, np.float64).ravel()
    cells = rng.choice(k * k, size=n, p=flat / flat.sum())
    a, b = np.divmod(cells, k)
    swap = rng.random(n) < 0.5
    return np.where(swap, b, a).astype(np.int32), np.where(swap, a, b).astype(np.int32)


def simulate_codes(
    spec: ArenaSpec, n: int, rng: np.random.Generator, pairs: tuple[np.ndarray, np.ndarray] | None = None,
) -> SimulatedCodes:
    """Simulate ``n`` battles (uniform pairs unless ``pairs`` is given) as integer arrays; vectorised."""
    k = spec.n_models
    a, b = uniform_pairs(n, k, rng) if pairs is None else pairs
    n = len(a)
    s = np.asarray(spec.strengths, np.float64)
    mu = np.log(np.asarray(spec.mean_tokens, np.float64)) - 0.5 * spec.length_sigma**2  # mean stays mean_tokens
    tokens_a = np.maximum(1, np.rint(np.exp(mu[a] + spec.length_sigma * rng.standard_normal(n)))).astype(np.int32)
    tokens_b = np.maximum(1, np.rint(np.exp(mu[b] + spec.length_sigma * rng.standard_normal(n)))).astype(np.int32)
    voter = rng.integers(0, spec.n_voters, n, dtype=np.int32)
    kind = voter_kinds(spec)[voter]  # 0 honest, 1 random, 2 adversarial
    delta = s[a] - s[b] + spec.position_bias
    if spec.length_bias:
        delta = delta + spec.length_bias * length_feature(tokens_a, tokens_b)
    delta = np.where(kind == 1, 0.0, delta)
    p_a, p_b = outcome_probabilities(delta, spec.ties, spec.tie_param)
    outcome = draw_outcomes(p_a, p_b, rng.random(n))
    flip = (kind == 2) & (outcome != Outcome.TIE)
    outcome[flip] = 1 - outcome[flip]  # Outcome.FIRST <-> Outcome.SECOND
    return SimulatedCodes(a.astype(np.int32), b.astype(np.int32), outcome, tokens_a, tokens_b, voter)


def voter_kinds(spec: ArenaSpec) -> np.ndarray:
    """Voter type per voter id: the first ``random_voters`` share random (1), then adversarial (2), rest honest."""
    n_random = int(round(spec.random_voters * spec.n_voters))
    n_adv = int(round(spec.adversarial_voters * spec.n_voters))
    kinds = np.zeros(spec.n_voters, np.int8)
    kinds[:n_random] = 1
    kinds[n_random:n_random + n_adv] = 2
    return kinds


def simulate_adaptive(
    spec: ArenaSpec, n: int, rng: np.random.Generator, choose: Callable[[np.ndarray, int], np.ndarray],
    n_rounds: int = 20,
) -> SimulatedCodes:
    """Simulate ``n`` battles in ``n_rounds`` batches; before each batch ``choose(counts, batch_size)`` returns
    a (k, k) matrix of pair probabilities given the (k, k, 3) counts so far (a-wins, b-wins, ties by pair).

    Used for active sampling (:func:`arena.simulation.sampling.pair_probabilities`); the first batch is uniform.
    """
    k = spec.n_models
    counts = np.zeros((k, k, 3))
    parts: list[SimulatedCodes] = []
    sizes = np.diff(np.linspace(0, n, n_rounds + 1).astype(int))
    for r, m in enumerate(sizes):
        if m == 0:
            continue
        pairs = uniform_pairs(m, k, rng) if r == 0 else pairs_from_probabilities(choose(counts, m), m, rng)
        part = simulate_codes(spec, m, rng, pairs)
        np.add.at(counts, (part.a, part.b, np.minimum(part.outcome, Outcome.TIE)), 1.0)
        parts.append(part)
    return SimulatedCodes(*(np.concatenate([getattr(p, f) for p in parts]) for f in
                            ("a", "b", "outcome", "tokens_a", "tokens_b", "voter")))


# ---------------------------------------------------------------------------------------------- Battles


def label_bothbad(outcome: np.ndarray, share: float, seed: int) -> np.ndarray:
    """Outcome codes with a seeded ``share`` of the ties relabelled ``tie (bothbad)``."""
    out = np.asarray(outcome).astype(np.int8)
    if share <= 0:
        return out
    flip = np.random.default_rng([seed, 11]).random(out.size) < share
    return np.where((out == Outcome.TIE) & flip, Outcome.TIE_BOTHBAD, out).astype(np.int8)


def codes_to_battles(spec: ArenaSpec, codes: SimulatedCodes, *, conv_metadata: bool = False,
               start_time: float = 1.7e9) -> Battles:
    """Chatbot Arena-layout :class:`Battles`: models, winner, voter as ``judge``, tstamp, style totals.

    The style totals (:data:`arena.io.battles.STYLE_COLUMNS`) are the simulated token counts plus markdown
    counts drawn from :data:`MARKDOWN_TOKENS_PER`. With ``conv_metadata=True`` each row also carries the
    nested ``conv_metadata`` dict of the real arena dumps (slower; the flat columns are always there).
    """
    models = list(spec.models)
    n = len(codes.a)
    width = len(str(spec.n_voters - 1))
    df = pd.DataFrame({
        "model_a": pd.Categorical.from_codes(codes.a, categories=models),
        "model_b": pd.Categorical.from_codes(codes.b, categories=models),
        "winner": pd.Categorical.from_codes(label_bothbad(codes.outcome, spec.bothbad_share, n),
                                            categories=list(BATTLE_LABELS)),
        "judge": pd.Categorical.from_codes(codes.voter, [f"voter-{i:0{width}d}" for i in range(spec.n_voters)]),
        "tstamp": start_time + np.arange(n, dtype=np.float64),
        "anony": np.ones(n, dtype=bool),
        "sum_assistant_a_tokens": codes.tokens_a.astype(np.float64),
        "sum_assistant_b_tokens": codes.tokens_b.astype(np.float64),
    })
    rng = np.random.default_rng([n, int(codes.tokens_a[:1].sum())])  # deterministic given the codes
    for name, per in MARKDOWN_TOKENS_PER.items():
        df[f"{name}_a"] = rng.poisson(codes.tokens_a / per).astype(np.float64)
        df[f"{name}_b"] = rng.poisson(codes.tokens_b / per).astype(np.float64)
    df = df[[c for c in df.columns if c not in STYLE_COLUMNS] + list(STYLE_COLUMNS)]
    if conv_metadata:
        values = df[list(STYLE_COLUMNS)].to_numpy(np.int64).tolist()
        df["conv_metadata"] = [dict(zip(STYLE_COLUMNS, row, strict=True)) for row in values]
    if sorted(models) != models:
        return validate(df.astype({"model_a": str, "model_b": str}), "<simulated>", _LAYOUTS["arena"])
    # Names are already sorted and clean: skip the row-by-row validation (10M rows stay fast).
    df["line"] = np.arange(1, n + 1)
    return Battles(df, "<simulated>")


