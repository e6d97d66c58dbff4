"""What ``preflab compare`` reads: two versions' answers on the same prompts, and verdict files on them.

Answers come as an items file (one row per answer: ``item_id, prompt, model, answer``) or a pairs file
(``item_id, prompt, model_x, answer_x, model_y, answer_y``). Verdicts are ``preflab judge run`` JSONL files,
one per rubric. Every mismatch between them and the two versions named is an input error naming the file,
the line and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from judge.metrics.adapters import load_verdicts_jsonl
from judge.verdicts.judged_pairs import swap_sides
from judge.verdicts.pairs import Pair
from preflab.errors import InputError
from preflab.io import iter_jsonl, require_rows
from preflab.outcomes import Outcome

ITEM_FIELDS = ("item_id", "prompt", "model", "answer")
PAIR_FIELDS = ("item_id", "prompt", "model_x", "answer_x", "model_y", "answer_y")


@dataclass(frozen=True)
class Answers:
    """Every answer by (item, model), the prompt of each item and the line each answer came from."""

    source: str
    prompts: dict[str, str]
    answers: dict[str, dict[str, str]]
    lines: dict[tuple[str, str], int]
    references: dict[str, str]

    @property
    def models(self) -> list[str]:
        return sorted({m for by_model in self.answers.values() for m in by_model})


def _text(row: dict, field: str, source: str, line: int) -> str:
    value = row.get(field)
    if value is None:
        raise InputError(source, line, field, "missing", f"each line needs {', '.join(ITEM_FIELDS)} "
                         f"(or the pairs layout {', '.join(PAIR_FIELDS)})")
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InputError(source, line, field, f"expected text, got {type(value).__name__}", "quote the value")
    return str(value)


def load_answers(path: str | Path) -> Answers:
    """Read an items file (``item_id, prompt, model, answer``) or a pairs file into :class:`Answers`."""
    source = str(path)
    prompts: dict[str, str] = {}
    answers: dict[str, dict[str, str]] = {}
    lines: dict[tuple[str, str], int] = {}
    references: dict[str, str] = {}
    for line, row in iter_jsonl(path, "one JSON object per line", error=InputError):
        sides = (("model_x", "answer_x"), ("model_y", "answer_y")) if "model_x" in row else (("model", "answer"),)
        item = _text(row, "item_id", source, line)
        prompt = _text(row, "prompt", source, line)
        if prompts.setdefault(item, prompt) != prompt:
            raise InputError(source, line, "prompt", f"item {item!r} has another prompt on line "
                             f"{min(v for (i, _), v in lines.items() if i == item)}",
                             "one item_id means one prompt; give different prompts different ids")
        if isinstance(row.get("reference"), str):
            references.setdefault(item, row["reference"])
        for model_field, answer_field in sides:
            model, answer = _text(row, model_field, source, line), _text(row, answer_field, source, line)
            by_model = answers.setdefault(item, {})
            if model in by_model and by_model[model] != answer:
                raise InputError(source, line, model_field, f"a second answer from {model!r} to item {item!r} "
                                 f"(first on line {lines[(item, model)]})", "keep one answer per model and prompt")
            by_model[model] = answer
            lines.setdefault((item, model), line)
    require_rows(len(answers), source, "answers", "write one answer per line")
    return Answers(source, prompts, answers, lines, references)


def check_versions(models: list[str], base: str, candidate: str, source: str) -> None:
    """Both versions must be named, different, and present in the file."""
    if base == candidate:
        raise InputError(source, None, "model", f"--base and --candidate are both {base!r}",
                         "compare two different versions")
    for flag, name in (("--base", base), ("--candidate", candidate)):
        if name not in models:
            raise InputError(source, None, "model", f"{flag} {name!r} is not in the file (models: "
                             f"{', '.join(map(repr, models[:10]))}{' …' if len(models) > 10 else ''})",
                             f"pass {flag} with one of the models in the file")


def version_pairs(answers: Answers, base: str, candidate: str) -> list[Pair]:
    """One pair per prompt: x is the candidate's answer, y the base's; a prompt only one version answered is
    an error (a paired comparison needs both)."""
    check_versions(answers.models, base, candidate, answers.source)
    pairs = []
    for item, by_model in answers.answers.items():
        has = [m for m in (base, candidate) if m in by_model]
        if len(has) == 1:
            missing = candidate if has[0] == base else base
            raise InputError(answers.source, answers.lines[(item, has[0])], "item_id",
                             f"item {item!r} was answered by {has[0]!r} but not by {missing!r}",
                             "give both versions an answer to every prompt, or drop the prompt")
        if has:
            pairs.append(Pair(item, answers.prompts[item], candidate, by_model[candidate], base, by_model[base],
                              answers.references.get(item)))
    return pairs


def dimension_name(verdicts: pd.DataFrame, path: str | Path) -> str:
    """A verdict file's dimension: its rubric's name (``concise@1`` -> ``concise``), else the file's stem."""
    rubric = verdicts.attrs.get("settings", {}).get("rubric")
    return str(rubric).split("@")[0] if rubric else Path(path).stem


