"""AlpacaEval annotation files: loading and the judge's display-order rule.

AlpacaEval shows each pair once, in an order chosen per instruction by a seeded coin; ``output_1`` /
``output_2`` are stored after switching back (Dubois et al. 2023, alpaca_eval ``utils.random_seeded_choice``).
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pandas as pd


def is_switched(instruction: str, seed: int = 0) -> bool:
    """True when the judge saw ``output_2`` (the model) first, i.e. the outputs were switched for display."""
    return random.Random("is_switched_outputs" + instruction + str(seed)).choices([False, True])[0]


def load_annotations(path: str | Path) -> pd.DataFrame:
    """One AlpacaEval ``annotations.json[.gz]`` file as a DataFrame, ``preference`` as float, plus ``switched``."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        records = json.load(fh)
    df = pd.DataFrame.from_records(records)
    df["preference"] = pd.to_numeric(df["preference"], errors="coerce")
    df["switched"] = [is_switched(i) for i in df["instruction"]]
    return df
