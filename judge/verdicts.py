"""Verdicts from a judge's output: label probabilities from top logprobs, or a label parsed from text.

The logprob reading follows AlpacaEval's weighted annotator (Dubois et al. 2023, ``logprob_parser``:
``P(label) = exp(lp_label) / sum_labels exp(lp)`` at the verdict position), extended to sum every token
variant of a label (``A``, `` A``, ``"A``), to report the probability mass that fell on labels, and to
bound the labels absent from the top-k by the smallest listed logprob instead of pretending they are zero.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

#: Characters a tokenizer may glue to the front of a verdict token (`` A``, ``"A``, ``[A``, ``**A``).
_PREFIX_CHARS = " \t\n\"'`*[(<"
#: Tokens that precede the verdict without being it (``[[``, ``**``, ``Verdict:``) — skipped when locating it.
_LEAD_TOKENS = {"", "[", "[[", "(", "*", "**", '"', "'", "`", "verdict", "verdict:", ":"}

LOW_MASS = 0.5  # below this the judge mostly wanted to say something else: flagged


@dataclass(frozen=True)
class Verdict:
    """A judge verdict over slot labels (``probs`` sums to 1 over outcomes unless unparsable).

    ``probs`` maps outcome names (``"A"``, ``"B"``, ``"tie"``, or a rubric's own, e.g. ``"A>>B"``)
    to probabilities. ``label_mass`` is the unnormalised top-k mass on labels (``nan`` for text
    verdicts); ``bound`` is the largest shift any probability could take from labels missing from the
    top-k (0 when all labels were listed). ``method`` is ``logprob``, ``text`` or ``sampled``.
    """

    probs: Mapping[str, float]
    label: str | None
    method: str
    label_mass: float = math.nan
    bound: float = 0.0
    missing: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict)

    @property
    def parsable(self) -> bool:
        """False when no label could be read (the row is kept and counted, never dropped)."""
        return self.label is not None

    @property
    def low_mass(self) -> bool:
        """True when less than :data:`LOW_MASS` of the top-k probability fell on labels."""
        return self.method == "logprob" and not (self.label_mass >= LOW_MASS)


def unparsable(method: str, **extra) -> Verdict:
    """The verdict for an output with no readable label; it keeps NaN probabilities."""
    return Verdict(probs={}, label=None, method=method, label_mass=0.0, extra=dict(extra))


def token_label(token: str, labels: Sequence[str], case_sensitive: bool = False) -> str | None:
    """The label a token is a variant of (surrounding spaces/quotes/brackets ignored), or None."""
    core = token.strip().lstrip(_PREFIX_CHARS).rstrip(" \t\n\"'`*]).:,")
    for label in labels:
        if core == label or (not case_sensitive and core.lower() == label.lower()):
            return label
    return None


def label_probs_from_logprobs(
    top_logprobs: Mapping[str, float],
    labels: Sequence[str],
    case_sensitive: bool = False,
) -> tuple[dict[str, float], float, float, tuple[str, ...]]:
    """Renormalised label probabilities at one position, with label mass and missing-label bound.

    Returns ``(probs, label_mass, bound, missing)``. ``probs[label] = m_label / sum(m)`` where
    ``m_label`` sums ``exp(logprob)`` over the label's token variants in the top-k (AlpacaEval's
    formula when each label has one variant). A label absent from the top-k has probability at most
    ``exp(min listed logprob)``; ``bound`` is the largest change in any ``probs`` value that could cause.
    ``probs`` is empty when no label is listed (the caller counts the verdict as unparsable).
    """
    mass = dict.fromkeys(labels, 0.0)
    for token, lp in top_logprobs.items():
        label = token_label(token, labels, case_sensitive)
        if label is not None:
            mass[label] += math.exp(lp)
    total = sum(mass.values())
    missing = tuple(label for label, m in mass.items() if m == 0.0)
    if total == 0.0:
        return {}, 0.0, 1.0, missing
    floor = math.exp(min(top_logprobs.values())) if top_logprobs else 0.0
    # Each missing label could hold up to `floor`; that moves each probability by at most k*floor/(total+k*floor).
    extra = floor * len(missing)
    bound = extra / (total + extra) if missing else 0.0
    return {label: m / total for label, m in mass.items()}, total, bound, missing


def verdict_position(tokens: Sequence[Mapping]) -> int | None:
    """Index of the verdict token: the first generated token that is not a lead-in (``[[``, ``**``, space)."""
    for i, tok in enumerate(tokens):
        text = str(tok.get("token", "")).strip().lower()
        if text not in _LEAD_TOKENS:
            return i
    return None


def verdict_from_logprobs(
    tokens: Sequence[Mapping],
    outcomes: Mapping[str, str],
    case_sensitive: bool = False,
) -> Verdict:
    """A logprob verdict from OpenAI-style ``logprobs.content`` (``[{token, logprob, top_logprobs}]``).

    ``outcomes`` maps each verdict label token to its outcome (``{"A": "A", "B": "B", "C": "tie"}``;
    AlpacaEval's ``{"m": "A", "M": "B"}``); several labels may share an outcome (5-level scales).
    """
    pos = verdict_position(tokens)
    if pos is None:
        return unparsable("logprob", reason="no generated tokens")
    top = {t["token"]: float(t["logprob"]) for t in tokens[pos].get("top_logprobs") or []}
    if not top:  # a server that returned only the sampled token
        top = {tokens[pos]["token"]: float(tokens[pos]["logprob"])}
    probs, mass, bound, missing = label_probs_from_logprobs(top, list(outcomes), case_sensitive)
    if not probs:
        return unparsable("logprob", reason="no label in top logprobs", token=tokens[pos].get("token"))
    by_outcome: dict[str, float] = {}
    for label, p in probs.items():
        by_outcome[outcomes[label]] = by_outcome.get(outcomes[label], 0.0) + p
    best = max(by_outcome, key=by_outcome.__getitem__)
    return Verdict(by_outcome, best, "logprob", mass, bound, missing, {"levels": probs})


# Text verdicts: strongest pattern first; each yields the label text.
_TEXT_PATTERNS = [
    re.compile(r"\[\[\s*([^\[\]]{1,8}?)\s*\]\]"),  # [[A]], [[A>>B]], [[tie]]
    re.compile(r"(?:final\s+)?(?:verdict|answer|winner|decision)\s*(?:is)?\s*[:=]?\s*\**\s*\(?\[?\s*"
               r"([A-Za-z]{1,3}|[AB]\s*[<>=]{1,2}\s*[AB]|tie)\b", re.IGNORECASE),
]


def verdict_from_text(text: str | None, outcomes: Mapping[str, str], case_sensitive: bool = False) -> Verdict:
    """Parse a written verdict (``[[A]]``, ``Verdict: B``, ``[[A>>B]]``) or a bare label; else unparsable.

    The last match wins, since judges that reason first state their verdict at the end.
    """
    if not text:
        return unparsable("text", reason="empty output")
    labels = list(outcomes)
    for pattern in _TEXT_PATTERNS:
        found = [token_label(m.group(1).replace(" ", ""), labels, case_sensitive)
                 for m in pattern.finditer(text)]
        found = [f for f in found if f is not None]
        if found:
            return _one_hot(outcomes, found[-1])
    label = token_label(text, labels, case_sensitive)  # the whole output is the label
    if label is None:
        first = text.strip().split(maxsplit=1)
        label = token_label(first[0], labels, case_sensitive) if first else None
    if label is None:
        return unparsable("text", reason="no verdict found", text=text[:200])
    return _one_hot(outcomes, label)


def _one_hot(outcomes: Mapping[str, str], label: str) -> Verdict:
    probs = dict.fromkeys(dict.fromkeys(outcomes.values()), 0.0)
    probs[outcomes[label]] = 1.0
    return Verdict(probs, outcomes[label], "text", math.nan)


def sampled_verdict(verdicts: Sequence[Verdict], outcomes: Sequence[str], level: float = 0.95) -> Verdict:
    """Combine K text verdicts sampled at temperature > 0 into verdict shares with Wilson intervals.

    Shares are over parsable samples; the Wilson score interval (Wilson 1927) per outcome comes from
    ``scipy.stats.binomtest(...).proportion_ci(method="wilson")``. Labelled ``sampled``, not logprob.
    """
    from scipy.stats import binomtest

    good = [v.label for v in verdicts if v.parsable]
    n_bad = len(verdicts) - len(good)
    if not good:
        return unparsable("sampled", samples=len(verdicts), unparsable=n_bad)
    counts = {o: good.count(o) for o in outcomes}
    probs = {o: c / len(good) for o, c in counts.items()}
    ci = {}
    for o, c in counts.items():
        lo_hi = binomtest(c, len(good)).proportion_ci(confidence_level=level, method="wilson")
        ci[o] = (float(lo_hi.low), float(lo_hi.high))
    best = max(probs, key=probs.__getitem__)
    return Verdict(probs, best, "sampled", math.nan, 0.0, (),
                   {"samples": len(verdicts), "unparsable": n_bad, "counts": counts, "ci": ci})
