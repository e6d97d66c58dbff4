"""The verdict file of ``preflab judge run`` (JSONL, one row per pair and order) read into the judged-pairs
table of :mod:`judge.outcomes`, with its provenance checked (:mod:`judge.provenance`). Every verdict-file
reader (``judge calibrate``, ``rank --judge-battles``, ``compare``, ``judge jury``, the app's pages) calls
:func:`load_verdicts_jsonl`; :mod:`judge.datasets` re-exports it beside the other adapters.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from judge.outcomes import TIE, UNPARSABLE, X, Y
from judge.pairs import by_identity
from judge.provenance import ProvenanceTally, describe, require_one_judge
from judge.verdicts import NO_LOGPROBS
from preflab.errors import InputError
from preflab.io import iter_jsonl, json_type

SLOT_LABELS = {"a": "A", "b": "B", "tie": "tie", "c": "tie"}


def _float_or_nan(rec: dict, field: str, source: str, line: int) -> float:
    """A probability field: null -> NaN; otherwise a finite number in [0, 1]."""
    value = rec.get(field)
    if value is None:
        return np.nan
    try:
        p = float(value) if not isinstance(value, (bool, str)) else float("x")
    except (TypeError, ValueError):
        raise InputError(source, line, field, f"not a number: {value!r:.60}", "use a probability or null") from None
    if not 0.0 <= p <= 1.0:  # also NaN and ±Infinity
        raise InputError(source, line, field, f"probability {value!r} is outside [0, 1]",
                         "use a probability in [0, 1], or null when unknown")
    return p


def _name(rec: dict, field: str, source: str, line: int) -> str:
    """An id or model name: a string (or an integer id); objects, arrays and floats are input errors."""
    value = rec.get(field, "")
    if value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return "" if value is None else str(value)
    raise InputError(source, line, field, f"{json_type(value)}, not a string", "write names and ids as strings")


def load_verdicts_jsonl(path: str | Path, allow_mixed: bool = False) -> pd.DataFrame:
    """The JSONL of ``preflab judge run``: one row per (pair, order), pivoted to one row per pair.

    ``order`` is ``"xy"`` (x shown first, slot A) or ``"yx"``; ``verdict`` names a slot (A, B, tie, or
    null when unparsable) and ``p_a``/``p_b``/``p_tie`` the slots' probabilities; both become identity
    (x/y) here. A repeated (pair, order) keeps its first row; the repeats are counted in the notes.

    Rows whose judge, served model version or rubric text differ are refused (:class:`InputError` naming
    the values) unless ``allow_mixed``; then the mix is listed in the notes. ``attrs["provenance"]``
    counts each provenance field's values.
    """
    source = str(path)
    records: dict[tuple, dict] = {}
    duplicates = low_mass = 0
    methods: Counter = Counter()
    no_logprobs = 0
    settings: dict[str, object] = {}  # judge model, rubric, temperature, samples, price, date (`preflab judge run`)
    tally = ProvenanceTally()
    for line, rec in iter_jsonl(path, "one JSON object per line"):
        tally.add(rec, line)
        for key, field in (("judge model", "judge"), ("rubric", "rubric"), ("temperature", "temperature"),
                           ("samples", "samples"), ("price", "price"), ("date", "date")):
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
        if verdict is not None and not isinstance(verdict, str):
            raise InputError(source, line, "verdict", f"{json_type(verdict)}, not a verdict label",
                             "use A, B, tie or null")
        slot = None if verdict in (None, "") else SLOT_LABELS.get(str(verdict).strip().lower())
        if verdict not in (None, "") and slot is None:
            raise InputError(source, line, "verdict", f"unknown verdict {verdict!r}", "use A, B, tie or null")
        first, second = (X, Y) if order == "xy" else (Y, X)
        code = {None: UNPARSABLE, "A": first, "B": second, "tie": TIE}[slot]
        p_a, p_b = _float_or_nan(rec, "p_a", source, line), _float_or_nan(rec, "p_b", source, line)
        p_tie = _float_or_nan(rec, "p_tie", source, line)
        if rec.get("method"):  # files written before the methods were named: "logprob" read the first token
            methods[{"logprob": "logprob-first-token"}.get(str(rec["method"]), str(rec["method"]))] += 1
            no_logprobs += int(rec["method"] == "text" and rec.get("samples", 1) == 1)
        low = rec.get("low_mass") is True and not np.isnan(p_a)  # the judge mostly wanted to say something else
        low_mass += int(low)
        key = (_name(rec, "item_id", source, line), _name(rec, "model_x", source, line),
               _name(rec, "model_y", source, line))
        if key[1] and key[1] == key[2]:
            raise InputError(source, line, "model_y", f"model_y equals model_x ({key[1]!r}): a model judged "
                             "against itself", "each pair compares two different models; fix the pairs file")
        row = records.setdefault(key, {"item_id": key[0], "model_x": key[1], "model_y": key[2]})
        if f"judge_{order}" in row:
            duplicates += 1
            continue
        row[f"judge_{order}"] = float(code)
        row[f"p_{order}"] = by_identity(order, p_a, p_b)[0]
        row[f"pt_{order}"] = p_tie
        row[f"low_{order}"] = low  # kept for agreement, left out of Brier/ECE (judge.calibrate)
    if not records:
        raise InputError(source, None, None, "no verdict rows", "run `preflab judge run` first")
    mix_notes = require_one_judge(tally, source, allow_mixed)
    pairs = pd.DataFrame(list(records.values()))
    for col in ("judge_xy", "judge_yx", "p_xy", "p_yx", "pt_xy", "pt_yx"):
        if col not in pairs:
            pairs[col] = np.nan
    notes = [f"{duplicates} repeated (pair, order) rows ignored"] if duplicates else []
    if no_logprobs:
        notes.append(f"{NO_LOGPROBS} ({no_logprobs} verdict rows read from the text: no probability, not in "
                     "Brier/ECE)")
    if low_mass:
        notes.append(f"{low_mass} low-label-mass verdict rows: their probabilities are left out of Brier/ECE")
    if methods:
        settings["verdict methods"] = ", ".join(f"{m} {n}" for m, n in sorted(methods.items()))
    if mix_notes:
        settings["judge model"] = describe(tally.values["judge"])
    pairs.attrs.update(source=source, notes=notes + mix_notes, settings={**settings, **tally.settings()},
                       provenance=tally)
    return pairs
