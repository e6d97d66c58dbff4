"""JudgeBench (Tan et al. 2024, ScalerLab/JudgeBench) as published: its ``outputs/*.jsonl`` judgments and its
``data/*.jsonl`` pairs, and its headline accuracy by its own rule (``utils/metrics.py``).

A row is one response pair: ``pair_id``, ``source`` (``mmlu-pro-…``, ``livebench-reasoning``, ``livebench-math``,
``livecodebench``), ``response_A``/``response_B``, ``label`` (``A>B`` or ``B>A``: which answer is *correct*) and,
in an output file, ``judgments``: the judge's ``decision`` (``A>B``, ``B>A``, ``A=B`` or null) with A shown
first, then (two-game runs, the default) with B shown first; a reward model adds ``judgment.scores`` (the two
shown answers' scores, in shown order). Here x = ``response_A``, y = ``response_B``.

The rule: each order's decision, read by answer identity, scores +1 when it equals the label and −1 when it is
the reverse (ties and nulls 0); a pair is correct when the sum is positive (so one right order and one tie
counts, and one right and one wrong order does not). With one game a pair is correct when its decision equals
the label. Accuracy is correct pairs over all pairs, nulls included.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from judge.benchmarks.published_rows import require_finite
from preflab.errors import InputError
from preflab.io import iter_jsonl, json_type
from preflab.outcomes import Outcome, swapped

#: The report's categories and the ``source`` prefixes JudgeBench's ``run_judge.py`` groups by.
CATEGORIES = (("knowledge", "mmlu-pro"), ("reasoning", "livebench-reasoning"), ("math", "livebench-math"),
              ("coding", "livecodebench"))
#: A decision as the slot it names (A = the answer shown first).
DECISIONS = {"A>B": Outcome.FIRST, "B>A": Outcome.SECOND, "A=B": Outcome.TIE}
LABELS = {"A>B": Outcome.FIRST, "B>A": Outcome.SECOND}
HINT = "rows come from JudgeBench's run_judge.py (outputs/) or its data/ folder"


def judgebench_points(first: np.ndarray, second: np.ndarray, label: np.ndarray) -> np.ndarray:
    """Per pair, the rule's sum: +1 per order whose identity code equals ``label``, −1 per order naming the
    other answer (ties, unparsable and NaN — no such game — score 0). JudgeBench ``utils/metrics.py``."""
    label = np.asarray(label, dtype=float)
    other = np.where(label == Outcome.FIRST, float(Outcome.SECOND), float(Outcome.FIRST))
    total = np.zeros(label.shape)
    for d in (np.asarray(first, dtype=float), np.asarray(second, dtype=float)):
        total += (d == label).astype(float) - (d == other).astype(float)
    return total


def judgebench_correct(first: np.ndarray, second: np.ndarray | None, label: np.ndarray) -> np.ndarray:
    """1.0 where a pair counts as correct: two games, the points are positive; one game (``second`` None), the
    decision equals the label (JudgeBench's ``--single_game`` branch)."""
    if second is None:
        return (np.asarray(first, dtype=float) == np.asarray(label, dtype=float)).astype(float)
    return (judgebench_points(first, second, label) > 0).astype(float)


def category_of(source: str) -> str:
    """A ``source`` as its category (knowledge, reasoning, math, coding), or ``other``."""
    for name, prefix in CATEGORIES:
        if source.startswith(prefix):
            return name
    return "other"


def _text(rec: dict, field: str, path: str, line: int, required: bool = True) -> str | None:
    value = rec.get(field)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and value == ""):
        problem = "missing" if value in (None, "") else f"{json_type(value)}, not a string"
        raise InputError(path, line, field, problem, HINT)
    return value


def _code(value: object, table: dict, path: str, line: int, field: str) -> float:
    if value is None and table is DECISIONS:
        return float(Outcome.UNPARSABLE)
    if not isinstance(value, str) or value not in table:
        raise InputError(path, line, field, f"unknown value {value!r:.40}", f"use one of {', '.join(table)}"
                         + (" or null" if table is DECISIONS else ""))
    return float(table[value])


def _scores(judgment: dict, path: str, line: int, field: str) -> tuple[float, float]:
    scores = judgment.get("scores")
    ok = isinstance(scores, list) and len(scores) == 2 and all(
        isinstance(s, (int, float)) and not isinstance(s, bool) and np.isfinite(s) for s in scores)
    if not ok:
        raise InputError(path, line, field, f"expected two finite numbers, got {scores!r:.60}",
                         "a reward model's judgment holds the two shown answers' scores")
    return float(scores[0]), float(scores[1])


