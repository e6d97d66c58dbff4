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

from judge.verdicts.judged_pairs import COMBINE_RULES, combine_order_codes
from preflab.errors import InputError
from preflab.io import iter_jsonl, require_rows
from preflab.outcomes import IDENTITY_NAMES, Outcome

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


class PairsError(InputError):
    """A bad pairs file: names the file, line and field, says what is wrong and what to do."""


def load_pairs(path: str | Path) -> list[Pair]:
    """Read a pairs JSONL file (``item_id, prompt, model_x, answer_x, model_y, answer_y[, reference]``)."""
    path = Path(path)
    pairs: list[Pair] = []
    seen: dict[tuple, int] = {}
    from judge.verdicts.judgebench_pairs import is_judgebench_pairs, judgebench_pair_rows

    published = judgebench_pair_rows(path) if is_judgebench_pairs(path) else None  # JudgeBench's data/ layout
    rows = enumerate(published, start=1) if published is not None else iter_jsonl(
        path, "Write one JSON object per line.", error=PairsError)
    for n, row in rows:
        for field in REQUIRED:
            if row.get(field) is None:
                raise PairsError(str(path), n, field, "missing", f"Every line needs {', '.join(REQUIRED)}.")
            if not isinstance(row[field], str) and not (field == "item_id" and isinstance(row[field], int)):
                raise PairsError(str(path), n, field, f"expected a string, got {type(row[field]).__name__}",
                                 "Quote the value.")
        key = (str(row["item_id"]), row["model_x"], row["model_y"])
        if key in seen:
            raise PairsError(str(path), n, "item_id", f"duplicate pair {key} (first on line {seen[key]})",
                             "Give each (item_id, model_x, model_y) one line.")
        seen[key] = n
        if row["model_x"] == row["model_y"]:
            raise PairsError(str(path), n, "model_y", f"model_y equals model_x ({row['model_x']!r})",
                             "Each pair compares two different models.")
        pairs.append(Pair(str(row["item_id"]), row["prompt"], row["model_x"], row["answer_x"],
                          row["model_y"], row["answer_y"], row.get("reference")))
    require_rows(len(pairs), str(path), "pairs", "Write one pair per line.", error=PairsError)
    return pairs


def by_identity(order: str, p_a: float, p_b: float) -> tuple[float, float]:
    """(p_x, p_y) from slot probabilities: in order ``xy`` A is X, in ``yx`` A is Y."""
    return (p_a, p_b) if order == "xy" else (p_b, p_a)


def combined_table(verdicts: pd.DataFrame, rule: str = "conservative") -> pd.DataFrame:
    """One row per pair from the ``xy`` and ``yx`` rows of a verdicts table, by
    the code arrays of :func:`judge.verdicts.judged_pairs.combine_order_codes` (the one implementation of both rules).

    Each order's verdict is the argmax of its (p_x, p_y, p_tie); ``p_x``, ``p_y``, ``p_tie`` are the means of
    the two orders. ``consistent`` says whether the orders agreed; pairs missing an order (or with an
    unparsable order) keep ``winner = None`` and are counted by the caller.
    """
    if rule not in COMBINE_RULES:
        raise ValueError(f"rule must be one of {COMBINE_RULES}, not {rule!r}")
    keys = ["item_id", "model_x", "model_y"]
    # groupby + unstack keeps only observed pairs (pivot_table(dropna=False) builds their cross product)
    wide = verdicts.groupby(keys + ["order"], sort=True)[["p_x", "p_y", "p_tie"]].first().unstack("order")
    out = wide.index.to_frame(index=False)
    for col in ("p_x", "p_y", "p_tie"):
        both = np.column_stack([wide.get((col, o), pd.Series(np.nan, index=wide.index)).to_numpy(float)
                                for o in ("xy", "yx")])
        out[col] = both.mean(axis=1)  # NaN when either order is missing or unparsable
        out[f"{col}_xy"], out[f"{col}_yx"] = both[:, 0], both[:, 1]

    # a written verdict (method "text") has no probabilities: its label decides that order
    labels = (verdicts.groupby(keys + ["order"], sort=True)["verdict"].first().unstack("order")
              .reindex(wide.index) if "verdict" in verdicts else None)

    def order_code(o: str) -> np.ndarray:
        m = np.column_stack([out[f"{c}_{o}"].to_numpy(float) for c in ("p_x", "p_y", "p_tie")])
        code = np.where(np.isnan(m).any(axis=1), np.nan, np.argmax(np.nan_to_num(m, nan=-1.0), axis=1))
        if labels is not None and o in labels:
            first, second = (Outcome.FIRST, Outcome.SECOND) if o == "xy" else (Outcome.SECOND, Outcome.FIRST)
            slot = {"A": float(first), "B": float(second), "tie": float(Outcome.TIE)}
            written = np.array([slot.get(v, np.nan) for v in labels[o]], dtype=float)
            code = np.where(np.isnan(code), written, code)
        return code

    code_xy, code_yx = order_code("xy"), order_code("yx")
    codes = combine_order_codes(code_xy, code_yx, out["p_x_xy"], out["p_x_yx"], out["p_tie_xy"],
                                out["p_tie_yx"], require_both=True)
    ok = ~np.isnan(code_xy) & ~np.isnan(code_yx)
    out["consistent"] = ok & (code_xy == code_yx)
    out["winner"] = [IDENTITY_NAMES[int(c)] if c != Outcome.UNPARSABLE else None for c in codes[rule]]
    out["rule"] = rule
    return out

