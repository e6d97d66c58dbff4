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
#: Tokenizer pieces for a space or line break as some servers return them (byte-level BPE ``Ġ``/``Ċ``,
#: SentencePiece ``▁``): read as the whitespace they stand for.
_PIECES = str.maketrans({"\u0120": " ", "\u010a": "\n", "\u2581": " "})
#: How each verdict was read (the ``method`` column of every verdict row).
METHODS = ("logprob-first-token", "logprob-at-verdict", "sampled", "text")
#: Tokens that precede the verdict without being it (``[[``, ``**``, ``Verdict:``) — skipped when locating it.
_LEAD_TOKENS = {"", "[", "[[", "(", "*", "**", '"', "'", "`", "verdict", "verdict:", ":"}

#: What a run, its verdict file and its card say when logprob rows came back without logprobs.
NO_LOGPROBS = "probabilities unavailable: server returned no logprobs"
LOW_MASS = 0.5  # below this the judge mostly wanted to say something else: flagged


@dataclass(frozen=True)
class Verdict:
    """A judge verdict over slot labels (``probs`` sums to 1 over outcomes unless unparsable).

    ``probs`` maps outcome names (``"A"``, ``"B"``, ``"tie"``, or a rubric's own, e.g. ``"A>>B"``)
    to probabilities. ``label_mass`` is the unnormalised top-k mass on labels (``nan`` for text
    verdicts); ``bound`` is the largest shift any probability could take from labels missing from the
    top-k (0 when all labels were listed). ``method`` is one of :data:`METHODS`: ``logprob-first-token``
    (the reply's first token), ``logprob-at-verdict`` (the label token after the reasoning), ``sampled``
    (shares of K sampled text verdicts) or ``text`` (a written verdict: no probability).
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
        return self.method.startswith("logprob") and not (self.label_mass >= LOW_MASS)


def unparsable(method: str, **extra) -> Verdict:
    """The verdict for an output with no readable label; it keeps NaN probabilities."""
    return Verdict(probs={}, label=None, method=method, label_mass=0.0, extra=dict(extra))


def normalise_piece(token: str) -> str:
    """A token as text: tokenizer space/newline pieces (``Ġ``, ``▁``, ``Ċ``) turned into whitespace."""
    return str(token).translate(_PIECES)


def token_label(token: str, labels: Sequence[str], case_sensitive: bool = False) -> str | None:
    """The label a token is a variant of (tokenizer pieces, surrounding spaces/quotes/brackets ignored;
    case ignored unless ``case_sensitive``), or None."""
    core = normalise_piece(token).strip().lstrip(_PREFIX_CHARS).rstrip(" \t\n\"'`*]).:,")
    for label in labels:
        if core == label or (not case_sensitive and core.lower() == label.lower()):
            return label
    return None


def label_probs_from_logprobs(
    top_logprobs: Mapping[str, float] | Sequence[tuple[str, float]],
    labels: Sequence[str],
    case_sensitive: bool = False,
) -> tuple[dict[str, float], float, float, tuple[str, ...]]:
    """Renormalised label probabilities at one position, with label mass and missing-label bound.

    Returns ``(probs, label_mass, bound, missing)``. ``probs[label] = m_label / sum(m)`` where
    ``m_label`` sums ``exp(logprob)`` over the label's token variants in the top-k (AlpacaEval's
    formula when each label has one variant). A label absent from the top-k has probability at most
    ``exp(min listed logprob)``; ``bound`` is the largest change in any ``probs`` value that could cause.
    ``probs`` is empty when no label is listed (the caller counts the verdict as unparsable). Given as
    (token, logprob) pairs, a token string listed twice (two token ids with the same text) counts twice.
    """
    pairs = list(top_logprobs.items()) if isinstance(top_logprobs, Mapping) else list(top_logprobs)
    mass = dict.fromkeys(labels, 0.0)
    for token, lp in pairs:
        label = token_label(token, labels, case_sensitive)
        if label is not None:
            mass[label] += math.exp(lp)
    total = sum(mass.values())
    missing = tuple(label for label, m in mass.items() if m == 0.0)
    if total == 0.0:
        return {}, 0.0, 1.0, missing
    floor = math.exp(min(lp for _, lp in pairs)) if pairs else 0.0
    # Each missing label could hold up to `floor`; that moves each probability by at most k*floor/(total+k*floor).
    extra = floor * len(missing)
    bound = extra / (total + extra) if missing else 0.0
    return {label: m / total for label, m in mass.items()}, total, bound, missing


def verdict_position(tokens: Sequence[Mapping]) -> int | None:
    """Index of the verdict token: the first generated token that is not a lead-in (``[[``, ``**``, space)."""
    for i, tok in enumerate(tokens):
        text = normalise_piece(tok.get("token", "")).strip().lower()
        if text not in _LEAD_TOKENS:
            return i
    return None


def verdict_at(tokens: Sequence[Mapping], pos: int, outcomes: Mapping[str, str], case_sensitive: bool = False,
               method: str = "logprob-first-token") -> Verdict:
    """The label probabilities in the top logprobs of token ``pos`` (duplicate token strings summed)."""
    top = [(t["token"], float(t["logprob"])) for t in tokens[pos].get("top_logprobs") or []]
    if not top:  # a server that returned only the sampled token
        top = [(tokens[pos]["token"], float(tokens[pos]["logprob"]))]
    probs, mass, bound, missing = label_probs_from_logprobs(top, list(outcomes), case_sensitive)
    if not probs:
        return unparsable(method, reason="no label in top logprobs", token=tokens[pos].get("token"))
    by_outcome: dict[str, float] = {}
    for label, p in probs.items():
        by_outcome[outcomes[label]] = by_outcome.get(outcomes[label], 0.0) + p
    best = max(by_outcome, key=by_outcome.__getitem__)
    return Verdict(by_outcome, best, method, mass, bound, missing, {"levels": probs, "position": pos})


def verdict_from_logprobs(
    tokens: Sequence[Mapping],
    outcomes: Mapping[str, str],
    case_sensitive: bool = False,
) -> Verdict:
    """A logprob verdict at the first generated token of OpenAI-style ``logprobs.content``
    (``[{token, logprob, top_logprobs}]``), lead-ins such as ``[[`` skipped.

    ``outcomes`` maps each verdict label token to its outcome (``{"A": "A", "B": "B", "C": "tie"}``;
    AlpacaEval's ``{"m": "A", "M": "B"}``); several labels may share an outcome (5-level scales).
    """
    pos = verdict_position(tokens)
    if pos is None:
        return unparsable("logprob-first-token", reason="no generated tokens")
    return verdict_at(tokens, pos, outcomes, case_sensitive)


# --- Text verdicts -----------------------------------------------------------------------------------------
# Three tiers, strongest first; within a tier the last statement wins (judges that reason first state their
# verdict at the end). A tier that finds nothing, or only statements it cannot trust, passes to the next;
# conflicting or negated free-form statements make the verdict unparsable rather than a guess.
_BRACKET = re.compile(r"\[\[\s*([^\[\]]{1,12}?)\s*\]\]")  # [[A]], [[C]], [[A>>B]], [[tie]]
_COMPARISON = re.compile(r"^([AB])\s*(>>|>|=|<|<<)\s*([AB])$", re.IGNORECASE)  # Arena-Hard's A>>B ... B>>A
_TIE = r"(?:(?:a|an)\s+)?(?:tie|draw)\b"
_NOUN = r"(?:assistant|output|answer|response|model)"
# A slot reference: "Assistant A", "Output (b)", "(a)"; lowercase letters only inside brackets.
_REF = (rf"(?:(?:{_NOUN}\s*)?(?:\(\s*(?P<paren>[ab])\s*\)|\[\s*(?P<square>[ab])\s*\])"
        rf"|{_NOUN}\s+(?P<named>(?-i:[AB]))\b)")
# "Verdict: B", "Final verdict: a tie", "The winner is Output (b)", "My final answer is tie."
_STATEMENT = re.compile(
    r"\b(?:verdict|winner|decision|answer|choice|judge?ment)\b\s*(?:is|would\s+be|[:=-])\s*[:=]?\s*[*_\"'`]*\s*"
    rf"(?:(?P<tie>{_TIE})|{_REF}|(?P<word>[^\s.,;:!?)\]*_\"'`]+))", re.IGNORECASE)
_WHOLE_REF = re.compile(rf"^[\s*_\"'`]*{_REF}[\s*_\"'`.!]*$", re.IGNORECASE)  # the output is "Output (a)"
_SUBJECT = rf"(?:{_REF}|\b(?P<bare>(?-i:[AB]))\b)(?:'s\s+(?:answer|response|output))?"
_NEG = re.compile(r"\b(?:not|never|no|neither|nor|hardly)\b|n't", re.IGNORECASE)
_CLAUSE = re.compile(r"[.;:!?,\n]|\bbut\b|\bwhile\b|\bhowever\b", re.IGNORECASE)
_MODS = (r"(?:(?:is|was|seems|appears|looks|performs|does|did|isn't|wasn't|doesn't|is\s+not|was\s+not|"
         r"much|slightly|somewhat|far|clearly|significantly|marginally|a\s+bit|a\s+little|overall|definitely|"
         r"the|not|never|arguably|generally|even|way|still|also)\s+)*")
_CMP = {"better": 1, "superior": 1, "preferable": 1, "preferred": 1, "stronger": 1, "wins": 1, "winner": 1,
        "worse": -1, "inferior": -1, "weaker": -1, "loses": -1}
# "B is better", "Assistant A's answer is slightly better", "Output (a) is not better" (negated)
_CLAIM = re.compile(rf"{_SUBJECT}\s+(?P<mods>{_MODS})(?P<cmp>{'|'.join(_CMP)})\b", re.IGNORECASE)
# "The better answer is B", "I prefer Assistant A"
_CLAIM_AFTER = re.compile(rf"(?:\b(?:better|best|winning|preferred|stronger|superior)\s+(?:one|{_NOUN}|choice|"
                          rf"option)?\s*(?:is|would\s+be)\s+|\bprefer\s+){_SUBJECT}", re.IGNORECASE)
_TIE_CLAIM = re.compile(r"\b(?:tie|tied|draw)\b|\bequally\s+\w+|\bequal\s+(?:in\s+)?quality\b|"
                        rf"\bneither\s+(?:one|{_NOUN})?\s*is\s+(?:clearly\s+)?better", re.IGNORECASE)


def _slot(outcomes: Mapping[str, str], outcome: str) -> str | None:
    """The outcome when the rubric has it (a "tie" read from text needs a rubric with a tie)."""
    return outcome if outcome in set(outcomes.values()) else None


def _bracket(content: str, outcomes: Mapping[str, str], case_sensitive: bool) -> str | None:
    """The outcome inside ``[[...]]``: a rubric label, else an Arena-Hard comparison (A>>B → A, A=B → tie)."""
    label = token_label(content.replace(" ", ""), list(outcomes), case_sensitive)
    if label is not None:
        return outcomes[label]
    m = _COMPARISON.match(content.strip())
    if not m:
        return None
    left, op, right = m.group(1).upper(), m.group(2), m.group(3).upper()
    if left == right:
        return None
    if op == "=":
        return _slot(outcomes, "tie")
    return _slot(outcomes, left if op in (">", ">>") else right)


def _statement(text: str, m: re.Match, outcomes: Mapping[str, str], case_sensitive: bool) -> str | None:
    if m.group("tie"):
        return _slot(outcomes, "tie")
    for group in ("paren", "square", "named"):
        if m.group(group):
            return _slot(outcomes, m.group(group).upper())
    word = m.group("word")
    if word == "a" and re.match(r"\s+[A-Za-z]", text[m.end("word"):]):
        return None  # the article: "The answer is a bit longer"
    label = token_label(word, list(outcomes), case_sensitive)
    if label is None and re.fullmatch(r"[AB][<>=]{1,2}[AB]", word, re.IGNORECASE):
        return _bracket(word, outcomes, case_sensitive)
    return None if label is None else outcomes[label]


def _subject(m: re.Match) -> str:
    return next(m.group(g) for g in ("paren", "square", "named", "bare") if m.groupdict().get(g)).upper()


def _negated_clause(text: str, start: int) -> bool:
    """A negation between the start of the clause and ``start`` ("Neither A nor B is", "I don't think B")."""
    before = text[:start]
    cut = max((m.end() for m in _CLAUSE.finditer(before)), default=0)
    return _NEG.search(before[cut:]) is not None


def _free_claims(text: str, outcomes: Mapping[str, str]) -> list[str | None]:
    """Outcomes of free-form statements in text order; None marks a negated one (it names no winner)."""
    claims: list[tuple[int, str | None]] = []
    for m in _CLAIM.finditer(text):
        who = _subject(m)
        if _NEG.search(m.group("mods")) or _negated_clause(text, m.start()):
            claims.append((m.start(), None))
        else:
            claims.append((m.start(), who if _CMP[m.group("cmp").lower()] > 0 else "B" if who == "A" else "A"))
    for m in _CLAIM_AFTER.finditer(text):
        claims.append((m.start(), None if _negated_clause(text, m.start()) else _subject(m)))
    for m in _TIE_CLAIM.finditer(text):
        if not _negated_clause(text, m.start()):  # "not a tie" says nothing about who won
            claims.append((m.start(), _slot(outcomes, "tie") or "?"))
    return [o for _, o in sorted(claims, key=lambda c: c[0])]


def _leading_label(text: str, labels: list[str], case_sensitive: bool) -> str | None:
    """The whole output as a label, or its first token when punctuation, a line break or a symbol follows
    ("B. Assistant B ...", "A\\n..."); a word or a colon after it ("A tie.", "A: 7/10, B: 8/10") makes it prose."""
    label = token_label(text, labels, case_sensitive)
    if label is not None:
        return label
    first, rest = re.match(r"(\S+)(.*)", text.strip(), re.DOTALL).groups()
    lead = token_label(first, labels, case_sensitive)
    if lead is not None and (first[-1] in ".!)]" or not re.match(r"[ \t]*[A-Za-z0-9]", rest)):
        return lead
    return None


def verdict_from_text(text: str | None, outcomes: Mapping[str, str], case_sensitive: bool = False) -> Verdict:
    """Parse a written verdict; when unsure, unparsable (never a guess).

    In order: ``[[label]]`` (MT-bench ``[[A]]``/``[[C]]``, Arena-Hard ``[[A>>B]]``/``[[A=B]]``, the last
    one wins); an explicit statement ("Verdict: B", "Final verdict: a tie", "The winner is Output (b)", last
    wins); the whole output, or its first token when punctuation or a line break follows ("B. Assistant B
    ..."; in "A tie." the A is the article); free-form statements ("Assistant A is better", "both equally
    good", "A close call, but B is better"), which must all name the same outcome and not be negated ("A is
    not better than B" names no winner). A lowercase "a" before a word is the article, never label A.
    """
    if not text or not text.strip():
        return unparsable("text", reason="empty output")
    labels = list(outcomes)
    found = [o for o in (_bracket(m.group(1), outcomes, case_sensitive) for m in _BRACKET.finditer(text)) if o]
    if not found:
        found = [o for o in (_statement(text, m, outcomes, case_sensitive) for m in _STATEMENT.finditer(text)) if o]
    if found:
        return _one_hot(outcomes, found[-1])
    label = _leading_label(text, labels, case_sensitive)
    if label is not None:
        return _one_hot(outcomes, outcomes[label])
    if _COMPARISON.match(text.strip()):  # a bare "A>B"
        outcome = _bracket(text.strip(), outcomes, case_sensitive)
        return _one_hot(outcomes, outcome) if outcome else unparsable("text", reason="no such outcome")
    whole = _WHOLE_REF.match(text)
    if whole:
        return _one_hot(outcomes, _subject(whole)) if _slot(outcomes, _subject(whole)) else unparsable("text")
    claims = _free_claims(text, outcomes)
    named = {o for o in claims if o is not None}
    if len(named) == 1 and "?" not in named:
        return _one_hot(outcomes, named.pop())
    reason = ("conflicting statements" if len(named) > 1 else "negated statement only" if claims
              else "no verdict found")
    return unparsable("text", reason=reason, text=text[:200])


def verdict_span(text: str, outcomes: Mapping[str, str], case_sensitive: bool = False,
                 marker: str | None = None) -> tuple[int, str] | None:
    """Where a reason-first judge wrote its verdict: (offset of the label's first character, outcome).

    The last ``marker`` (a rubric's own, e.g. ``"Final verdict:"``) followed by a label; else the tiers of
    :func:`verdict_from_text`: the last ``[[label]]`` (``[[A>>B]]`` too), then the last explicit statement
    ("Verdict: B"). None when the text states no verdict in one of those forms.
    """
    if marker:
        at = text.lower().rfind(marker.lower()) if not case_sensitive else text.rfind(marker)
        if at >= 0:
            rest = text[at + len(marker):]
            m = re.match(r"[\s*_\"'`\[(]*(\S+)", rest)
            if m:
                word = m.group(1)
                label = token_label(word, list(outcomes), case_sensitive)
                outcome = outcomes[label] if label else _bracket(word.rstrip(".,;:!)]*\"'`"), outcomes, case_sensitive)
                if outcome:
                    return at + len(marker) + m.start(1), outcome
    hits = [(m.start(1), o) for m in _BRACKET.finditer(text)
            if (o := _bracket(m.group(1), outcomes, case_sensitive))]
    if not hits:
        for m in _STATEMENT.finditer(text):
            o = _statement(text, m, outcomes, case_sensitive)
            if o:
                group = next(g for g in ("tie", "paren", "square", "named", "word") if m.group(g))
                hits.append((m.start(group), o))
    return hits[-1] if hits else None


def _one_hot(outcomes: Mapping[str, str], outcome: str) -> Verdict:
    probs = dict.fromkeys(dict.fromkeys(outcomes.values()), 0.0)
    probs[outcome] = 1.0
    return Verdict(probs, outcome, "text", math.nan)


def sampled_verdict(verdicts: Sequence[Verdict], outcomes: Sequence[str], level: float = 0.95) -> Verdict:
    """Combine K text verdicts sampled at temperature > 0 into verdict shares with Wilson intervals.

    Shares are over parsable samples; the Wilson score interval (Wilson 1927) per outcome is
    :func:`judge.stats.wilson_interval`, the one every report uses. Labelled ``sampled``, not logprob.
    """
    from judge.stats import wilson_interval

    good = [v.label for v in verdicts if v.parsable]
    n_bad = len(verdicts) - len(good)
    if not good:
        return unparsable("sampled", samples=len(verdicts), unparsable=n_bad)
    counts = {o: good.count(o) for o in outcomes}
    probs = {o: c / len(good) for o, c in counts.items()}
    ci = {}
    for o, c in counts.items():
        interval = wilson_interval(c, len(good), level)
        ci[o] = (interval.lower, interval.upper)
    best = max(probs, key=probs.__getitem__)
    return Verdict(probs, best, "sampled", math.nan, 0.0, (),
                   {"samples": len(verdicts), "unparsable": n_bad, "counts": counts, "ci": ci})