def _game(judgment: object, game: int, path: str, line: int) -> tuple[float, tuple[float, float] | None]:
    """One order's decision (by slot) and, for a reward model, its two scores (by slot)."""
    field = f"judgments[{game}]"
    if judgment is None:
        return float(Outcome.UNPARSABLE), None
    if not isinstance(judgment, dict):
        raise InputError(path, line, field, f"{json_type(judgment)}, not an object or null", HINT)
    code = _code(judgment.get("decision"), DECISIONS, path, line, f"{field}.decision")
    inner = judgment.get("judgment")
    has_scores = isinstance(inner, dict) and "scores" in inner
    return code, _scores(inner, path, line, f"{field}.judgment.scores") if has_scores else None


def _judge_model(games: list) -> str | None:
    """The judge model a judgment names (``judgment.judge_model``), if any."""
    for g in games:
        inner = g.get("judgment") if isinstance(g, dict) else None
        if isinstance(inner, dict) and isinstance(inner.get("judge_model"), str):
            return inner["judge_model"]
    return None


def _judgments(rec: dict, path: str, line: int) -> list:
    games = rec.get("judgments")
    if not isinstance(games, list) or len(games) not in (1, 2):
        raise InputError(path, line, "judgments", f"expected a list of one or two judgments, got {games!r:.60}",
                         HINT)
    return games


def read_judgebench(path: str | Path, judged: bool = True) -> pd.DataFrame:
    """A JudgeBench file as one row per pair: ``item_id`` (pair_id), ``source``, ``category``, ``label``
    (identity code), ``len_x``/``len_y`` (characters), and with ``judged`` the decisions by identity
    ``judge_xy``/``judge_yx`` (NaN: no second game) and, for reward models, ``score_x_xy``, ``score_y_xy``,
    ``score_x_yx``, ``score_y_yx``. Bad rows raise :class:`InputError` naming file, line and field; a repeated
    pair_id, or files mixing one- and two-game rows, too."""
    source, rows, seen, games_seen, judge = str(path), [], {}, None, None
    for line, rec in iter_jsonl(path, HINT):
        require_finite(rec, source, line, HINT)
        item = rec.get("pair_id")
        if not isinstance(item, (str, int)) or isinstance(item, bool) or item == "":
            raise InputError(source, line, "pair_id", "missing" if item in (None, "") else "not a string", HINT)
        item = str(item)
        if item in seen:
            raise InputError(source, line, "pair_id", f"{item!r} repeated (first on line {seen[item]})",
                             "keep one row per pair")
        seen[item] = line
        src = _text(rec, "source", source, line)
        a, b = (_text(rec, f, source, line, required=False) for f in ("response_A", "response_B"))
        row = {"item_id": item, "source": src, "category": category_of(src),
               "label": _code(rec.get("label"), LABELS, source, line, "label"),
               "len_x": np.nan if a is None else float(len(a)), "len_y": np.nan if b is None else float(len(b))}
        if judged:
            games = _judgments(rec, source, line)
            if games_seen is not None and len(games) != games_seen[0]:
                raise InputError(source, line, "judgments", f"{len(games)} judgment(s), but line {games_seen[1]} "
                                 f"has {games_seen[0]}", "a file comes from one run: every pair in one or both orders")
            games_seen = games_seen or (len(games), line)
            judge = judge or _judge_model(games)
            row.update(_identity_row([_game(g, i, source, line) for i, g in enumerate(games)]))
        rows.append(row)
    if not rows:
        raise InputError(source, None, None, "no pairs in the file", HINT)
    table = pd.DataFrame(rows)
    table.attrs.update(games=games_seen[0] if games_seen else 0, source=source, judge=judge)
    return table


def _identity_row(games: list[tuple[float, tuple[float, float] | None]]) -> dict:
    """The games by answer identity: the second game showed B first, so its slots are swapped."""
    (c1, s1), second = games[0], (games[1] if len(games) > 1 else (np.nan, None))
    c2, s2 = second
    row = {"judge_xy": c1, "judge_yx": np.nan if np.isnan(c2) else float(swapped(int(c2)))}
    if s1 is not None or s2 is not None:
        row.update(score_x_xy=s1[0] if s1 else np.nan, score_y_xy=s1[1] if s1 else np.nan,
                   score_x_yx=s2[1] if s2 else np.nan, score_y_yx=s2[0] if s2 else np.nan)
    return row


def judgebench_table(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per pair, 1.0 when correct by JudgeBench's rule, and the category of each pair."""
    second = rows["judge_yx"].to_numpy(dtype=float) if rows.attrs.get("games") == 2 else None
    correct = judgebench_correct(rows["judge_xy"].to_numpy(dtype=float), second, rows["label"].to_numpy(dtype=float))
    return correct, rows["category"].to_numpy(dtype=str)
