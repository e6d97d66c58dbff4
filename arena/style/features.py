"""Style features: per-side totals of answer length and markdown (headers, list items, bold spans), their z-scored
differences per battle, the rows a style fit reads, and the check that refuses features confounded with the models
(Chatbot Arena, 'Does style matter?', LMSYS blog, Aug 2024).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from arena.io.battles import STYLE_COLUMNS, Battles

STYLE_FEATURES: dict[str, tuple[str, str]] = {
    "length": ("sum_assistant_a_tokens", "sum_assistant_b_tokens"),
    "headers": ("header_count_a", "header_count_b"),
    "lists": ("list_count_a", "list_count_b"),
    "bold": ("bold_count_a", "bold_count_b"),
}
"""Feature name -> (side a total, side b total) columns of :data:`arena.io.battles.STYLE_COLUMNS`."""


class ConfoundedStyleWarning(UserWarning):
    """A style feature is (almost) a function of which models play: the style fit is not identified."""


class ConfoundedStyleError(ValueError):
    """Style features the caller chose are (almost) functions of which models play: no fit is made.

    ``confounded`` maps each such feature to its R^2 on the model design; ``kept`` are the others. The
    message names the fix as ``style_features=a,b`` (the CLI and the app put it in their own words)."""

    def __init__(self, confounded: dict[str, float], kept: tuple[str, ...]):
        self.confounded, self.kept = dict(confounded), tuple(kept)
        one = len(confounded) == 1
        fix = (f"leave {'it' if one else 'them'} out: style_features={','.join(kept)}" if kept
               else "no feature is left: rank without style control")
        super().__init__(f"style control cannot be fitted: {_named(confounded)} almost determined by which models "
                         f"play, so {'its coefficient' if one else 'their coefficients'} and the style-adjusted "
                         f"ratings are not identified (intervals thousands of points wide); {fix}, or collect "
                         f"battles where {'it varies' if one else 'they vary'} within models")


def _named(confounded: dict[str, float]) -> str:
    names = ", ".join(f"'{n}' (R^2 = {r2:.3f})" for n, r2 in confounded.items())
    return f"style feature {names} is" if len(confounded) == 1 else f"style features {names} are"


_HEADER = re.compile(r"^#{1,6}\s", re.MULTILINE)


_LIST = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s", re.MULTILINE)


_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")


def markdown_counts(text: str) -> tuple[float, float, float, float]:
    """(characters, headers, list items, bold spans) of one answer's text."""
    return float(len(text)), float(len(_HEADER.findall(text))), float(len(_LIST.findall(text))), float(
        len(_BOLD.findall(text)))


def _assistant_text(conv: object) -> str:
    """Assistant turns of a Chatbot Arena conversation (list of {role, content}), or a plain string."""
    if isinstance(conv, str):
        return conv
    if isinstance(conv, Sequence):
        return "\n".join(str(t.get("content", "")) for t in conv
                         if isinstance(t, dict) and t.get("role", "assistant") == "assistant")
    return ""


def totals_from_text(text_a: Sequence[object], text_b: Sequence[object]) -> pd.DataFrame:
    """Per-side style totals (:data:`STYLE_COLUMNS`) computed from answer or conversation text.

    Length is in characters here (no tokenizer at hand), tokens when ``conv_metadata`` supplies them.
    """
    a = np.array([markdown_counts(_assistant_text(t)) for t in text_a]).reshape(-1, 4)
    b = np.array([markdown_counts(_assistant_text(t)) for t in text_b]).reshape(-1, 4)
    return pd.DataFrame(np.hstack([a, b]), columns=list(STYLE_COLUMNS))


def style_totals(battles: Battles, text_columns: tuple[str, str] = ("conversation_a", "conversation_b")
                 ) -> tuple[pd.DataFrame, str]:
    """Style totals per battle from ``conv_metadata`` columns, else from text; returns (totals, source)."""
    df = battles.df
    if all(c in df for c in STYLE_COLUMNS):
        totals = df[list(STYLE_COLUMNS)].astype(float).reset_index(drop=True)
        missing = totals.isna().any(axis=1).to_numpy()
        if not missing.any():
            return totals, "conv_metadata"
        if all(c in df for c in text_columns):
            fill = totals_from_text(df[text_columns[0]][missing], df[text_columns[1]][missing])
            totals.loc[missing] = fill.to_numpy()
            return totals, f"conv_metadata ({int(missing.sum())} rows from text)"
        line = int(df["line"].to_numpy()[np.flatnonzero(missing)[0]])
        raise ValueError(f"{battles.source}, line {line}: style totals missing for {int(missing.sum())} battles "
                         f"and no {text_columns} text to compute them from; drop those rows or add conv_metadata")
    if all(c in df for c in text_columns):
        return totals_from_text(df[text_columns[0]], df[text_columns[1]]), "text"
    raise ValueError(f"{battles.source}: style control needs conv_metadata ({', '.join(STYLE_COLUMNS[:4])} and "
                     f"_b twins) or conversation text columns {text_columns}; neither is present")


