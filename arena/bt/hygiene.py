"""Vote hygiene: filters applied before ranking, each reporting how many battles it removed.

Category, language, excluded models, anonymous-only (Chatbot Arena ranks anonymous battles only, so that
a voter who saw the names cannot sway the board), a per-voter daily cap (one heavy voter should not
dominate), de-duplication of repeated identical votes, and a cap on battles per repeated prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from arena.io.battles import Battles

DEDUP_KEYS: tuple[str, ...] = ("judge", "question_id", "tstamp", "model_a", "model_b", "winner")


@dataclass(frozen=True)
class Filters:
    """Which filters to apply (all off by default); ``daily_cap`` is votes per voter per UTC day."""

    categories: tuple[str, ...] | None = None
    languages: tuple[str, ...] | None = None
    exclude_models: tuple[str, ...] = ()
    anonymous_only: bool = False
    daily_cap: int | None = None
    dedup: bool = False


def _subset(battles: Battles, mask: np.ndarray) -> Battles:
    """``battles.with_df`` on the kept rows. Works around ``arena.io.battles._to_bool`` failing on ``pd.NA``
    when it re-types an already nullable-boolean ``anony`` column: hand it plain objects instead."""
    df = battles.df.loc[mask].copy()
    if "anony" in df and str(df["anony"].dtype) == "boolean":
        df["anony"] = df["anony"].astype(object).where(df["anony"].notna(), None)
    return battles.with_df(df)


def _need(df: pd.DataFrame, column: str, what: str, source: str) -> None:
    if column not in df:
        raise ValueError(f"{source}: the {what} filter needs a '{column}' column, which this data lacks; "
                         "drop the filter or load data that has it")


def _report(name: str, before: int, after: int, detail: str = "") -> str:
    return f"{name}: removed {before - after} of {before} battles" + (f" ({detail})" if detail else "")


def filter_values(battles: Battles, column: str, keep: Sequence[str], name: str) -> tuple[Battles, str]:
    """Keep battles whose ``column`` is one of ``keep`` (case-insensitive)."""
    df = battles.df
    _need(df, column, name, battles.source)
    wanted = {v.lower() for v in keep}
    mask = df[column].astype("string").str.lower().isin(wanted).fillna(False).to_numpy(bool)
    return _subset(battles, mask), _report(name, len(df), int(mask.sum()), "kept " + ", ".join(keep))


def exclude_models(battles: Battles, models: Sequence[str]) -> tuple[Battles, str]:
    """Drop battles involving any of ``models``; an unknown name is an error (with the closest name in the
    data), never ignored: a typo would leave the model ranked."""
    from preflab.errors import did_you_mean

    df = battles.df
    unknown = sorted(set(models) - set(battles.models))
    if unknown:
        raise ValueError(f"{battles.source}: no model named {unknown[0]!r} to exclude in the data"
                         f"{did_you_mean(unknown[0], battles.models)}"
                         + (f" (nor {', '.join(map(repr, unknown[1:]))})" if len(unknown) > 1 else "")
                         + "; name the models as the data does")
    mask = ~(df["model_a"].isin(models) | df["model_b"].isin(models)).to_numpy(bool)
    return _subset(battles, mask), _report("exclude models", len(df), int(mask.sum()), ", ".join(models))


def anonymous_only(battles: Battles) -> tuple[Battles, str]:
    """Keep battles where the voter did not see model names (``anony`` true); missing counts as not anonymous."""
    df = battles.df
    _need(df, "anony", "anonymous-only", battles.source)
    mask = df["anony"].astype("boolean").fillna(False).to_numpy(bool)
    return _subset(battles, mask), _report("anonymous only", len(df), int(mask.sum()))


def daily_cap(battles: Battles, cap: int) -> tuple[Battles, str]:
    """Keep each voter's first ``cap`` votes per UTC day (by ``tstamp``); votes lacking voter or time are kept."""
    if cap < 1:
        raise ValueError(f"daily cap must be at least 1, not {cap}")
    df = battles.df
    for col in ("judge", "tstamp"):
        _need(df, col, "daily-cap", battles.source)
    known = (df["judge"].notna() & df["tstamp"].notna()).to_numpy(bool)
    day = np.floor(pd.to_numeric(df["tstamp"], errors="coerce").to_numpy(float) / 86_400.0)
    order = pd.DataFrame({"judge": df["judge"].astype("string"), "day": day, "t": df["tstamp"]})
    rank = order.sort_values("t", kind="stable").groupby(["judge", "day"], dropna=False).cumcount()
    mask = ~known | (rank.reindex(order.index).to_numpy() < cap)
    detail = f"cap {cap} per voter per day" + (f"; {int((~known).sum())} without voter or time kept"
                                               if (~known).any() else "")
    return _subset(battles, mask), _report("daily cap", len(df), int(mask.sum()), detail)