def first_bad_line(path: str | Path, bad) -> tuple[int | None, str]:
    """The first line of a verdict file whose pair fails ``bad(row) -> field or None``."""
    for line, row in iter_jsonl(path, "one JSON object per line"):
        field = bad(row)
        if field:
            return line, field
    return None, "model_x"


def candidate_codes(verdicts: pd.DataFrame, path: str | Path, base: str, candidate: str) -> pd.DataFrame:
    """The verdict table turned so that x is the candidate: ``item_id, judge_xy`` (candidate shown first),
    ``judge_yx``; a pair that is not base-vs-candidate is an error naming its line."""
    source = str(path)
    mx, my = verdicts["model_x"].astype(str), verdicts["model_y"].astype(str)
    forward = (mx == candidate) & (my == base)
    backward = (mx == base) & (my == candidate)
    if not (forward | backward).all():
        models = {base, candidate}
        line, field = first_bad_line(path, lambda r: None if {str(r.get("model_x")), str(r.get("model_y"))} == models
                                  else ("model_x" if str(r.get("model_x")) not in models else "model_y"))
        raise InputError(source, line, field, f"a pair that is not {candidate!r} vs {base!r}",
                         "judge the two versions' pairs only (or pass the --base/--candidate the file was made for)")
    if verdicts["item_id"].duplicated().any():
        item = verdicts.loc[verdicts["item_id"].duplicated(), "item_id"].iloc[0]
        line, _ = first_bad_line(path, lambda r: "item_id" if str(r.get("item_id")) == str(item) else None)
        raise InputError(source, line, "item_id", f"item {item!r} is judged twice (as x-vs-y and y-vs-x)",
                         "judge each prompt's pair once, in both orders")

    xy, yx = verdicts["judge_xy"].to_numpy(float), verdicts["judge_yx"].to_numpy(float)
    back = backward.to_numpy()
    # the candidate was y in a backward row: its "shown first" order is the file's yx
    cand_first = np.where(back, swap_sides(yx), xy)
    cand_second = np.where(back, swap_sides(xy), yx)
    return pd.DataFrame({"item_id": verdicts["item_id"].astype(str).to_numpy(), "judge_xy": cand_first,
                         "judge_yx": cand_second})


def load_dimension(path: str | Path, base: str, candidate: str,
                   allow_mixed: bool = False) -> tuple[str, pd.DataFrame, list[str]]:
    """(dimension name, candidate-as-x codes, the reader's notes) from one ``preflab judge run`` verdict file;
    verdicts of mixed judges, model versions or rubric texts are refused unless ``allow_mixed``."""
    table = load_verdicts_jsonl(path, allow_mixed)
    about_probabilities = set(table.attrs.get("probability_notes", []))  # compare computes no Brier/ECE
    notes = [f"{Path(path).name}: {n}" for n in table.attrs.get("notes", []) if n not in about_probabilities]
    return dimension_name(table, path), candidate_codes(table, path, base, candidate), notes


def runner_codes(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Candidate-as-x codes from the runner's verdict rows for :func:`version_pairs` (x is the candidate)."""
    slot = {"A": Outcome.FIRST, "B": Outcome.SECOND, "tie": Outcome.TIE}
    by_order: dict[str, dict[str, float]] = {"xy": {}, "yx": {}}
    for item, order, verdict in zip(verdicts["item_id"], verdicts["order"], verdicts["verdict"], strict=True):
        s = slot.get(verdict) if isinstance(verdict, str) else None
        by_identity = Outcome.FIRST if (s == Outcome.FIRST) == (order == "xy") else Outcome.SECOND
        code = Outcome.UNPARSABLE if s is None else (Outcome.TIE if s == Outcome.TIE else by_identity)
        by_order[order][str(item)] = float(code)
    items = list(dict.fromkeys(str(i) for i in verdicts["item_id"]))
    return pd.DataFrame({"item_id": items, "judge_xy": [by_order["xy"].get(i, np.nan) for i in items],
                         "judge_yx": [by_order["yx"].get(i, np.nan) for i in items]})


__all__ = ["ITEM_FIELDS", "PAIR_FIELDS", "Answers", "candidate_codes", "check_versions", "dimension_name",
           "load_answers", "load_dimension", "runner_codes", "version_pairs"]
