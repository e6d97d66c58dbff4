"""Adapters: judge verdicts and human labels from files into the judged-pairs table of :mod:`judge.verdicts.pairs`.

Bad rows raise :class:`arena.io.battles.InputError` naming file, line and field; rows that are set aside
(duplicates, unmatched labels) are counted in ``pairs.attrs["notes"]``, never dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from judge.metrics.agreement import majority_vote
from judge.verdicts.provenance import ProvenanceTally, require_one_judge
from judge.verdicts.verdict_file import load_verdicts_jsonl  # re-exported: the readers import it from here
from preflab.alpaca import load_annotations
from preflab.errors import InputError
from preflab.io import iter_jsonl, load_json_records, read_csv, require_rows
from preflab.outcomes import IDENTITY_LABELS, Outcome


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
    a blank verdict is unparsable, a blank human label means none. ``model_a``/``model_b`` (written by
    ``preflab export-votes --as labels``) become ``model_x``/``model_y``.
    """
    source = str(path)
    raw = read_csv(path, dtype=str, keep_default_na=False)
    _require(raw, ["item_id", "verdict_ab", "verdict_ba"], source)
    require_rows(len(raw), source, "labelled pairs")
    rows = []
    for i, rec in enumerate(raw.to_dict("records")):
        line = i + 2
        rows.append({
            "item_id": rec["item_id"],
            "judge_xy": _identity_code(rec["verdict_ab"], source, line, "verdict_ab", Outcome.UNPARSABLE),
            "judge_yx": _identity_code(rec["verdict_ba"], source, line, "verdict_ba", Outcome.UNPARSABLE),
            "human": _identity_code(rec.get("human"), source, line, "human", np.nan),
            # The export's model pair (A = model_a = x), so other labels can join it by pair.
            **({"model_x": rec["model_a"], "model_y": rec["model_b"]} if "model_a" in rec and "model_b" in rec else {}),
        })
    pairs = pd.DataFrame(rows)
    pairs.attrs.update(source=source, notes=[])
    return pairs


