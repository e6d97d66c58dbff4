"""Inputs of the length-controlled win rate: AlpacaEval annotation files and a generic table, validated.

Both become one *LC table*: ``instruction, model, baseline, preference`` (probability in [0, 1] that the
model's output is preferred), ``output_length``, ``baseline_length`` (characters), plus ``source`` and
``record`` for error messages. Bad input raises :class:`LCDataError` naming the file, record and field.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from preflab.alpaca import load_annotations
from preflab.errors import InputError, shown
from preflab.io import iter_jsonl, load_json_records, read_csv, read_parquet, require_rows


class LCDataError(InputError):
    """A bad LC input record: file, record number (1-based), field, what is wrong and what to do."""

    def __init__(self, source: str, record: int | None, field: str | None, problem: str, hint: str = ""):
        super().__init__(source, record, field, problem, hint)
        where = source if record is None else f"{source}, record {record}"
        what = f"field '{field}': " if field else ""
        self.args = (f"{where}: {what}{problem}" + (f". {hint[:1].upper()}{hint[1:]}" if hint else ""),)

    def __str__(self) -> str:
        return str(self.args[0])


def model_name_for(path: Path, df: pd.DataFrame) -> str:
    """The model an annotation file scores: its file stem (``alpaca-7b.json.gz`` -> ``alpaca-7b``); for files
    literally named ``annotations.json``, the model folder of AlpacaEval's results layout
    (``results/<model>/<annotator>/annotations.json``, the leaderboard's name: NullModel's records say
    ``generator_2: example``), else ``generator_2``."""
    stem = path.name.split(".json")[0]
    if (stem == "annotations" and "annotator" in df and df["annotator"].nunique() == 1
            and str(df["annotator"].iloc[0]) == path.parent.name and path.parent.parent.name):
        return path.parent.parent.name
    if stem == "annotations" and "generator_2" in df and df["generator_2"].nunique() == 1:
        return str(df["generator_2"].iloc[0])
    return stem


def load_alpaca_table(paths: Iterable[str | Path], baseline: str | None = None,
                      baseline_may_be_model: bool = False) -> pd.DataFrame:
    """AlpacaEval ``annotations.json[.gz]`` files (one per model) as one validated LC table.

    ``preference`` in [1, 2] (2 = model preferred; legacy 0 = draw) becomes ``preference - 1``.
    ``baseline`` keeps only files judged against that ``generator_1``; otherwise all files must share one.
    With ``baseline_may_be_model``, a ``baseline`` that no file is judged against but that names one of the
    models keeps every file (the caller reports LC against that model as a reference).
    """
    frames, own = [], []
    for path in map(Path, paths):
        df = _read_annotation_file(path)
        base = df["generator_1"] if "generator_1" in df else pd.Series("baseline", index=df.index)
        model = model_name_for(path, df)
        itself = (base.astype(str) == model).to_numpy().nonzero()[0]
        if len(itself) == len(df):  # the baseline's own file (AlpacaEval publishes it): 50% by definition
            own.append({"model": model, "source": str(path), "n": len(df),
                        "avg_length": float(_text_lengths(df["output_2"], str(path), "output_2").mean())})
            continue
        if len(itself):
            raise LCDataError(str(path), int(itself[0]) + 1, "generator_1", f"the model '{model}' is judged "
                              "against itself (generator_1 is the model's own name)",
                              f"{len(itself)} such record(s); pass the annotations of a model vs the baseline")
        frames.append(_annotation_rows(df, model, base.astype(str), str(path)))
    if not frames:
        raise _nothing_to_fit(own)
    table = pd.concat(frames, ignore_index=True)
    if baseline is not None:
        table = _judged_against(table, baseline, baseline_may_be_model)
    table = validate_lc_table(table)
    baselines = set(table["baseline"])
    strays = [o for o in own if o["model"] not in baselines]
    if strays:
        raise LCDataError(strays[0]["source"], 1, "generator_1", f"the model '{strays[0]['model']}' is judged "
                          f"against itself, and it is not the baseline of the other files ({sorted(baselines)})",
                          "pass the annotations of a model vs the baseline")
    table.attrs["baseline_files"] = [o for o in own if o["model"] in baselines]
    return table


ANNOTATION_FIELDS = ("instruction", "output_1", "output_2", "preference", "generator_1", "generator_2", "annotator")


def _read_annotation_file(path: Path) -> pd.DataFrame:
    """One annotations file, its read errors as :class:`LCDataError`, with the fields LC needs."""
    try:
        df = load_annotations(path, ANNOTATION_FIELDS)
    except InputError as e:
        raise LCDataError(e.source, e.line, e.field, e.problem, e.hint) from None
    except (OSError, ValueError) as e:
        raise LCDataError(str(path), None, None, f"cannot read AlpacaEval annotations ({e})",
                          "pass the annotations.json[.gz] written by alpaca_eval") from None
    for col in ("instruction", "output_1", "output_2", "preference"):
        if col not in df:
            raise LCDataError(str(path), None, col, "missing in every record",
                              "AlpacaEval annotations need instruction, output_1, output_2 and preference")
    return df


def _annotation_rows(df: pd.DataFrame, model: str, base: pd.Series, source: str) -> pd.DataFrame:
    """A model's annotations as LC table rows (preference on [0, 1], lengths in characters)."""
    pref = df["preference"].astype(float).replace({0.0: 1.5})
    _check_range(pref, 1.0, 2.0, source, "preference",
                 "AlpacaEval preferences are 1 (baseline wins) to 2 (model wins)")
    return pd.DataFrame({
        "instruction": df["instruction"],
        "model": model,
        "baseline": base,
        "preference": pref - 1.0,
        "output_length": _text_lengths(df["output_2"], source, "output_2"),
        "baseline_length": _text_lengths(df["output_1"], source, "output_1"),
        "source": source,
        "record": np.arange(1, len(df) + 1),
    })


