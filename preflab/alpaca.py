"""AlpacaEval annotation files: loading and the judge's display-order rule.

AlpacaEval shows each pair once, in an order chosen per instruction by a seeded coin; ``output_1`` /
``output_2`` are stored after switching back (Dubois et al. 2023, alpaca_eval ``utils.random_seeded_choice``).
"""

from __future__ import annotations

import random
from functools import lru_cache
from pathlib import Path

import pandas as pd

from preflab.errors import InputError
from preflab.io import json_type, load_json_records, require_rows


@lru_cache(maxsize=4096)  # every model's file repeats the same 805 instructions: one coin each
def is_switched(instruction: str, seed: int = 0) -> bool:
    """True when the judge saw ``output_2`` (the model) first, i.e. the outputs were switched for display."""
    return random.Random("is_switched_outputs" + instruction + str(seed)).choices([False, True])[0]


def load_annotations(path: str | Path, fields: tuple[str, ...] | None = None) -> pd.DataFrame:
    """One AlpacaEval ``annotations.json[.gz]`` file as a DataFrame, ``preference`` as float, plus ``switched``.

    ``fields`` keeps only those keys of each record (a column is absent when no record has it): the judge's raw
    completions and other long fields are then never copied into the frame."""
    path = Path(path)
    records = load_json_records(path, "pass the annotations.json[.gz] written by alpaca_eval (an array of objects)")
    require_rows(len(records), str(path), "annotations")
    if fields is not None:
        records = [{k: r[k] for k in fields if k in r} for r in records]
    df = pd.DataFrame.from_records(records)
    for col in ("instruction", "preference"):
        if col not in df:
            raise InputError(str(path), None, col, "missing in every record",
                             "AlpacaEval annotations need instruction, output_1, output_2 and preference")
    for i, value in enumerate(df["instruction"], start=1):
        if not isinstance(value, str):
            raise InputError(str(path), i, "instruction", f"{json_type(value)}, not a string",
                             "every record needs its instruction text")
    df["preference"] = pd.to_numeric(df["preference"], errors="coerce")
    df["switched"] = [is_switched(i) for i in df["instruction"]]
    return df
