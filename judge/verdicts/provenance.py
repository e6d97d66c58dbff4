"""Provenance of a verdict: which judge, which served model version, which rubric text, which settings.

Every row of ``preflab judge run`` records it (:func:`run_columns`, :func:`served_columns`); readers count
the distinct values (:class:`ProvenanceTally`) and refuse to pool verdicts whose judge, served model
version or rubric text differ unless asked (:func:`require_one_judge`): a judge swapped for a newer
version silently moves every downstream number.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from preflab.errors import InputError

#: Row fields that must agree before verdicts are pooled, with the words an error uses for them.
MIX_FIELDS: dict[str, str] = {"judge": "judges", "model_version": "model versions", "rubric_hash": "rubric hashes"}
#: Card checklist entries read from the rows: checklist name -> row field.
CARD_FIELDS: dict[str, str] = {"model version": "model_version", "system fingerprint": "system_fingerprint",
                               "rubric hash": "rubric_hash", "method": "method", "preflab version": "preflab_version"}
NOT_RECORDED = "not recorded"
#: Row fields read from the API's response (a row without a response has none).
SERVED_FIELDS = ("model_version", "system_fingerprint")


def rubric_text_hash(rubric) -> str:
    """SHA-256 of a rubric's full text and labels (everything that reaches the judge or reads its answer)."""
    payload = json.dumps({"name": rubric.name, "version": rubric.version, "system": rubric.system,
                          "instruction": rubric.instruction, "labels": rubric.labels,
                          "text_labels": rubric.text_labels, "case_sensitive": rubric.case_sensitive,
                          "answer_prefix": rubric.answer_prefix}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


def preflab_version() -> str:
    """The installed preflab's version (``unknown`` when run from a tree that is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("preflab")
    except PackageNotFoundError:
        return "unknown"


def served_by(raw: Mapping | None) -> tuple[str | None, str | None]:
    """(model, system_fingerprint) as the API returned them: a fresh response body, or the ``served`` record
    a cached completion keeps."""
    raw = raw or {}
    src = raw.get("served") if isinstance(raw.get("served"), Mapping) else raw
    model, fp = src.get("model"), src.get("system_fingerprint")
    return (str(model) if model else None), (str(fp) if fp else None)


def served_columns(raws: Iterable[Mapping | None]) -> dict[str, str | None]:
    """``model_version`` and ``system_fingerprint`` for one verdict row from its calls' responses (several
    distinct values, e.g. K samples served by two backends, are joined with ``|``; none given → None)."""
    models, fps = [], []
    for raw in raws:
        m, f = served_by(raw)
        for seen, v in ((models, m), (fps, f)):
            if v and v not in seen:
                seen.append(v)
    return {"model_version": "|".join(models) or None, "system_fingerprint": "|".join(fps) or None}


def run_columns(judge: str, rubric, sampling: Mapping[str, object]) -> dict[str, object]:
    """The columns every row of one run shares: judge spec, rubric name@version and text hash, sampling
    settings (``max_tokens``, ``top_logprobs``, ``seed``; temperature has its own column), preflab version."""
    return {"judge": judge, "rubric": f"{rubric.name}@{rubric.version}", "rubric_hash": rubric_text_hash(rubric),
            "sampling": json.dumps(dict(sampling), sort_keys=True), "preflab_version": preflab_version()}


@dataclass
class ProvenanceTally:
    """Distinct values of each provenance field over a file's rows, with the first line of each."""

    values: dict[str, dict[str | None, int]] = field(default_factory=dict)
    first_line: dict[str, dict[str | None, int | None]] = field(default_factory=dict)

    def add(self, rec: Mapping, line: int | None) -> None:
        # A call that failed (or was never sent) got no response, so nothing says what served it: its empty
        # served fields are not a second model version, only missing.
        no_response = rec.get("error") not in (None, "")
        for name in (*MIX_FIELDS, *CARD_FIELDS.values()):
            v = rec.get(name)
            v = None if v in (None, "") else str(v)
            if v is None and no_response and name in SERVED_FIELDS:
                continue
            counts = self.values.setdefault(name, {})
            counts[v] = counts.get(v, 0) + 1
            self.first_line.setdefault(name, {}).setdefault(v, line)

    @classmethod
    def merged(cls, tallies: Iterable[ProvenanceTally]) -> ProvenanceTally:
        """One tally over several files' rows (first lines are per file, so they are dropped)."""
        out = cls()
        for t in tallies:
            for name, counts in t.values.items():
                mine = out.values.setdefault(name, {})
                for v, n in counts.items():
                    mine[v] = mine.get(v, 0) + n
                    out.first_line.setdefault(name, {}).setdefault(v, None)
        return out

    def single(self, name: str) -> str | None:
        """The field's value when all rows that record it agree, else the mix spelled out; None if unrecorded."""
        vals = {k: n for k, n in self.values.get(name, {}).items() if k is not None}
        return None if not vals else next(iter(vals)) if len(vals) == 1 else describe(vals)

    def mixed(self) -> dict[str, dict[str | None, int]]:
        """The mix fields with more than one value ("not recorded" counting as a value)."""
        return {f: self.values[f] for f in MIX_FIELDS if len(self.values.get(f, {})) > 1}

    def settings(self) -> dict[str, str]:
        """Card checklist values: the one value of each field, or the mix spelled out."""
        return {label: v for label, name in CARD_FIELDS.items() if (v := self.single(name)) is not None}


def describe(values: Mapping[str | None, int]) -> str:
    """``a (40 rows), b (38 rows)`` with None as "not recorded"."""
    return ", ".join(f"{NOT_RECORDED if k is None else k} ({n} rows)" for k, n in values.items())


def require_one_judge(tally: ProvenanceTally, source: str, allow_mixed: bool = False) -> list[str]:
    """Raise :class:`InputError` naming what differs when the rows mix judges, model versions or rubric
    texts; with ``allow_mixed`` return notes that list the mix instead (the card shows them)."""
    mixed = tally.mixed()
    if not mixed:
        return []
    notes = [f"mixed {MIX_FIELDS[f]}: {describe(v)}" for f, v in mixed.items()]
    if allow_mixed:
        return [f"verdicts pooled with --allow-mixed; {n}" for n in notes]
    name = next(iter(mixed))
    second = list(tally.first_line[name].values())[1]
    raise InputError(source, second, name, "; ".join(notes),
                     "use verdicts of one judge, model version and rubric text, or pass --allow-mixed to pool "
                     "them (the card then lists the mix)")