def _nothing_to_fit(own: list[dict]) -> LCDataError:
    if own:
        return LCDataError(own[0]["source"], None, "generator_1", f"only the baseline '{own[0]['model']}' "
                           "judged against itself", "pass the annotations of the models vs that baseline too")
    return LCDataError("<arguments>", None, None, "no annotation files given", "pass one file per model")


def _judged_against(table: pd.DataFrame, baseline: str, baseline_may_be_model: bool) -> pd.DataFrame:
    """The rows judged against ``baseline`` (all rows when it names a model and that is allowed)."""
    kept = table[table["baseline"] == baseline]
    if kept.empty and baseline_may_be_model and baseline in set(table["model"]):
        kept = table
    if kept.empty:
        raise LCDataError(", ".join(table["source"].unique()), None, "generator_1",
                          f"no record is judged against baseline '{baseline}'",
                          f"baselines present: {sorted(table['baseline'].unique())}")
    return kept.reset_index(drop=True)


def with_baseline_rows(res: pd.DataFrame, baseline_files: list[dict]) -> pd.DataFrame:
    """:func:`arena.lc.board.lc_leaderboard`'s table plus the baseline judged against itself, at 50% by definition
    (AlpacaEval's leaderboard lists it so): not fitted, no interval beyond the point, ``by_definition`` True."""
    if not baseline_files:
        return res
    rows = pd.DataFrame([{"model": o["model"], "raw_win_rate": 50.0, "raw_se": 0.0, "lc_win_rate": 50.0,
                          "lc_se": 0.0, "lc_lower": 50.0, "lc_upper": 50.0, "avg_length": o["avg_length"],
                          "n": o["n"], "length_coef": np.nan, "difficulty_coef": np.nan, "extreme_change": False}
                         for o in baseline_files])
    out = pd.concat([res.assign(by_definition=False), rows.assign(by_definition=True)], ignore_index=True)
    out = out.sort_values("lc_win_rate", ascending=False, kind="stable", ignore_index=True)
    out.attrs.update(res.attrs)
    return out


