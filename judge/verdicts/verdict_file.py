"""The verdict file of ``preflab judge run`` (JSONL, one row per pair and order) read into the judged-pairs
table of :mod:`judge.verdicts.judged_pairs`, with its provenance checked (:mod:`judge.verdicts.provenance`).
Every verdict-file reader (``judge calibrate``, ``rank --judge-battles``, ``compare``, ``judge jury``, the app's
pages) calls :func:`load_verdicts_jsonl`; :mod:`judge.metrics.adapters` re-exports it beside the other adapters.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from judge.verdicts.pairs import by_identity
from judge.verdicts.parsing import NO_LOGPROBS
from judge.verdicts.provenance import ProvenanceTally, describe, require_one_judge
from preflab.errors import InputError
from preflab.io import iter_jsonl, json_type
from preflab.outcomes import Outcome

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


#: The run settings a verdict file records (the card's "judge model", "rubric", ...): the first value seen.
SETTING_FIELDS = (("judge model", "judge"), ("rubric", "rubric"), ("temperature", "temperature"),
                  ("samples", "samples"), ("price", "price"), ("date", "date"))


def _order_and_code(rec: dict, source: str, line: int) -> tuple[str, float]:
    """A record's order (``xy`` or ``yx``) and its verdict as an identity code (UNPARSABLE when null)."""
    for field in ("item_id", "order"):
        if rec.get(field) in (None, ""):
            raise InputError(source, line, field, "missing", "rows come from `preflab judge run`")
    order = rec["order"]
    if order not in ("xy", "yx"):
        raise InputError(source, line, "order", f"{order!r} is not 'xy' or 'yx'", "'xy' means model_x was shown first")
    verdict = rec.get("verdict")
    if verdict is not None and not isinstance(verdict, str):
        raise InputError(source, line, "verdict", f"{json_type(verdict)}, not a verdict label", "use A, B, tie or null")
    slot = None if verdict in (None, "") else SLOT_LABELS.get(str(verdict).strip().lower())
    if verdict not in (None, "") and slot is None:
        raise InputError(source, line, "verdict", f"unknown verdict {verdict!r}", "use A, B, tie or null")
    first, second = (Outcome.FIRST, Outcome.SECOND) if order == "xy" else (Outcome.SECOND, Outcome.FIRST)
    return order, float({None: Outcome.UNPARSABLE, "A": first, "B": second, "tie": Outcome.TIE}[slot])


def _pair_key(rec: dict, source: str, line: int) -> tuple[str, str, str]:
    """(item_id, model_x, model_y); a model judged against itself is an input error."""
    key = (_name(rec, "item_id", source, line), _name(rec, "model_x", source, line),
           _name(rec, "model_y", source, line))
    if key[1] and key[1] == key[2]:
        raise InputError(source, line, "model_y", f"model_y equals model_x ({key[1]!r}): a model judged "
                         "against itself", "each pair compares two different models; fix the pairs file")
    return key


class _FileTally:
    """What the reader counts while it reads: settings, verdict methods, repeats, low label mass."""

    def __init__(self) -> None:
        self.settings: dict[str, object] = {}  # judge model, rubric, temperature, samples, price, date
        self.methods: Counter = Counter()
        self.duplicates = self.low_mass = self.no_logprobs = 0

    def add(self, rec: dict) -> None:
        for key, field in SETTING_FIELDS:
            if key not in self.settings and rec.get(field) not in (None, ""):
                self.settings[key] = rec[field]
        if rec.get("method"):  # files written before the methods were named: "logprob" read the first token
            self.methods[{"logprob": "logprob-first-token"}.get(str(rec["method"]), str(rec["method"]))] += 1
            self.no_logprobs += int(rec["method"] == "text" and rec.get("samples", 1) == 1)

    def notes(self) -> list[str]:
        notes = [f"{self.duplicates} repeated (pair, order) rows ignored"] if self.duplicates else []
        return notes + self.probability_notes()

    def probability_notes(self) -> list[str]:
        """The notes about the verdicts' probabilities (Brier/ECE): only a reader that computes those shows them."""
        notes = []
        if self.no_logprobs:
            notes.append(f"{NO_LOGPROBS} ({self.no_logprobs} verdict rows read from the text: no probability, not "
                         "in Brier/ECE)")
        if self.low_mass:
            notes.append(f"{self.low_mass} low-label-mass verdict rows: their probabilities are left out of "
                         "Brier/ECE")
        return notes


def load_verdicts_jsonl(path: str | Path, allow_mixed: bool = False) -> pd.DataFrame:
    """The JSONL of ``preflab judge run``: one row per (pair, order), pivoted to one row per pair.

    ``order`` is ``"xy"`` (x shown first, slot A) or ``"yx"``; ``verdict`` names a slot (A, B, tie, or
    null when unparsable) and ``p_a``/``p_b``/``p_tie`` the slots' probabilities; both become identity
    (x/y) here. A repeated (pair, order) keeps its first row; the repeats are counted in the notes.

    Rows whose judge, served model version or rubric text differ are refused (:class:`InputError` naming
    the values) unless ``allow_mixed``; then the mix is listed in the notes. ``attrs["provenance"]``
    counts each provenance field's values. A scores file (:mod:`judge.verdicts.scores`: ``score_x``,
    ``score_y`` per pair; JSONL, CSV or Parquet) is read by :func:`judge.verdicts.scores.load_scores`.
    """
    from judge.verdicts.scores import is_scores_file, load_scores

    if is_scores_file(path):  # a reward model's (or any scoring judge's) rows: same table, read by its own rule
        return load_scores(path, allow_mixed=allow_mixed)
    source = str(path)
    records: dict[tuple, dict] = {}
    counts, tally = _FileTally(), ProvenanceTally()
    for line, rec in iter_jsonl(path, "one JSON object per line"):
        tally.add(rec, line)
        counts.add(rec)
        order, code = _order_and_code(rec, source, line)
        p_a, p_b = _float_or_nan(rec, "p_a", source, line), _float_or_nan(rec, "p_b", source, line)
        p_tie = _float_or_nan(rec, "p_tie", source, line)
        low = rec.get("low_mass") is True and not np.isnan(p_a)  # the judge mostly wanted to say something else
        counts.low_mass += int(low)
        key = _pair_key(rec, source, line)
        row = records.setdefault(key, {"item_id": key[0], "model_x": key[1], "model_y": key[2]})
        if f"judge_{order}" in row:
            counts.duplicates += 1
            continue
        row[f"judge_{order}"] = code
        row[f"p_{order}"] = by_identity(order, p_a, p_b)[0]
        row[f"pt_{order}"] = p_tie
        row[f"low_{order}"] = low  # kept for agreement, left out of Brier/ECE (judge.metrics.calibrate)
    if not records:
        raise InputError(source, None, None, "no verdict rows", "run `preflab judge run` first")
    mix_notes = require_one_judge(tally, source, allow_mixed)
    pairs = pd.DataFrame(list(records.values()))
    for col in ("judge_xy", "judge_yx", "p_xy", "p_yx", "pt_xy", "pt_yx"):
        if col not in pairs:
            pairs[col] = np.nan
    settings = counts.settings
    if counts.methods:
        settings["verdict methods"] = ", ".join(f"{m} {n}" for m, n in sorted(counts.methods.items()))
    if mix_notes:
        settings["judge model"] = describe(tally.values["judge"])
    pairs.attrs.update(source=source, notes=counts.notes() + mix_notes, probability_notes=counts.probability_notes(),
                       settings={**settings, **tally.settings()},
                       provenance=tally)
    return pairs
