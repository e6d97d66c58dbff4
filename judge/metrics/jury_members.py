"""A jury's members: their verdicts read back (``judge jury``), their display names (one rule for ``judge jury``
and ``judge run`` with several judges), and the panel table written per pair."""

from __future__ import annotations

from collections.abc import Container
from pathlib import Path

from judge.metrics.jury import JuryTable, panel_verdicts
from preflab.outcomes import IDENTITY_NAMES


def distinct_name(name: str, spec: str, index: int, taken: Container[str]) -> str:
    """A member's name among those ``taken``: its own name, else its spec when two members would share a name,
    else ``index:spec`` when even that repeats (``index`` counts from 1)."""
    return name if name not in taken else spec if spec not in taken else f"{index}:{spec}"


def panel_frame(table: JuryTable, rule: str = "majority", seed: int = 0):
    """One row per pair: ``item_id, model_x, model_y, winner`` (x, y, tie or unparsable), the rule, and each
    member's verdict (``member_1`` …, null where it abstained)."""
    panel = panel_verdicts(table, rule, seed)["panel"]
    members = {f"member_{j + 1}": [None if c != c else IDENTITY_NAMES[int(c)] for c in table.codes[:, j]]
               for j in range(len(table.members))}
    return table.keys.assign(winner=[IDENTITY_NAMES[int(c)] for c in panel], rule=rule, **members)


def load_member(spec: str, human: str | Path | None = None, allow_mixed: bool = False,
                lengths: str | Path | None = None):
    """One member's judged pairs from ``PATH`` (any :func:`judge.metrics.adapters.load_any` layout) or
    ``PATH#JUDGE`` for a shared data folder with several judges (``llmfao#gpt3``); ``human`` joins labels,
    ``lengths`` answer lengths (:func:`judge.metrics.human_join.attach_lengths`, for the longer-answer baseline)."""
    from judge.metrics.adapters import load_any
    from judge.metrics.human_join import attach_human, attach_lengths

    path, judge = spec, None
    if not Path(spec).exists() and "#" in spec:
        path, _, judge = spec.rpartition("#")
    pairs = load_any(path, "auto", judge, allow_mixed)
    pairs = attach_human(pairs, human) if human else pairs
    return attach_lengths(pairs, lengths) if lengths else pairs


def load_members(specs, human: str | Path | None = None, allow_mixed: bool = False,
                 lengths: str | Path | None = None) -> dict:
    """Each member's judged pairs (:func:`load_member`) by display name (:func:`member_name`, made distinct by
    :func:`distinct_name`)."""
    tables: dict = {}
    for k, spec in enumerate(specs, start=1):
        pairs = load_member(spec, human, allow_mixed, lengths)
        tables[distinct_name(member_name(spec, pairs), spec, k, tables)] = pairs
    return tables


def member_name(spec: str, pairs) -> str:
    """A member's display name: the judge recorded in its verdicts, else the spec."""
    if not Path(spec).exists() and "#" in spec:
        return spec.rpartition("#")[2]
    judge = (pairs.attrs.get("settings") or {}).get("judge model")
    return str(judge) if judge else Path(spec).name