def _read_table(path: str | Path, what: str = "rows") -> pd.DataFrame:
    """A CSV, JSON (array of objects) or JSONL table; empty or unreadable files are input errors."""
    path = Path(path)
    name = path.name.lower().removesuffix(".gz")
    if name.endswith(".jsonl"):
        rows = [rec for _, rec in iter_jsonl(path, "one JSON object per line")]
        raw = pd.DataFrame.from_records(rows)
    elif name.endswith(".json"):
        raw = pd.DataFrame.from_records(load_json_records(path))
    else:
        raw = read_csv(path, dtype=str, keep_default_na=False)
    require_rows(len(raw), str(path), what)
    return raw


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
        codes = tuple(_identity_code(rec.get(c), source, line, c, np.nan) for c in columns)
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
    raw = _read_table(path, "human labels")
    _require(raw, ["item_id", "human"], source)
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
    raw = _read_table(path)
    if {"answer_x", "answer_y"} <= set(raw.columns):
        raw = raw.assign(len_x=raw["answer_x"].astype(str).str.len(), len_y=raw["answer_y"].astype(str).str.len())
    _require(raw, ["item_id", "len_x", "len_y"], source)
    out = pairs.copy()
    items = out["item_id"].astype(str)
    if {"model_x", "model_y"} <= set(raw.columns) and {"model_x", "model_y"} <= set(out.columns):
        per_answer = {}
        for side in ("x", "y"):
            for item, model, n in zip(raw["item_id"].astype(str), raw[f"model_{side}"].astype(str),
                                      raw[f"len_{side}"], strict=True):
                per_answer.setdefault((item, model), n)
        for side in ("x", "y"):
            out[f"len_{side}"] = pd.to_numeric(pd.Series(
                [per_answer.get((i, m), np.nan) for i, m in zip(items, out[f"model_{side}"].astype(str), strict=True)],
                index=out.index), errors="coerce")
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
    ident = {"1": Outcome.FIRST, "2": Outcome.SECOND, "0": Outcome.TIE, "tie": Outcome.TIE}
    rows = []
    for r in items:
        model_x, _, model_y = r["cmp_key"].partition("_")
        row = {"item_id": str(r["idx"]), "model_x": model_x, "model_y": model_y,
               "judge_xy": float(ident.get(str(verdicts.get(r["idx"])).strip().lower(), Outcome.UNPARSABLE)),
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
    ident = {"left": Outcome.FIRST, "right": Outcome.SECOND, "tie": Outcome.TIE}
    judged = pd.read_csv(data_dir / f"{judge}-crowd-comparisons.csv")
    crowd = pd.read_csv(data_dir / "crowd-comparisons.csv")
    crowd["code"] = crowd["winner"].map(ident).astype(float)
    crowd["k"] = crowd.groupby("id").cumcount() + 1
    votes = crowd.pivot(index="id", columns="k", values="code").add_prefix("human_")
    texts = pd.read_json(data_dir / "pairs-crowd.jsonl", lines=True).set_index("id")
    pairs = pd.DataFrame({
        "item_id": judged["id"].astype(str), "model_x": judged["left"], "model_y": judged["right"],
        "judge_xy": judged["winner"].map(ident).fillna(Outcome.UNPARSABLE).astype(float), "judge_yx": np.nan,
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
    code = np.select([p_x > 0.5, p_x < 0.5, p_x == 0.5], [Outcome.FIRST, Outcome.SECOND, Outcome.TIE],
                     default=Outcome.UNPARSABLE).astype(float)
    switched = df["switched"].to_numpy(dtype=bool)
    model = Path(path).name.removesuffix(".gz").removesuffix(".json")  # the leaderboard name
    pairs = pd.DataFrame({
        "item_id": df.index.astype(str), "model_x": df["generator_1"], "model_y": model,
        "judge_xy": np.where(switched, np.nan, code), "judge_yx": np.where(switched, code, np.nan),
        "p_xy": np.where(switched, np.nan, p_x), "p_yx": np.where(switched, p_x, np.nan),
        "len_x": df["output_1"].astype(str).str.len(), "len_y": df["output_2"].astype(str).str.len(),
    })
    n_bad = int((~has_logprobs).sum())
    tally = ProvenanceTally()  # as published: the annotator's name; the completion's model when it has one
    for rec in df.to_dict("records"):
        raw = rec.get("raw_completion") if isinstance(rec.get("raw_completion"), dict) else {}
        tally.add({"judge": rec.get("annotator"), "model_version": raw.get("model"),
                   "system_fingerprint": raw.get("system_fingerprint"), "method": "logprob"}, None)
    pairs.attrs.update(provenance=tally, settings={"judge model": tally.single("judge"), **tally.settings()})
    pairs.attrs.update(source=f"AlpacaEval annotations {Path(path).name}",
                       notes=[f"{model}: {n_bad} rows without logprobs counted as unparsable"] if n_bad else [])
    return pairs


LAYOUTS = ("auto", "verdicts", "scores", "labels", "pandalm", "llmfao", "alpaca", "judgebench", "rewardbench",
           "rewardbench2")


def _guess_layout(path: Path) -> str:
    """``auto``: a folder by the files it holds, a file by its name."""
    if not path.is_dir():
        from judge.benchmarks.report import sniff_benchmark
        from judge.verdicts.scores import is_scores_file

        if is_scores_file(path):
            return "scores"
        published = sniff_benchmark(path)
        if published:
            return published
        return ("alpaca" if path.name.endswith((".json.gz", ".json")) else
                "labels" if path.suffix == ".csv" else "verdicts")
    if (path / "testset-v1.json").exists():
        return "pandalm"
    if (path / "crowd-comparisons.csv").exists():
        return "llmfao"
    if any(path.glob("*.json.gz")) or (path / "annotations").is_dir():
        return "alpaca"
    raise InputError(str(path), None, None, "cannot tell the layout of this folder",
                     "pass --layout pandalm, llmfao or alpaca")


def _load_alpaca_folder(path: Path, allow_mixed: bool) -> pd.DataFrame:
    """A folder of AlpacaEval annotation files as one table (``model_y`` per file, item ids prefixed by it)."""
    files = sorted((path / "annotations" if (path / "annotations").is_dir() else path).glob("*.json.gz"))
    parts = [load_alpaca(f) for f in files]
    pairs = pd.concat(parts, ignore_index=True)
    pairs["item_id"] = pairs["model_y"] + "/" + pairs["item_id"]
    tally = ProvenanceTally.merged([p.attrs["provenance"] for p in parts])
    mix = require_one_judge(tally, str(path), allow_mixed)
    pairs.attrs.update(source=f"AlpacaEval annotations, {len(files)} models",
                       notes=[n for p in parts for n in p.attrs["notes"]] + mix, provenance=tally,
                       settings={"judge model": tally.single("judge"), **tally.settings()})
    return pairs


def load_any(path: str | Path, layout: str = "auto", judge: str | None = None,
             allow_mixed: bool = False, score_reading=None) -> pd.DataFrame:
    """Judge verdicts from ``path`` in any supported layout; ``auto`` guesses from the name and columns.

    ``verdicts``: ``preflab judge run`` JSONL (or a scores file); ``scores``: score rows
    (:mod:`judge.verdicts.scores`, JSONL/CSV/Parquet); ``labels``: the seed's ``judge_labels.csv``; ``pandalm`` /
    ``llmfao``: the shared data folders (``judge`` picks gpt-3.5-turbo/pandalm-7b, gpt4/gpt3); ``alpaca``:
    one annotations file or a folder of them (one table, ``model_y`` per file). ``allow_mixed``: see
    :func:`load_verdicts_jsonl`. ``score_reading`` (:class:`judge.verdicts.scores.ScoreReading`): how a scores
    file's scores become verdicts (default T = 1, ties only on equal scores). ``judgebench``, ``rewardbench``,
    ``rewardbench2``: published benchmark results labelled by correctness (:mod:`judge.benchmarks.pairs`).
    """
    path = Path(path)
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    layout = _guess_layout(path) if layout == "auto" else layout
    if layout == "pandalm":
        return load_pandalm(path, judge or "gpt-3.5-turbo")
    if layout == "llmfao":
        return load_llmfao(path, judge or "gpt4")
    if layout == "alpaca":
        return _load_alpaca_folder(path, allow_mixed) if path.is_dir() else load_alpaca(path)
    if layout == "labels":
        return load_judge_labels(path)
    if layout in ("judgebench", "rewardbench", "rewardbench2"):
        from judge.benchmarks.pairs import benchmark_pairs
        from judge.verdicts.scores import ScoreReading

        return benchmark_pairs(path, layout, score_reading or ScoreReading())
    if layout == "scores" or (layout == "verdicts" and score_reading is not None):
        from judge.verdicts.scores import ScoreReading, is_scores_file, load_scores

        if layout == "scores" or is_scores_file(path):
            return load_scores(path, score_reading or ScoreReading(), allow_mixed=allow_mixed)
    return load_verdicts_jsonl(path, allow_mixed)


def load_family(path: str | Path) -> dict[str, str]:
    """A model → family map from a CSV with columns ``model, family`` (for the self-preference metric)."""
    raw = read_csv(path, dtype=str, keep_default_na=False)
    _require(raw, ["model", "family"], str(path))
    return dict(zip(raw["model"], raw["family"], strict=True))
