"""Judge input pairs, and the two orders combined by answer identity.

A pair is (prompt, answer X, answer Y). The judge sees it twice: order ``xy`` (X shown first, as A) and
``yx``. Verdicts are stored by identity (``p_x``, ``p_y``) as well as by slot (``p_a``, ``p_b``), and the
two orders combine by the conservative rule (disagreement -> tie; Zheng et al. 2023, MT-bench) or by
averaging the two orders' probabilities.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from preflab.io import iter_jsonl

REQUIRED = ("item_id", "prompt", "model_x", "answer_x", "model_y", "answer_y")


@dataclass(frozen=True)
class Pair:
    """One pair to judge; ``reference`` is an optional reference answer shown to the judge."""

    item_id: str
    prompt: str
    model_x: str
    answer_x: str
    model_y: str
    answer_y: str
    reference: str | None = None

    def slots(self, order: str) -> tuple[str, str, str, str]:
        """(model_a, answer_a, model_b, answer_b) for order ``xy`` or ``yx``."""
        if order == "xy":
            return self.model_x, self.answer_x, self.model_y, self.answer_y
        if order == "yx":
            return self.model_y, self.answer_y, self.model_x, self.answer_x
        raise ValueError(f"order must be 'xy' or 'yx', not {order!r}")


class PairsError(ValueError):
    """A bad pairs file: names the file, line and field, says what is wrong and what to do."""

    def __init__(self, source: str, line: int, field: str | None, problem: str, hint: str) -> None:
        super().__init__(f"{source}, line {line}, field {field or '-'!r}: {problem}. {hint}")


def load_pairs(path: str | Path) -> list[Pair]:
    """Read a pairs JSONL file (``item_id, prompt, model_x, answer_x, model_y, answer_y[, reference]``)."""
    path = Path(path)
    pairs: list[Pair] = []
    seen: dict[tuple, int] = {}
    for n, row in iter_jsonl(path, "Write one JSON object per line.", error=PairsError):
        if not isinstance(row, dict):
            raise PairsError(str(path), n, "-", "not a JSON object", "Write one JSON object per line.")
        for field in REQUIRED:
            if row.get(field) is None:
                raise PairsError(str(path), n, field, "missing", f"Every line needs {', '.join(REQUIRED)}.")
            if field != "item_id" and not isinstance(row[field], str):
                raise PairsError(str(path), n, field, f"expected a string, got {type(row[field]).__name__}",
                                 "Quote the value.")
        key = (str(row["item_id"]), row["model_x"], row["model_y"])
        if key in seen:
            raise PairsError(str(path), n, "item_id", f"duplicate pair {key} (first on line {seen[key]})",
                             "Give each (item_id, model_x, model_y) one line.")
        seen[key] = n
        pairs.append(Pair(str(row["item_id"]), row["prompt"], row["model_x"], row["answer_x"],
                          row["model_y"], row["answer_y"], row.get("reference")))
    return pairs


def by_identity(order: str, p_a: float, p_b: float) -> tuple[float, float]:
    """(p_x, p_y) from slot probabilities: in order ``xy`` A is X, in ``yx`` A is Y."""
    return (p_a, p_b) if order == "xy" else (p_b, p_a)


def combine_orders(verdicts: pd.DataFrame, rule: str = "conservative") -> pd.DataFrame:
    """One row per pair from the ``xy`` and ``yx`` rows of a verdicts table.

    ``average``: p_x, p_y, p_tie are the mean of the two orders; winner = argmax.
    ``conservative`` (Zheng et al. 2023): the winner only when both orders name the same answer, else tie;
    probabilities are still the averages. ``consistent`` says whether the orders agreed; pairs missing an
    order (or with an unparsable order) keep ``winner = None`` and are counted by the caller.
    """
    if rule not in ("conservative", "average"):
        raise ValueError(f"rule must be 'conservative' or 'average', not {rule!r}")
    keys = ["item_id", "model_x", "model_y"]
    # groupby + unstack keeps only observed pairs (pivot_table(dropna=False) builds their cross product)
    wide = verdicts.groupby(keys + ["order"], sort=True)[["p_x", "p_y", "p_tie"]].first().unstack("order")
    out = wide.index.to_frame(index=False)
    for col in ("p_x", "p_y", "p_tie"):
        both = np.column_stack([wide.get((col, o), pd.Series(np.nan, index=wide.index)).to_numpy(float)
                                for o in ("xy", "yx")])
        out[col] = both.mean(axis=1)  # NaN when either order is missing or unparsable
        out[f"{col}_xy"], out[f"{col}_yx"] = both[:, 0], both[:, 1]
    names = np.array(["x", "y", "tie"], dtype=object)
    def argmax(cols):
        m = np.column_stack([out[c].to_numpy(float) for c in cols])
        ok = ~np.isnan(m).any(axis=1)
        return np.where(ok, names[np.argmax(np.nan_to_num(m, nan=-1.0), axis=1)], None), ok
    w_xy, ok_xy = argmax(["p_x_xy", "p_y_xy", "p_tie_xy"])
    w_yx, ok_yx = argmax(["p_x_yx", "p_y_yx", "p_tie_yx"])
    ok = ok_xy & ok_yx
    out["consistent"] = np.where(ok, w_xy == w_yx, False)
    if rule == "average":
        winner, _ = argmax(["p_x", "p_y", "p_tie"])
    else:
        winner = np.where(w_xy == w_yx, w_xy, "tie")
    out["winner"] = np.where(ok, winner, None)
    out["rule"] = rule
    return out


def to_battles(combined: pd.DataFrame, judge: str | None = None) -> pd.DataFrame:
    """Combined verdicts as Chatbot-Arena-layout battles (``model_a = model_x``), for ``arena.data.load_battles``."""
    ok = combined["winner"].notna()
    winner = combined.loc[ok, "winner"].map({"x": "model_a", "y": "model_b", "tie": "tie"})
    df = pd.DataFrame({"model_a": combined.loc[ok, "model_x"], "model_b": combined.loc[ok, "model_y"],
                       "winner": winner, "question_id": combined.loc[ok, "item_id"]})
    if judge:
        df["judge"] = judge
    return df.reset_index(drop=True)
