"""Joining human labels and answer lengths onto judged pairs: the CLI's ``--human`` and ``--lengths`` files and
the app's collected votes go through the same joins, so the page and the CLI compute the same metrics.

Labels that match no judged pair, and judged pairs without a label, are counted in ``pairs.attrs["notes"]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from judge.metrics.adapters import identity_code, read_table, require_columns
from preflab.errors import InputError
from preflab.outcomes import Outcome


def _flip(code: float) -> float:
    """The same outcome seen from the other side of the pair (x wins ↔ y wins; a tie stays)."""
    return {Outcome.FIRST: float(Outcome.SECOND), Outcome.SECOND: float(Outcome.FIRST)}.get(code, code)


def _same(a: tuple, b: tuple) -> bool:
    return all((np.isnan(u) and np.isnan(v)) or u == v for u, v in zip(a, b, strict=True))


def _label_units(labels: pd.DataFrame, columns: list[str], by_pair: bool, source: str,
                 line_of: Callable[[int], int | None]) -> tuple[dict[tuple, tuple[tuple, int | None]], int]:
    """Each label row's codes keyed by (item[, sorted model pair]), oriented to the sorted pair, and the
    number of rows repeated with the same labels; conflicting repeats and non-pairs are input errors."""
    units: dict[tuple, tuple[tuple, int | None]] = {}
    repeated = 0
    for i, rec in enumerate(labels.to_dict("records")):
        line = line_of(i)
        codes = tuple(identity_code(rec.get(c), source, line, c, np.nan) for c in columns)
        item = str(rec["item_id"])
        key: tuple = (item,)
        if by_pair:
            a, b = str(rec["model_a"]).strip(), str(rec["model_b"]).strip()
            if not a or not b or a == b:
                raise InputError(source, line, "model_b", f"model pair {a!r} vs {b!r} is not two models",
                                 "name the two different models the label compares")
            key = (item, min(a, b), max(a, b))
            codes = codes if a < b else tuple(_flip(c) for c in codes)  # stored as seen from the sorted pair
        if key not in units:
            units[key] = (codes, line)
            continue
        seen, seen_line = units[key]
        if not _same(seen, codes):
            pair = f", pair {key[1]} vs {key[2]}" if by_pair else ""
            raise InputError(
                source, line, "human", f"conflicting labels for item {item!r}{pair}"
                + (f" (line {seen_line} says otherwise)" if seen_line else ""),
                "give one label per (item, model pair); several annotators go in one row as "
                "human_1 … human_k, their majority in human")
        repeated += 1
    return units, repeated


def _require_joinable(items: pd.Series, xs: pd.Series, ys: pd.Series, unit_items: set[str], by_pair: bool,
                      source: str, first_line: int | None) -> None:
    """Labels by model pair need the judged pairs' models; labels by item alone need one pair per item."""
    if by_pair and ((xs == "") | (ys == "")).any():
        raise InputError(source, first_line, "model_a", "labels name model pairs, but the judged pairs "
                         "have no model_x/model_y to orient them to",
                         "drop the model_a/model_b columns to join by item_id alone (A = the pair's x)")
    if by_pair:
        return
    per_item = items.value_counts()
    shared = sorted(set(per_item[per_item > 1].index) & unit_items)
    if shared:
        raise InputError(source, first_line, "model_a", f"labels have no model pair, but item "
                         f"{shared[0]!r} has {int(per_item[shared[0]])} judged pairs "
                         f"({len(shared)} such items): a label by item_id is ambiguous",
                         "add model_a and model_b columns (`preflab export-votes --as labels` writes them)")


def join_human(pairs: pd.DataFrame, labels: pd.DataFrame, source: str = "<labels>",
               first_line: int | None = 2) -> pd.DataFrame:
    """The one join of human labels onto judged pairs: the CLI's ``--human`` file and the app's votes.

    ``labels`` has one row per (item, model pair): ``item_id``, ``human`` (A/B/tie by identity, A =
    ``model_a``), optionally ``model_a``/``model_b`` and single annotators ``human_1`` … ``human_k`` (same
    coding; this is how several annotators of one pair are represented). With ``model_a``/``model_b`` a
    row joins the judged pair with the same item and the same unordered model pair, oriented to its
    ``model_x``/``model_y``; without them it joins by ``item_id`` alone (A = the pair's x), which is refused
    when an item has several judged pairs. Rows repeated with the same labels are counted in the notes;
    two rows for one (item, pair) with different labels are refused (:class:`InputError`), as are
    model pairs that the judged pairs cannot be oriented to. ``first_line`` is the file line of the first
    row (2 for a CSV with a header, 1 for JSONL; None when the labels do not come from a file).
    Labels matching no judged pair and judged pairs without a label are counted in ``attrs["notes"]``.
    """
    by_pair = {"model_a", "model_b"} <= set(labels.columns)
    singles = sorted((c for c in labels.columns if c.startswith("human_") and c[6:].isdigit()),
                     key=lambda c: int(c[6:]))
    columns = ["human", *singles]
    units, repeated = _label_units(labels, columns, by_pair, source,
                                   (lambda i: None) if first_line is None else (lambda i: i + first_line))
    out = pairs.copy()
    xs = out["model_x"].astype(str).str.strip() if "model_x" in out else pd.Series("", index=out.index)
    ys = out["model_y"].astype(str).str.strip() if "model_y" in out else pd.Series("", index=out.index)
    items = out["item_id"].astype(str)
    _require_joinable(items, xs, ys, {k[0] for k in units}, by_pair, source, first_line)
    rows, used = [], set()
    for item, x, y in zip(items, xs, ys, strict=True):
        key = (item, min(x, y), max(x, y)) if by_pair else (item,)
        codes = units.get(key, (None,))[0]
        if codes is None:
            rows.append((np.nan,) * len(columns))
            continue
        used.add(key)
        rows.append(codes if not by_pair or x <= y else tuple(_flip(c) for c in codes))
    table = np.array(rows, dtype=float).reshape(len(out), len(columns))
    for j, col in enumerate(columns):
        out[col] = table[:, j]
    notes = list(pairs.attrs.get("notes", []))
    if repeated:
        notes.append(f"{repeated} repeated human label rows ignored")
    if len(units) - len(used):
        notes.append(f"{len(units) - len(used)} human labels match no judged pair")
    if out["human"].isna().any():
        notes.append(f"{int(out['human'].isna().sum())} judged pairs have no human label")
    out.attrs.update(pairs.attrs, notes=notes)
    return out