def load_lc_table(path: str | Path, scale: str = "auto") -> pd.DataFrame:
    """A generic CSV/JSON/JSONL/Parquet table ``instruction, model, baseline, output, baseline_output,
    preference`` (or ``output_length``/``baseline_length`` instead of the texts) as a validated LC table.

    ``scale``: ``"01"`` (probability the model wins), ``"12"`` (AlpacaEval's 1-2) or ``"auto"``
    (1-2 when any value exceeds 1).
    """
    path = Path(path)
    source = str(path)
    name = path.name.lower()
    try:
        if name.endswith((".csv", ".csv.gz")):
            raw = read_csv(path, error=LCDataError)
        elif name.endswith((".jsonl", ".jsonl.gz")):
            raw = pd.DataFrame.from_records([r for _, r in iter_jsonl(path, error=LCDataError)])
        elif name.endswith((".json", ".json.gz")):
            raw = pd.DataFrame.from_records(load_json_records(path, error=LCDataError))
        elif name.endswith(".parquet"):
            raw = read_parquet(path, error=LCDataError)
        else:
            raise LCDataError(source, None, None, "unknown table format", "use .csv, .json, .jsonl or .parquet")
    except (OSError, ValueError) as e:
        if isinstance(e, LCDataError):
            raise
        raise LCDataError(source, None, None, f"cannot read table ({e})", "check the file format") from None
    return table_from_frame(raw, source, scale)


def table_from_frame(raw: pd.DataFrame, source: str = "<table>", scale: str = "auto") -> pd.DataFrame:
    """A generic DataFrame (see :func:`load_lc_table`) as a validated LC table."""
    require_rows(len(raw), source, "records", error=LCDataError)
    for col in ("instruction", "model", "preference"):
        if col not in raw:
            raise LCDataError(source, None, col, "column missing",
                              "the table needs instruction, model, preference and output texts or lengths")
    for col in ("instruction", "model", "baseline"):
        if col in raw:
            _check_scalar(raw[col], source, col)
    out = pd.DataFrame({"instruction": raw["instruction"], "model": raw["model"].astype(str)})
    out["baseline"] = raw["baseline"].astype(str) if "baseline" in raw else "baseline"
    itself = (out["model"] == out["baseline"]).to_numpy().nonzero()[0]
    if len(itself):
        raise LCDataError(source, int(itself[0]) + 1, "baseline", f"model '{out['model'].iloc[itself[0]]}' is "
                          "judged against itself", f"{len(itself)} such record(s); drop the baseline's own rows")
    out["output_length"] = _length_column(raw, source, "output", "output_length")
    out["baseline_length"] = _length_column(raw, source, "baseline_output", "baseline_length")
    out["preference"] = _table_preferences(raw["preference"], source, scale)
    out["source"] = source
    out["record"] = np.arange(1, len(raw) + 1)
    return validate_lc_table(out)


def _length_column(raw: pd.DataFrame, source: str, text_col: str, len_col: str) -> np.ndarray:
    """Lengths given in ``len_col``, else the character lengths of the texts in ``text_col``."""
    if len_col in raw:
        return _given_lengths(raw[len_col], source, len_col)
    if text_col in raw:
        return _text_lengths(raw[text_col], source, text_col)
    raise LCDataError(source, None, text_col, f"neither '{text_col}' nor '{len_col}' is present",
                      "LC needs the length of both outputs")


def _table_preferences(values: pd.Series, source: str, scale: str) -> pd.Series:
    """Preferences on [0, 1] from ``scale`` ``"01"``, ``"12"`` or ``"auto"`` (the scale most values fit)."""
    pref = pd.to_numeric(values, errors="coerce")
    bad = pref.isna().to_numpy().nonzero()[0]
    if len(bad):
        raise LCDataError(source, int(bad[0]) + 1, "preference", f"not a number ({shown(values.iloc[bad[0]])})",
                          f"{len(bad)} such record(s); give a probability in [0, 1] or an AlpacaEval 1-2 value")
    if scale == "auto":  # the first record off the chosen scale is then reported
        scale = "12" if pref.between(1, 2).sum() > pref.between(0, 1).sum() else "01"
    lo, hi = (1.0, 2.0) if scale == "12" else (0.0, 1.0)
    _check_range(pref, lo, hi, source, "preference",
                 "all preferences must be on one scale: [0, 1] (P(model wins)) or [1, 2] (AlpacaEval)")
    return pref - lo