def style_features(totals: pd.DataFrame, features: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(N, F) z-scored ``(a - b) / (a + b + 1)`` features, with their raw means and standard deviations."""
    unknown = [f for f in features if f not in STYLE_FEATURES]
    if unknown:
        raise ValueError(f"unknown style feature(s) {unknown}; choose from {list(STYLE_FEATURES)}")
    cols = []
    for f in features:
        a, b = (totals[c].to_numpy(float) for c in STYLE_FEATURES[f])
        cols.append((a - b) / (a + b + 1.0))
    raw = np.stack(cols, axis=1) if cols else np.zeros((len(totals), 0))
    mean, sd = raw.mean(axis=0), raw.std(axis=0)
    return (raw - mean) / np.where(sd > 0, sd, 1.0), mean, sd


class StyleRows(NamedTuple):
    """One row per battle: model codes, z-scored features (N, F), outcome code (0 a, 1 b, 2 tie)."""

    a: np.ndarray
    b: np.ndarray
    features: np.ndarray
    outcome: np.ndarray


def confounded_features(rows: StyleRows, n_models: int, names: Sequence[str], threshold: float = 0.98
                        ) -> dict[str, float]:
    """Features almost determined by which models play: R^2 of each feature on the model design.

    Least squares of ``f`` on ``x = e_a - e_b`` through the normal equations (``X^T X`` is the battle-count
    Laplacian), so it costs O(N + K^3). R^2 above ``threshold`` means style and model identity are
    confounded: the style-adjusted ratings and that coefficient are not identified (Belsley, Kuh & Welsch
    1980, 'Regression diagnostics', ch. 3).
    """
    a, b, f = np.asarray(rows.a, np.int64), np.asarray(rows.b, np.int64), np.asarray(rows.features)
    games = np.bincount(a * n_models + b, minlength=n_models * n_models).reshape(n_models, n_models)
    games = games + games.T
    lap = np.diag(games.sum(axis=1)) - games
    xtf = np.stack([np.bincount(a, f[:, c], n_models) - np.bincount(b, f[:, c], n_models)
                    for c in range(f.shape[1])], axis=1).reshape(n_models, f.shape[1])
    beta = np.linalg.pinv(lap) @ xtf
    resid = np.sum(f * f, axis=0) - 2 * np.sum(beta * xtf, axis=0) + np.sum(beta * (lap @ beta), axis=0)
    total = np.sum((f - f.mean(axis=0)) ** 2, axis=0)
    r2 = 1 - resid / np.where(total > 0, total, 1.0)
    return {n: float(r) for n, r in zip(names, r2, strict=True) if r > threshold}


def style_rows(battles: Battles, features: Sequence[str]) -> tuple[StyleRows, str, np.ndarray, np.ndarray]:
    """Rows for the contextual fit (outcome codes 3 'tie (bothbad)' fold into ties)."""
    totals, source = style_totals(battles)
    f, mean, sd = style_features(totals, features)
    df = battles.df
    rows = StyleRows(df["model_a"].cat.codes.to_numpy(np.int32), df["model_b"].cat.codes.to_numpy(np.int32),
                     f, np.minimum(battles.outcome, 2).astype(np.int32))
    return rows, source, mean, sd


def usable_features(battles: Battles, features: Sequence[str] | None,
                     k: int) -> tuple[tuple[str, ...], StyleRows, str, list[str]]:
    """(features, rows, source, notes): chosen features are refused when confounded with the models; of the
    default ones, the confounded are dropped, loudly."""
    chosen = features is not None
    features = tuple(features or STYLE_FEATURES)
    rows, source, _, _ = style_rows(battles, features)
    confounded = confounded_features(rows, k, features)
    if not confounded:
        return features, rows, source, []
    kept = tuple(f for f in features if f not in confounded)
    if chosen or not kept:
        raise ConfoundedStyleError(confounded, kept)
    msg = (f"{_named(confounded)} almost determined by which models play: style and model identity are "
           f"confounded, so {'that coefficient' if len(confounded) == 1 else 'those coefficients'} and the "
           f"style-adjusted ratings would not be identified. DROPPED from style control: the ratings control "
           f"for {', '.join(kept)} only (to choose: style_features={','.join(kept)})")
    warnings.warn(msg, ConfoundedStyleWarning, stacklevel=4)
    rows, source, _, _ = style_rows(battles, kept)
    return kept, rows, source, [msg]