def deduplicate(battles: Battles) -> tuple[Battles, str]:
    """Drop repeated identical votes: same voter, question, time, models and winner (first one kept)."""
    df = battles.df
    keys = [c for c in DEDUP_KEYS if c in df]
    if not {"judge", "question_id", "tstamp"} & set(keys):
        raise ValueError(f"{battles.source}: de-duplication needs at least one of judge, question_id, tstamp "
                         "(otherwise every repeated pairing would look like a duplicate)")
    mask = ~df[keys].astype("string").duplicated(keep="first").to_numpy(bool)
    return _subset(battles, mask), _report("dedup", len(df), int(mask.sum()), "on " + ", ".join(keys))


def repeat_cap(counts: Sequence[int] | np.ndarray, quantile: float = 0.9999) -> int:
    """The most battles one prompt may bring: the ``quantile`` of the per-prompt counts, rounded up (lmarena
    caps repeated prompts at the 99.99th percentile of these counts; Chiang et al. 2024, "Chatbot Arena",
    and lmarena's de-duplication notes)."""
    arr = np.asarray(counts, dtype=float)
    return max(1, int(np.ceil(np.quantile(arr, quantile)))) if arr.size else 1


def cap_repeated_prompts(battles: Battles, cap: int | None = None, column: str = "prompt") -> tuple[Battles, str]:
    """Keep each prompt's first ``cap`` battles (by ``tstamp`` when present, else in order); ``cap`` None:
    :func:`repeat_cap` of the data's own per-prompt counts. A prompt pasted many times (a bot, a class
    exercise) then weighs no more than the cap."""
    df = battles.df
    _need(df, column, "repeated-prompt", battles.source)
    key = df[column].astype("string")
    cap = repeat_cap(key.value_counts().to_numpy()) if cap is None else cap
    if cap < 1:
        raise ValueError(f"the repeated-prompt cap must be at least 1, not {cap}")
    order = df["tstamp"] if "tstamp" in df else pd.Series(np.arange(len(df)), index=df.index)
    rank = pd.DataFrame({"k": key, "t": order}).sort_values("t", kind="stable").groupby("k", dropna=False).cumcount()
    mask = (rank.reindex(df.index).to_numpy() < cap)
    return _subset(battles, mask), _report("repeated prompts", len(df), int(mask.sum()), f"cap {cap} per prompt")


def apply_filters(battles: Battles, filters: Filters) -> tuple[Battles, list[str]]:
    """Apply the chosen filters in a fixed order; returns the kept battles and one report line per filter."""
    steps = []
    if filters.dedup:
        steps.append(deduplicate)
    if filters.anonymous_only:
        steps.append(anonymous_only)
    if filters.categories:
        steps.append(lambda b: filter_values(b, "category", filters.categories, "category"))
    if filters.languages:
        steps.append(lambda b: filter_values(b, "language", filters.languages, "language"))
    if filters.exclude_models:
        steps.append(lambda b: exclude_models(b, filters.exclude_models))
    if filters.daily_cap is not None:
        steps.append(lambda b: daily_cap(b, filters.daily_cap))
    report = []
    for step in steps:
        battles, line = step(battles)
        report.append(line)
    return battles, report


def parse_filters(specs: Sequence[str]) -> Filters:
    """CLI ``--filter`` values: ``category=a,b``, ``language=x``, ``exclude=m1,m2``, ``anony``,
    ``daily-cap=N``, ``dedup``."""
    f = Filters()
    for spec in specs:
        key, _, value = spec.partition("=")
        key = key.strip().lower().replace("_", "-")
        values = tuple(v.strip() for v in value.split(",") if v.strip())
        if key in ("category", "categories") and values:
            f = replace(f, categories=values)
        elif key in ("language", "languages") and values:
            f = replace(f, languages=values)
        elif key in ("exclude", "exclude-models") and values:
            f = replace(f, exclude_models=f.exclude_models + values)
        elif key in ("anony", "anonymous", "anonymous-only") and not value:
            f = replace(f, anonymous_only=True)
        elif key == "daily-cap" and value.strip().isdigit():
            f = replace(f, daily_cap=int(value))
        elif key == "dedup" and not value:
            f = replace(f, dedup=True)
        else:
            raise ValueError(f"bad --filter {spec!r}; use category=A,B | language=X | exclude=M1,M2 | anony | "
                             "daily-cap=N | dedup")
    return f