def validate_lc_table(table: pd.DataFrame) -> pd.DataFrame:
    """Check an LC table across records and files; returns it with a clean index or raises :class:`LCDataError`.

    Checks: one baseline; each instruction's baseline output has one length everywhere (same baseline
    outputs in every file); no (model, instruction) twice; every file shares instructions with the others;
    every model has at least two rows.
    """
    table = table.reset_index(drop=True)
    if table["instruction"].isna().any():
        i = int(table["instruction"].isna().to_numpy().nonzero()[0][0])
        raise LCDataError(table["source"][i], int(table["record"][i]), "instruction", "missing",
                          "every record needs its instruction to be paired across models")
    baselines = table.groupby("baseline", sort=True)["source"].first()
    if len(baselines) > 1:
        a, b = baselines.index[:2]
        raise LCDataError(baselines[b], None, "baseline",
                          f"judged against baseline '{b}' but {baselines[a]} is judged against '{a}'",
                          "LC win rates need one common baseline; pass --baseline NAME to keep one")
    first = table.groupby("instruction", sort=False)["baseline_length"].transform("first")
    diff = (table["baseline_length"] != first).to_numpy().nonzero()[0]
    if len(diff):
        i = int(diff[0])
        j = int(table.index[(table["instruction"] == table["instruction"][i])][0])
        raise LCDataError(table["source"][i], int(table["record"][i]), "baseline output",
                          f"baseline output for instruction {_short(table['instruction'][i])} has "
                          f"{table['baseline_length'][i]} characters, but {table['baseline_length'][j]} in "
                          f"{table['source'][j]}, record {table['record'][j]}",
                          "the files were judged against different baseline outputs; use matching files")
    dup = table.duplicated(["model", "instruction"], keep="first").to_numpy().nonzero()[0]
    if len(dup):
        i = int(dup[0])
        raise LCDataError(table["source"][i], int(table["record"][i]), "instruction",
                          f"model '{table['model'][i]}' already has a record for instruction "
                          f"{_short(table['instruction'][i])}", "keep one record per model and instruction")
    lonely = _sources_sharing_nothing(table)
    if lonely:
        raise LCDataError(lonely[0], None, "instruction", "shares no instruction with the other files",
                          "all files must be judged on the same instruction set")
    sizes = table.groupby("model", sort=True).size()
    if (sizes < 2).any():
        m = sizes.index[sizes < 2][0]
        i = int(table.index[table["model"] == m][0])
        raise LCDataError(table["source"][i], int(table["record"][i]), "model",
                          f"model '{m}' has a single row", "the length term needs at least two rows per model")
    return table


def _sources_sharing_nothing(table: pd.DataFrame) -> list[str]:
    """The sources (in order of appearance) none of whose instructions appears in another source: one pass
    over integer codes (a set per source against the rest was quadratic in files)."""
    src, sources = pd.factorize(table["source"])
    if len(sources) < 2:
        return []
    ins, _ = pd.factorize(table["instruction"])
    pairs = pd.DataFrame({"s": src, "i": ins}).drop_duplicates()
    n_sources = pairs.groupby("i")["s"].transform("size")
    shared = (n_sources > 1).groupby(pairs["s"]).any()
    return [str(sources[s]) for s in range(len(sources)) if not shared.get(s, False)]


def _check_scalar(values: pd.Series, source: str, field: str) -> None:
    """Text fields hold strings (or numbers), never JSON objects or arrays."""
    bad = values.map(lambda v: isinstance(v, (dict, list))).to_numpy(bool).nonzero()[0]
    if len(bad):
        raise LCDataError(source, int(bad[0]) + 1, field, f"a JSON {type(values.iloc[bad[0]]).__name__}, not text",
                          f"{len(bad)} such record(s); write {field} as a string")


def _check_range(values: pd.Series, lo: float, hi: float, source: str, field: str, hint: str) -> None:
    bad = (values.isna() | (values < lo) | (values > hi)).to_numpy().nonzero()[0]
    if len(bad):
        i = int(bad[0])
        what = ("missing or not a number" if pd.isna(values.iloc[i])
                else f"value {float(values.iloc[i]):g} is outside [{lo:g}, {hi:g}]")
        raise LCDataError(source, i + 1, field, what,
                          f"{len(bad)} such record(s); {hint}")


def _text_lengths(texts: pd.Series, source: str, field: str) -> np.ndarray:
    if pd.api.types.is_string_dtype(texts.dtype) and not isinstance(texts.dtype, np.dtype) and not texts.isna().any():
        return texts.str.len().to_numpy()  # a string column without gaps: every value is text
    missing = texts.map(lambda v: not isinstance(v, str)).to_numpy().nonzero()[0]
    if len(missing):
        i = int(missing[0])
        raise LCDataError(source, i + 1, field, f"missing output text ({shown(texts.iloc[i])}): its length is unknown",
                          f"{len(missing)} such record(s); every record needs both outputs")
    return texts.str.len().to_numpy()


