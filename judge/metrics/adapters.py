"""Adapters: judge verdicts and human labels from files into the judged-pairs table of :mod:`judge.verdicts.pairs`
(the joins of human labels and answer lengths onto it are :mod:`judge.metrics.human_join`).

Bad rows raise :class:`arena.io.battles.InputError` naming file, line and field; rows that are set aside
(duplicates, unmatched labels) are counted in ``pairs.attrs["notes"]``, never dropped silently.
"""

from __future__ import annotations

import json
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


def identity_code(value, source: str, line: int, field: str, empty: float) -> float:
    """An identity label (A/B/tie, x/y, 1/2/0, left/right) as a code; blank → ``empty``; unknown → error."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or str(value).strip() == "":
        return empty
    code = IDENTITY_LABELS.get(str(value).strip().lower())
    if code is None:
        raise InputError(source, line, field, f"unknown winner {value!r}",
                              "use A or B (the answer by identity, A = model_x) or tie")
    return float(code)


def require_columns(df: pd.DataFrame, columns: list[str], source: str) -> None:
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
    require_columns(raw, ["item_id", "verdict_ab", "verdict_ba"], source)
    require_rows(len(raw), source, "labelled pairs")
    rows = []
    for i, rec in enumerate(raw.to_dict("records")):
        line = i + 2
        rows.append({
            "item_id": rec["item_id"],
            "judge_xy": identity_code(rec["verdict_ab"], source, line, "verdict_ab", Outcome.UNPARSABLE),
            "judge_yx": identity_code(rec["verdict_ba"], source, line, "verdict_ba", Outcome.UNPARSABLE),
            "human": identity_code(rec.get("human"), source, line, "human", np.nan),
            # The export's model pair (A = model_a = x), so other labels can join it by pair.
            **({"model_x": rec["model_a"], "model_y": rec["model_b"]} if "model_a" in rec and "model_b" in rec else {}),
        })
    pairs = pd.DataFrame(rows)
    pairs.attrs.update(source=source, notes=[])
    return pairs


def read_table(path: str | Path, what: str = "rows") -> pd.DataFrame:
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
    require_columns(raw, ["model", "family"], str(path))
    return dict(zip(raw["model"], raw["family"], strict=True))
