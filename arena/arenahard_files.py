"""Arena-Hard files: judgment JSONL in both published layouts (v2, v0.1) as a table of games, judge verdict pairs as
games, and the style totals of the answer files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from preflab.errors import InputError
from preflab.io import iter_jsonl, json_type
from preflab.outcomes import IDENTITY_NAMES, Outcome

STRONG_WEIGHT = 3


# Score for the answer shown as A, and whether the verdict is strong.
LABELS: dict[str, tuple[float, bool]] = {
    "A>>B": (1.0, True), "A>B": (1.0, False), "A=B": (0.5, False), "B>A": (0.0, False), "B>>A": (0.0, True),
    "A<<B": (0.0, True), "A<B": (0.0, False), "B=A": (0.5, False), "B<A": (1.0, False), "B<<A": (1.0, True),
}


GAME_COLUMNS = ("uid", "model", "opponent", "game", "score", "weight", "label", "category")


def label_score(label: str, model_is_a: bool, strong_weight: float = STRONG_WEIGHT) -> tuple[float, float]:
    """(model's score, weight) of one verdict label; strong verdicts weigh ``strong_weight``."""
    score_a, strong = LABELS[label]
    return (score_a if model_is_a else 1.0 - score_a), (strong_weight if strong else 1.0)


def _prompt_id(rec: dict) -> object:
    """The prompt id: ``uid`` (Arena-Hard v2) or ``question_id`` (v0.1)."""
    uid = rec.get("uid")
    return rec.get("question_id") if uid in (None, "") else uid


def load_arena_hard(paths: list[str | Path], baseline: str | None = None,
                    strong_weight: float = STRONG_WEIGHT) -> pd.DataFrame:
    """Arena-Hard judgment JSONL files as a games table, in both published layouts.

    v2 (``{uid, category, judge, model, baseline, games: [{score, judgment, prompt} | null, ...]}``) and
    v0.1 (``{question_id, model, judge, games: [{user_prompt, judgment, score}, ...]}``, one file per model,
    no baseline field: pass ``baseline``; arena-hard-v0.1 used gpt-4-0314). Game 1 has the baseline as A.
    Games with a null score are skipped and counted in ``attrs["skipped"]``. ``attrs["models"]`` lists every
    judged model (also those with no readable game), ``attrs["baseline"]`` the baseline. Records judged
    against another baseline than ``baseline`` are left out and counted in ``attrs["other_baselines"]``;
    several baselines and no ``baseline`` given, a model judged against itself, an unknown label or a
    missing field raise :class:`InputError`.
    """
    rows, skipped, models = [], 0, {}
    found: dict[str, tuple[int, str]] = {}  # baseline -> (records, first place)
    other: dict[str, int] = {}
    for path in map(Path, paths):
        source = str(path)
        for line, rec in iter_jsonl(path, "one judgment object per line"):
            uid, model, base = _record_names(rec, source, line, baseline)
            n, first = found.get(base, (0, f"{source}, line {line}"))
            found[base] = (n + 1, first)
            if baseline is not None and base != baseline:
                other[base] = other.get(base, 0) + 1
                continue
            models.setdefault(model, f"{source}, line {line}")
            scored, n_null = _record_games(rec, source, line, strong_weight)
            skipped += n_null
            rows += [(uid, model, base, k, score, weight, label, rec.get("category"))
                     for k, score, weight, label in scored]
    _check_baselines(paths, baseline, found, models)
    games = pd.DataFrame(rows, columns=list(GAME_COLUMNS))
    games.attrs.update(skipped=skipped, models=sorted(models), other_baselines=other,
                       baseline=baseline if baseline is not None else next(iter(found), None))
    if games.empty:
        names = ", ".join(map(str, paths))
        raise InputError(names, None, "games", f"no readable game ({skipped} with a null score)" if skipped
                         else "no judgments (the file is empty)",
                         "pass Arena-Hard judgment JSONL with at least one scored game")
    return games


def _record_names(rec: dict, source: str, line: int, baseline: str | None) -> tuple[str, str, str]:
    """(prompt id, model, baseline) of one judgment record, every name checked."""
    uid = _prompt_id(rec)
    for field, value in (("uid", uid), ("model", rec.get("model")), ("games", rec.get("games"))):
        if value in (None, ""):
            raise InputError(source, line, field, "missing", "Arena-Hard judgments need uid (v2) or "
                             "question_id (v0.1), model and games")
    _check_name(uid, source, line, "uid")
    for field in ("model", "baseline", "category"):
        _check_name(rec.get(field), source, line, field)
    base = rec.get("baseline") or baseline
    if base is None:
        raise InputError(source, line, "baseline", "missing and no --baseline given",
                         "pass --baseline NAME (the model every answer was judged against; "
                         "gpt-4-0314 for arena-hard-v0.1)")
    base, model = str(base), str(rec["model"])
    if model == base:
        raise InputError(source, line, "model", f"'{model}' is judged against itself (it is the "
                         "baseline)", "drop the baseline's own judgments")
    return str(uid), model, base


def _record_games(rec: dict, source: str, line: int,
                  strong_weight: float) -> tuple[list[tuple[int, float, float, str]], int]:
    """The record's two games as (game number, score, weight, label), and how many had a null score."""
    games = rec["games"]
    if not isinstance(games, list) or len(games) != 2:
        raise InputError(source, line, "games", f"expected 2 games, got {games!r:.60}",
                         "one game per order")
    scored, skipped = [], 0
    for k, game in enumerate(games):
        if game is not None and not isinstance(game, dict):
            raise InputError(source, line, f"games[{k}]", f"{json_type(game)}, not a game object",
                             'write each game as {"score": "A>B", ...} (or null)')
        label = None if game is None else game.get("score")
        if label is not None and not isinstance(label, str):
            raise InputError(source, line, f"games[{k}].score", f"{json_type(label)}, not a verdict label",
                             f"use one of {sorted(LABELS)} (or null when unparsable)")
        if label is None:
            skipped += 1
            continue
        if label not in LABELS:
            raise InputError(source, line, f"games[{k}].score", f"unknown verdict {label!r}",
                             f"use one of {sorted(LABELS)} (or null when unparsable)")
        score, weight = label_score(label, model_is_a=k == 1, strong_weight=strong_weight)
        scored.append((k + 1, score, weight, label))
    return scored, skipped


def _check_baselines(paths: list[str | Path], baseline: str | None, found: dict[str, tuple[int, str]],
                     models: dict[str, str]) -> None:
    """Refuse several baselines when none was named, and a named baseline no record is judged against."""
    if baseline is None and len(found) > 1:
        shown = ", ".join(f"'{b}' ({n} records from {first})" for b, (n, first) in found.items())
        raise InputError(", ".join(map(str, paths)), None, "baseline", f"judgments against {len(found)} "
                         f"baselines: {shown}", "pass --baseline NAME to rank against one of them (the "
                         "other records are then left out and counted)")
    if baseline is not None and not models:
        shown = ", ".join(f"'{b}'" for b in found) or "none"
        raise InputError(", ".join(map(str, paths)), None, "baseline", f"no record is judged against "
                         f"'{baseline}' (baselines in the files: {shown})", "check --baseline")


def _check_name(value: object, source: str, line: int, field: str) -> None:
    """Names and ids are strings (an integer uid is fine); an object, array or float is an input error."""
    if value is None or isinstance(value, str) or (field == "uid" and isinstance(value, int)
                                                   and not isinstance(value, bool)):
        return
    raise InputError(source, line, field, f"{json_type(value)}, not a string", "write names and ids as strings")


def games_from_verdicts(pairs: pd.DataFrame, source: str = "<verdicts>") -> pd.DataFrame:
    """Judged pairs (``judge.metrics.adapters.load_verdicts_jsonl`` of a ``preflab judge run`` file) as a games table:
    ``model_x`` is the model, ``model_y`` its opponent, one game per order; unparsable verdicts are skipped
    and counted (no strong verdicts: weight 1)."""
    score = {Outcome.FIRST: 1.0, Outcome.SECOND: 0.0, Outcome.TIE: 0.5}
    rows, skipped = [], 0
    for rec in pairs.to_dict("records"):
        for game, col in ((1, "judge_xy"), (2, "judge_yx")):
            code = rec.get(col)
            if code is None or np.isnan(code) or int(code) not in score:
                skipped += 0 if code is None or np.isnan(code) else 1
                continue
            rows.append((rec["item_id"], rec["model_x"], rec["model_y"], game, score[int(code)], 1.0,
                         IDENTITY_NAMES[int(code)], None))
    games = pd.DataFrame(rows, columns=list(GAME_COLUMNS))
    games.attrs.update(skipped=skipped, models=sorted(set(pairs["model_x"]) | set(pairs["model_y"])))
    if games.empty:
        raise InputError(source, None, "verdict", "no readable verdict", "run `preflab judge run` first")
    return games


STYLE_FIELDS = ("tokens", "header_count", "list_count", "bold_count")


def load_answer_style(paths: list[str | Path]) -> pd.DataFrame:
    """Per-answer style totals indexed by (uid, model), from Arena-Hard ``model_answer`` JSONL (v2: ``uid, model,
    metadata: {token_len, header_count: {...}, list_count: {...}, bold_count: {...}}``; v0.1: ``question_id,
    model_id, conv_metadata: {...}`` with the same counts), flat rows
    (``uid``/``item_id``, ``model``, ``tokens, header_count, list_count, bold_count``) or answer text
    (``item_id, model, answer``, as in ``data/demo/items.jsonl``; length then in characters)."""
    from arena.style.features import markdown_counts

    rows, seen = [], {}
    for path in map(Path, paths):
        for line, rec in iter_jsonl(path, "one answer object per line"):
            meta = rec.get("metadata") or rec.get("conv_metadata") or rec  # v2 metadata, v0.1 conv_metadata
            uid = next((rec[f] for f in ("uid", "question_id", "item_id") if rec.get(f) not in (None, "")), None)
            if not isinstance(meta, dict):
                raise InputError(str(path), line, "metadata", f"{json_type(meta)}, not an object",
                                 "give metadata as {token_len, header_count, list_count, bold_count}")
            for field in ("uid", "question_id", "item_id", "model"):
                _check_name(rec.get(field), str(path), line, "uid" if field != "model" else field)
            if rec.get("model") is None and rec.get("model_id") is not None:  # v0.1 model_answer
                rec["model"] = rec["model_id"]
            if isinstance(rec.get("answer"), str) and meta is rec:
                values: list = list(markdown_counts(rec["answer"]))
            else:
                values = [meta.get("token_len", meta.get("tokens"))] + [meta.get(f) for f in STYLE_FIELDS[1:]]
            if uid is None or rec.get("model") is None or any(v is None for v in values):
                raise InputError(str(path), line, "metadata", "uid, model or a style count is missing",
                                      f"each answer needs uid, model and {', '.join(STYLE_FIELDS)} (or answer)")
            key = (str(uid), str(rec["model"]))
            if key in seen:
                raise InputError(str(path), line, "uid", f"second answer of model '{key[1]}' for prompt "
                                      f"'{key[0]}' (first at {seen[key]})", "keep one answer per model and prompt")
            seen[key] = f"{path}, line {line}"
            totals = [_style_total(v, str(path), line, f) for v, f in zip(values, STYLE_FIELDS, strict=True)]
            rows.append((*key, *totals))
    return pd.DataFrame(rows, columns=["uid", "model", *STYLE_FIELDS]).set_index(["uid", "model"])


def _style_total(value: object, source: str, line: int, field: str) -> float:
    """A style count (a number or a dict of counts, summed): finite and non-negative, else an input error."""
    try:
        total = float(sum(float(x) for x in value.values())) if isinstance(value, dict) else float(value)
    except (TypeError, ValueError):
        total = float("nan")
    if isinstance(value, bool) or not (0.0 <= total < 1e12):
        raise InputError(source, line, field, f"{value!r:.60} is not a finite non-negative count",
                         "give style counts as numbers (or dicts of numbers)")
    return total
