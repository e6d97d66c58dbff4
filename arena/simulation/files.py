"""Simulated arenas end to end: battles with their truth table, written side by side (battles by extension, the truth
as JSON), and specs built from command-line options.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from arena.io.battles import (
    Battles,
    write_battles,
)
from arena.simulation.simulate import ArenaSpec, codes_to_battles, simulate_adaptive, simulate_codes, spread_strengths
from preflab.io import is_stdout


def truth_table(spec: ArenaSpec, anchor: str | None = None) -> pd.DataFrame:
    """True strengths per model (shifted so ``anchor`` — default the last model — is 0), mean tokens, rank."""
    s = np.asarray(spec.strengths, np.float64)
    i = spec.models.index(anchor) if anchor else spec.n_models - 1
    s = s - s[i]
    rank = (-s).argsort(kind="stable").argsort() + 1
    return pd.DataFrame({"model": spec.models, "strength": s, "mean_tokens": spec.mean_tokens, "rank": rank})


def write_truth(spec: ArenaSpec, path: str | Path, *, seed: int | None = None, n_battles: int | None = None,
                sampling: str = "uniform") -> Path:
    """Write the truth (spec, strengths anchored at the last model, scale note) as JSON."""
    table = truth_table(spec)
    record = {
        "scale": "natural-log Bradley-Terry: P(a beats b) = sigmoid(s_a - s_b) without ties",
        "anchor": spec.models[-1],
        "models": list(spec.models),
        "strengths": [float(x) for x in table["strength"]],
        "tie_parameter": spec.tie_param,
        "n_battles": n_battles, "seed": seed, "sampling": sampling,
        "spec": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(spec).items()},
    }
    path = Path(path)
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path


def simulate(
    spec: ArenaSpec, n: int, *, seed: int = 0, sampling: Literal["uniform", "active"] = "uniform",
    conv_metadata: bool = False, n_rounds: int = 20,
) -> tuple[Battles, pd.DataFrame]:
    """Simulate ``n`` battles of ``spec``; returns (battles, truth table). ``sampling="active"`` picks pairs
    with :func:`arena.simulation.sampling.pair_probabilities` between ``n_rounds`` batches."""
    rng = np.random.default_rng(seed)
    if sampling == "active":
        from arena.simulation.sampling import pair_probabilities_from_counts

        codes = simulate_adaptive(spec, n, rng, pair_probabilities_from_counts, n_rounds)
    elif sampling == "uniform":
        codes = simulate_codes(spec, n, rng)
    else:
        raise ValueError(f"sampling must be 'uniform' or 'active'; got {sampling!r}")
    return codes_to_battles(spec, codes, conv_metadata=conv_metadata), truth_table(spec)


def simulate_to_files(spec: ArenaSpec, n: int, output: str | Path, truth: str | Path | None = None, *,
                      seed: int = 0, sampling: Literal["uniform", "active"] = "uniform",
                      conv_metadata: bool = True) -> tuple[Path, Path, Battles]:
    """:func:`simulate` then write the battles (format by extension; ``-``: JSONL on stdout) and the truth
    JSON beside them (for ``-`` only where ``truth`` names a file)."""
    battles, _ = simulate(spec, n, seed=seed, sampling=sampling, conv_metadata=conv_metadata)
    output = Path(output)
    truth = Path(truth) if truth else (None if is_stdout(output) else truth_path_for(output))
    write_battles(battles, output)
    if truth is not None:
        write_truth(spec, truth, seed=seed, n_battles=n, sampling=sampling)
    return output, truth, battles


def truth_path_for(output: str | Path) -> Path:
    """``battles.jsonl`` -> ``battles.truth.json`` (the default truth file beside the output)."""
    output = Path(output)
    stem = output.name.split(".")[0]
    return output.with_name(f"{stem}.truth.json")


def parse_voter_noise(text: str | None) -> tuple[float, float]:
    """``"random=0.1,adversarial=0.05"`` -> (0.1, 0.05); empty or None -> (0, 0)."""
    fractions = {"random": 0.0, "adversarial": 0.0}
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in fractions:
            raise ValueError(f"bad --voter-noise part {part!r}; write e.g. 'random=0.1,adversarial=0.05'")
        try:
            fractions[key.strip()] = float(value)
        except ValueError:
            raise ValueError(f"bad --voter-noise value {value!r} for {key.strip()}; give a fraction") from None
    return fractions["random"], fractions["adversarial"]


def lengths_for(k: int, spread: float, seed: int, base: float = 500.0,
                given: Sequence[float] | None = None) -> tuple[float, ...]:
    """Per-model mean answer lengths: ``given``, or log-uniform within ``base * exp(+-spread)`` (seeded)."""
    if given:
        return tuple(float(x) for x in given)
    rng = np.random.default_rng([seed, 7])
    return tuple(float(x) for x in base * np.exp(rng.uniform(-spread, spread, k)))


def spec_from_options(
    *, models: int | None = None, strengths: Sequence[float] | None = None, spread: float = 2.0,
    ties: str = "none", tie_rate: float = 0.0, position_bias: float = 0.0, length_bias: float = 0.0,
    length_spread: float = 0.7, mean_tokens: Sequence[float] | None = None, voters: int = 1,
    voter_noise: str | None = None, seed: int = 0, bothbad_share: float = 0.0,
) -> ArenaSpec:
    """Build an :class:`ArenaSpec` from command-line style options (explicit strengths win over a spread)."""
    if strengths:
        if models and models != len(strengths):
            raise ValueError(f"--models {models} disagrees with {len(strengths)} --strengths values")
        values = tuple(float(s) for s in strengths)
    else:
        values = spread_strengths(models or 5, spread)
    random_share, adversarial_share = parse_voter_noise(voter_noise)
    return ArenaSpec(values, ties=ties, tie_rate=tie_rate if ties != "none" else 0.0,  # type: ignore[arg-type]
                     position_bias=position_bias, length_bias=length_bias,
                     mean_tokens=lengths_for(len(values), length_spread, seed, given=mean_tokens),
                     n_voters=voters, random_voters=random_share, adversarial_voters=adversarial_share,
                     bothbad_share=bothbad_share)