def attach_human(pairs: pd.DataFrame, path: str | Path) -> pd.DataFrame:
    """Join a human-label file onto ``pairs`` with :func:`join_human` (CSV or JSONL, e.g. the
    ``judge_labels.csv`` of ``preflab export-votes --as labels``: ``item_id, human, model_a, model_b``)."""
    source = str(path)
    from judge.benchmarks.judgebench import read_judgebench
    from judge.verdicts.judgebench_pairs import is_judgebench_pairs

    if is_judgebench_pairs(path):  # JudgeBench's data/ pairs: the label is which answer is correct (A = x)
        rows = read_judgebench(path, judged=False)
        labels = pd.DataFrame({"item_id": rows["item_id"], "human": rows["label"].map({0.0: "A", 1.0: "B"})})
        out = join_human(pairs, labels, source, first_line=1)
        out.attrs["label_source"] = "correctness"
        return out
    raw = read_table(path, "human labels")
    require_columns(raw, ["item_id", "human"], source)
    jsonl = Path(path).suffix in (".jsonl", ".json") or Path(path).name.endswith(".jsonl.gz")
    return join_human(pairs, raw, source, first_line=1 if jsonl else 2)


def attach_lengths(pairs: pd.DataFrame, path: str | Path) -> pd.DataFrame:
    """Join answer lengths: a file with ``item_id`` and ``len_x``/``len_y``, or ``answer_x``/``answer_y``
    (the shared ``pairs.jsonl``; lengths in characters).

    With ``model_x``/``model_y`` in the file each answer's length joins by (item, model), so a pair listed
    in the other order, or one item with several pairs, gets the right lengths; without them the join is by
    ``item_id`` and refused when an item has several judged pairs (which pair's lengths is ambiguous).
    """
    source = str(path)
    raw = read_table(path)
    if {"answer_x", "answer_y"} <= set(raw.columns):
        raw = raw.assign(len_x=raw["answer_x"].astype(str).str.len(), len_y=raw["answer_y"].astype(str).str.len())
    require_columns(raw, ["item_id", "len_x", "len_y"], source)
    out = pairs.copy()
    items = out["item_id"].astype(str)
    if {"model_x", "model_y"} <= set(raw.columns) and {"model_x", "model_y"} <= set(out.columns):
        per_answer = {}
        for side in ("x", "y"):
            for item, model, n in zip(raw["item_id"].astype(str), raw[f"model_{side}"].astype(str),
                                      raw[f"len_{side}"], strict=True):
                per_answer.setdefault((item, model), n)
        return join_lengths(pairs, per_answer)
    else:
        per_item = items.value_counts()
        if (per_item > 1).any():
            raise InputError(source, None, "model_x", f"lengths have no model names, but item "
                                  f"{per_item.index[0]!r} has {int(per_item.iloc[0])} judged pairs",
                                  "give model_x and model_y with the lengths (pairs.jsonl has them)")
        lengths = raw.assign(item_id=raw["item_id"].astype(str)).drop_duplicates("item_id").set_index("item_id")
        for col in ("len_x", "len_y"):
            out[col] = pd.to_numeric(items.map(lengths[col]), errors="coerce")
    out.attrs.update(pairs.attrs)
    return out


def join_lengths(pairs: pd.DataFrame, per_answer: Mapping[tuple[str, str], float]) -> pd.DataFrame:
    """``len_x``/``len_y`` from each answer's length by (item, model): a pair listed in either order gets the
    right lengths; an answer not in ``per_answer`` is NaN (unknown, never 0)."""
    out = pairs.copy()
    items = out["item_id"].astype(str)
    for side in ("x", "y"):
        out[f"len_{side}"] = pd.to_numeric(pd.Series(
            [per_answer.get((i, m), np.nan) for i, m in zip(items, out[f"model_{side}"].astype(str), strict=True)],
            index=out.index), errors="coerce")
    out.attrs.update(pairs.attrs)
    return out


def join_votes(verdicts: pd.DataFrame, labels: pd.DataFrame, answers: Mapping[tuple[str, str], str]) -> pd.DataFrame:
    """Verdicts joined with collected votes and answer lengths: the app's Judge calibration page.

    ``labels`` are the votes as labels by (item, model pair) (``human``, ``human_1`` … ``human_k``: what
    ``preflab export-votes --as labels`` writes), joined by :func:`join_human` as the CLI's ``--human`` file is;
    ``answers`` (by item and model) give the lengths in characters (:func:`join_lengths`)."""
    pairs = join_human(verdicts, labels, source="the collected votes", first_line=None)
    pairs.attrs["settings"] = verdicts.attrs.get("settings", {})
    return join_lengths(pairs, {key: len(text) for key, text in answers.items()})
