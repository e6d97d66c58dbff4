"""Adapters: judge verdicts and human labels from files into the judged-pairs table of :mod:`judge.pairs`.

Bad rows raise :class:`arena.data.InputError` naming file, line and field; rows that are set aside
(duplicates, unmatched labels) are counted in ``pairs.attrs["notes"]``, never dropped silently.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from judge.agreement import majority_vote
from judge.outcomes import IDENTITY_LABELS, TIE, UNPARSABLE, X, Y
from judge.pairs import by_identity
from preflab.alpaca import load_annotations
from preflab.errors import InputError
from preflab.io import iter_jsonl

SLOT_LABELS = {"a": "A", "b": "B", "tie": "tie", "c": "tie"}


def _identity_code(value, source: str, line: int, field: str, empty: float) -> float:
    """An identity label (A/B/tie, x/y, 1/2/0, left/right) as a code; blank → ``empty``; unknown → error."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or str(value).strip() == "":
        return empty
    code = IDENTITY_LABELS.get(str(value).strip().lower())
    if code is None:
        raise InputError(source, line, field, f"unknown winner {value!r}",
                              "use A or B (the answer by identity, A = model_x) or tie")
    return float(code)


def _require(df: pd.DataFrame, columns: list[str], source: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(source, 1, missing[0], f"column missing (have {list(df.columns)})",
                              f"the file needs columns {columns}")


def load_judge_labels(path: str | Path) -> pd.DataFrame:
    """The seed's ``judge_labels.csv``: ``item_id, verdict_ab, verdict_ba, human``.

    Verdicts name the winning answer by identity (A = x, B = y, tie) in the A-first and B-first orders;
    a blank verdict is unparsable, a blank human label means none.
    """
    source = str(path)
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    _require(raw, ["item_id", "verdict_ab", "verdict_ba"], source)
    rows = []
    for i, rec in enumerate(raw.to_dict("records")):
        line = i + 2
        rows.append({
            "item_id": rec["item_id"],
            "judge_xy": _identity_code(rec["verdict_ab"], source, line, "verdict_ab", UNPARSABLE),
            "judge_yx": _identity_code(rec["verdict_ba"], source, line, "verdict_ba", UNPARSABLE),
            "human": _identity_code(rec.get("human"), source, line, "human", np.nan),
        })
    pairs = pd.DataFrame(rows)
    pairs.attrs.update(source=source, notes=[])
    return pairs


def _float_or_nan(rec: dict, field: str, source: str, line: int) -> float:
    value = rec.get(field)
    if value is None:
        return np.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InputError(source, line, field, f"not a number: {value!r}", "use a probability or null") from None


def load_verdicts_jsonl(path: str | Path) -> pd.DataFrame:
    """The JSONL of ``preflab judge run``: one row per (pair, order), pivoted to one row per pair.

    ``order`` is ``"xy"`` (x shown first, slot A) or ``"yx"``; ``verdict`` names a slot (A, B, tie, or
    null when unparsable) and ``p_a``/``p_b``/``p_tie`` the slots' probabilities; both become identity
    (x/y) here. A repeated (pair, order) keeps its first row; the repeats are counted in the notes.
    """
    source = str(path)
    records: dict[tuple, dict] = {}
    duplicates = 0
    settings: dict[str, object] = {}  # judge model, rubric, temperature, samples, date (from `preflab judge run`)
    for line, rec in iter_jsonl(path, "one JSON object per line"):
        for key, field in (("judge model", "judge"), ("rubric", "rubric"), ("temperature", "temperature"),
                           ("samples", "samples"), ("date", "date")):
            if key not in settings and rec.get(field) not in (None, ""):
                settings[key] = rec[field]
        for field in ("item_id", "order"):
            if rec.get(field) in (None, ""):
                raise InputError(source, line, field, "missing", "rows come from `preflab judge run`")
        order = rec["order"]
        if order not in ("xy", "yx"):
            raise InputError(source, line, "order", f"{order!r} is not 'xy' or 'yx'",
                                  "'xy' means model_x was shown first")
        verdict = rec.get("verdict")
        slot = None if verdict in (None, "") else SLOT_LABELS.get(str(verdict).strip().lower())
        if verdict not in (None, "") and slot is None:
            raise InputError(source, line, "verdict", f"unknown verdict {verdict!r}", "use A, B, tie or null")
        first, second = (X, Y) if order == "xy" else (Y, X)
        code = {None: UNPARSABLE, "A": first, "B": second, "tie": TIE}[slot]
        p_a, p_b = _float_or_nan(rec, "p_a", source, line), _float_or_nan(rec, "p_b", source, line)
        key = (str(rec["item_id"]), str(rec.get("model_x", "")), str(rec.get("model_y", "")))
        row = records.setdefault(key, {"item_id": key[0], "model_x": key[1], "model_y": key[2]})
        if f"judge_{order}" in row:
            duplicates += 1
            continue
        row[f"judge_{order}"] = float(code)
        row[f"p_{order}"] = by_identity(order, p_a, p_b)[0]
        row[f"pt_{order}"] = _float_or_nan(rec, "p_tie", source, line)
    if not records:
        raise InputError(source, None, None, "no verdict rows", "run `preflab judge run` first")
    pairs = pd.DataFrame(list(records.values()))
    for col in ("judge_xy", "judge_yx", "p_xy", "p_yx", "pt_xy", "pt_yx"):
        if col not in pairs:
            pairs[col] = np.nan
    pairs.attrs.update(source=source, notes=[f"{duplicates} repeated (pair, order) rows ignored"] if duplicates else [],
                       settings=settings)
    return pairs


def _read_table(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    if path.suffix in (".jsonl", ".json") or path.name.endswith(".jsonl.gz"):
        return pd.read_json(path, lines=path.suffix != ".json" or path.name.endswith(".jsonl"), dtype=False)
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def attach_human(pairs: pd.DataFrame, path: str | Path) -> pd.DataFrame:
    """Join human labels (CSV/JSONL with ``item_id`` and ``human`` — A/B/tie by identity) onto ``pairs``.

    Labels for items the judge did not see, and pairs without a label, are counted in the notes.
    """
    source = str(path)
    raw = _read_table(path)
    _require(raw, ["item_id", "human"], source)
    labels = {str(r["item_id"]): _identity_code(r["human"], source, i + 2, "human", np.nan)
              for i, r in enumerate(raw.to_dict("records"))}
    out = pairs.copy()
    out["human"] = [labels.get(str(i), np.nan) for i in out["item_id"]]
    unmatched = len(set(labels) - set(out["item_id"].astype(str)))
    notes = list(pairs.attrs.get("notes", []))
    if unmatched:
        notes.append(f"{unmatched} human labels match no judged pair")
    if out["human"].isna().any():
        notes.append(f"{int(out['human'].isna().sum())} judged pairs have no human label")
    out.attrs.update(pairs.attrs, notes=notes)
    return out


def attach_lengths(pairs: pd.DataFrame, path: str | Path) -> pd.DataFrame:
    """Join answer lengths: a file with ``item_id`` and ``len_x``/``len_y``, or ``answer_x``/``answer_y``
    (the shared ``pairs.jsonl``; lengths in characters)."""
    source = str(path)
    raw = _read_table(path)
    if {"answer_x", "answer_y"} <= set(raw.columns):
        raw = raw.assign(len_x=raw["answer_x"].astype(str).str.len(), len_y=raw["answer_y"].astype(str).str.len())
    _require(raw, ["item_id", "len_x", "len_y"], source)
    lengths = raw.assign(item_id=raw["item_id"].astype(str)).drop_duplicates("item_id").set_index("item_id")
    out = pairs.copy()
    for col in ("len_x", "len_y"):
        out[col] = pd.to_numeric(out["item_id"].astype(str).map(lengths[col]), errors="coerce")
    out.attrs.update(pairs.attrs)
    return out


def load_pandalm(data_dir: str | Path, judge: str = "gpt-3.5-turbo") -> pd.DataFrame:
    """PandaLM's test set (999 pairs, three annotators) with the ``gpt-3.5-turbo`` or ``pandalm-7b`` verdicts.

    x = response1 (shown first to the judge), y = response2. Labels "1"/"2"/"0" (or "Tie") map to x/y/tie;
    any other judge output (e.g. "garbage") is unparsable. ``human`` is the annotators' majority, a
    three-way split going to annotator 1. Source: WeOpenML/PandaLM (Apache-2.0).
    """
    data_dir = Path(data_dir)
    field = {"gpt-3.5-turbo": "gpt_result", "pandalm-7b": "pandalm_result"}[judge]
    items = json.loads((data_dir / "testset-v1.json").read_text(encoding="utf-8"))
    verdicts = {r["idx"]: r[field] for r in json.loads((data_dir / f"{judge}-testset-v1.json").read_text())}
    ident = {"1": X, "2": Y, "0": TIE, "tie": TIE}
    rows = []
    for r in items:
        model_x, _, model_y = r["cmp_key"].partition("_")
        row = {"item_id": str(r["idx"]), "model_x": model_x, "model_y": model_y,
               "judge_xy": float(ident.get(str(verdicts.get(r["idx"])).strip().lower(), UNPARSABLE)),
               "len_x": len(str(r["response1"])), "len_y": len(str(r["response2"]))}
        for k in (1, 2, 3):
            row[f"human_{k}"] = float(ident[str(r[f"annotator{k}"])])
        rows.append(row)
    pairs = pd.DataFrame(rows)
    pairs["judge_yx"] = np.nan
    pairs["human"] = majority_vote(pairs[["human_1", "human_2", "human_3"]].to_numpy())
    pairs.attrs.update(source=f"PandaLM test set, judge {judge}", notes=[])
    return pairs


def load_llmfao(data_dir: str | Path, judge: str = "gpt4") -> pd.DataFrame:
    """LLMFAO's 2,139 crowd-judged pairs with the ``gpt4`` or ``gpt3`` verdict (one order: x on the left).

    Crowd votes become ``human_1..k`` (in file order; column k is a vote slot, not one worker, so
    ``attrs["annotators"] = "crowd"``) and their majority ``human``; lengths are the
    answers' characters from ``pairs-crowd.jsonl``. Source: LLMFAO, Dmitry Ustalov (CC BY 4.0).
    """
    data_dir = Path(data_dir)
    ident = {"left": X, "right": Y, "tie": TIE}
    judged = pd.read_csv(data_dir / f"{judge}-crowd-comparisons.csv")
    crowd = pd.read_csv(data_dir / "crowd-comparisons.csv")
    crowd["code"] = crowd["winner"].map(ident).astype(float)
    crowd["k"] = crowd.groupby("id").cumcount() + 1
    votes = crowd.pivot(index="id", columns="k", values="code").add_prefix("human_")
    texts = pd.read_json(data_dir / "pairs-crowd.jsonl", lines=True).set_index("id")
    pairs = pd.DataFrame({
        "item_id": judged["id"].astype(str), "model_x": judged["left"], "model_y": judged["right"],
        "judge_xy": judged["winner"].map(ident).fillna(UNPARSABLE).astype(float), "judge_yx": np.nan,
        "len_x": judged["id"].map(texts["result_x"].str.len()).to_numpy(dtype=float),
        "len_y": judged["id"].map(texts["result_y"].str.len()).to_numpy(dtype=float),
    })
    votes = votes.reindex(judged["id"].to_numpy())
    for col in votes.columns:
        pairs[col] = votes[col].to_numpy()
    pairs["human"] = majority_vote(votes.to_numpy())
    pairs.attrs.update(source=f"LLMFAO, judge {judge}", notes=[], annotators="crowd")
    return pairs


def load_alpaca(path: str | Path) -> pd.DataFrame:
    """One AlpacaEval annotations file: x = the baseline (``output_1``), y = the model (``output_2``, named
    after the file, as on the leaderboard).

    The judge saw each pair in one order, y first when :func:`preflab.alpaca.is_switched` says so; that order's
    column gets the verdict. P(x wins) = 2 − preference. Rows whose completion has no logprobs (AlpacaEval
    filled in 1.5) are unparsable and counted in the notes.
    """
    df = load_annotations(path)
    has_logprobs = np.array([isinstance(r, dict) and bool(r.get("logprobs")) for r in df["raw_completion"]])
    p_x = np.where(has_logprobs, 2.0 - df["preference"].to_numpy(dtype=float), np.nan)
    code = np.select([p_x > 0.5, p_x < 0.5, p_x == 0.5], [X, Y, TIE], default=UNPARSABLE).astype(float)
    switched = df["switched"].to_numpy(dtype=bool)
    model = Path(path).name.removesuffix(".gz").removesuffix(".json")  # the leaderboard name
    pairs = pd.DataFrame({
        "item_id": df.index.astype(str), "model_x": df["generator_1"], "model_y": model,
        "judge_xy": np.where(switched, np.nan, code), "judge_yx": np.where(switched, code, np.nan),
        "p_xy": np.where(switched, np.nan, p_x), "p_yx": np.where(switched, p_x, np.nan),
        "len_x": df["output_1"].astype(str).str.len(), "len_y": df["output_2"].astype(str).str.len(),
    })
    n_bad = int((~has_logprobs).sum())
    pairs.attrs.update(source=f"AlpacaEval annotations {Path(path).name}",
                       notes=[f"{model}: {n_bad} rows without logprobs counted as unparsable"] if n_bad else [])
    return pairs


LAYOUTS = ("auto", "verdicts", "labels", "pandalm", "llmfao", "alpaca")


def load_any(path: str | Path, layout: str = "auto", judge: str | None = None) -> pd.DataFrame:
    """Judge verdicts from ``path`` in any supported layout; ``auto`` guesses from the name and columns.

    ``verdicts``: ``preflab judge run`` JSONL; ``labels``: the seed's ``judge_labels.csv``; ``pandalm`` /
    ``llmfao``: the shared data folders (``judge`` picks gpt-3.5-turbo/pandalm-7b, gpt4/gpt3); ``alpaca``:
    one annotations file or a folder of them (one table, ``model_y`` per file).
    """
    path = Path(path)
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if layout == "auto":
        if path.is_dir():
            layout = ("pandalm" if (path / "testset-v1.json").exists() else
                      "llmfao" if (path / "crowd-comparisons.csv").exists() else
                      "alpaca" if any(path.glob("*.json.gz")) or (path / "annotations").is_dir() else "")
        elif path.name.endswith((".json.gz", ".json")):
            layout = "alpaca"
        elif path.suffix == ".csv":
            layout = "labels"
        else:
            layout = "verdicts"
        if not layout:
            raise InputError(str(path), None, None, "cannot tell the layout of this folder",
                                  "pass --layout pandalm, llmfao or alpaca")
    if layout == "pandalm":
        return load_pandalm(path, judge or "gpt-3.5-turbo")
    if layout == "llmfao":
        return load_llmfao(path, judge or "gpt4")
    if layout == "alpaca":
        if not path.is_dir():
            return load_alpaca(path)
        files = sorted((path / "annotations" if (path / "annotations").is_dir() else path).glob("*.json.gz"))
        parts = [load_alpaca(f) for f in files]
        pairs = pd.concat(parts, ignore_index=True)
        pairs["item_id"] = pairs["model_y"] + "/" + pairs["item_id"]
        pairs.attrs.update(source=f"AlpacaEval annotations, {len(files)} models",
                           notes=[n for p in parts for n in p.attrs["notes"]])
        return pairs
    if layout == "labels":
        return load_judge_labels(path)
    return load_verdicts_jsonl(path)


def load_family(path: str | Path) -> dict[str, str]:
    """A model → family map from a CSV with columns ``model, family`` (for the self-preference metric)."""
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    _require(raw, ["model", "family"], str(path))
    return dict(zip(raw["model"], raw["family"], strict=True))