def _given_lengths(lengths: pd.Series, source: str, field: str) -> np.ndarray:
    values = pd.to_numeric(lengths, errors="coerce")
    bad = (~np.isfinite(values.to_numpy(float, na_value=np.nan)) | (values < 0).to_numpy()).nonzero()[0]
    if len(bad):
        i = int(bad[0])
        what = "infinite length" if np.isinf(values.iloc[i]) else "missing or negative length"
        raise LCDataError(source, i + 1, field, f"{what} ({shown(lengths.iloc[i])})",
                          f"{len(bad)} such record(s); give lengths in characters")
    return values.to_numpy(float)


def _short(text: object, n: int = 50) -> str:
    s = str(text).replace("\n", " ")
    return repr(s if len(s) <= n else s[: n - 1] + "…")


def table_to_grid(table: pd.DataFrame) -> tuple[list[str], list[str], dict[str, np.ndarray]]:
    """Models, instructions and (models, instructions) arrays ``y``, ``model_len``, ``baseline_len``, ``mask``."""
    models = sorted(table["model"].unique())
    instructions: Sequence[str] = list(pd.unique(table["instruction"]))
    mi = pd.Categorical(table["model"], categories=models).codes
    ii = pd.Categorical(table["instruction"], categories=instructions).codes
    shape = (len(models), len(instructions))
    arrays = {k: np.zeros(shape) for k in ("y", "model_len", "baseline_len", "mask")}
    arrays["y"][mi, ii] = table["preference"].to_numpy(float)
    arrays["model_len"][mi, ii] = table["output_length"].to_numpy(float)
    arrays["baseline_len"][mi, ii] = table["baseline_length"].to_numpy(float)
    arrays["mask"][mi, ii] = 1.0
    return models, list(instructions), arrays


def load_difficulty(path: str | Path) -> pd.Series:
    """A supplied instruction-difficulty table (CSV with ``instruction`` and ``difficulty`` columns)."""
    df = read_csv(path, error=LCDataError)
    for col in ("instruction", "difficulty"):
        if col not in df:
            raise LCDataError(str(path), None, col, "column missing", "give columns instruction, difficulty")
    values = pd.to_numeric(df["difficulty"], errors="coerce")
    if (~np.isfinite(values.to_numpy(float, na_value=np.nan))).any():
        i = int((~np.isfinite(values.to_numpy(float, na_value=np.nan))).nonzero()[0][0])
        raise LCDataError(str(path), i + 1, "difficulty", "not a number", "give a real number per instruction")
    return pd.Series(values.to_numpy(), index=df["instruction"], name="difficulty")


def format_lc_table(res: pd.DataFrame) -> str:
    """A plain-text view of :func:`arena.lc.board.lc_leaderboard`'s result (percent, one decimal)."""
    level = res.attrs.get("level", 0.95)
    view = pd.DataFrame({
        "model": res["model"],
        "raw": res["raw_win_rate"].map("{:.1f}".format),
        "raw_se": res["raw_se"].map("{:.2f}".format),
        "LC": res["lc_win_rate"].map("{:.1f}".format),
        "LC_se": res["lc_se"].map("{:.2f}".format),
        f"LC {level:.0%} CI": [f"[{lo:.1f}, {hi:.1f}]" for lo, hi in zip(res["lc_lower"], res["lc_upper"],
                                                                                 strict=True)],
        "avg_len": res["avg_length"].round().astype(int),
        "length_coef": res["length_coef"].map("{:.2f}".format),
        "n": res["n"],
    })
    if "lc_vs_reference" in res:
        view["LC_vs_ref"] = res["lc_vs_reference"].map("{:.1f}".format)
    flags = np.where(res["extreme_change"], "  <- LC far from raw", "")
    if "by_definition" in res:
        flags = np.where(res["by_definition"], "  <- the baseline: 50% by definition", flags)
    lines = view.to_string(index=False).splitlines()
    return "\n".join([lines[0]] + [line + flag for line, flag in zip(lines[1:], flags, strict=True)])
