"""Read a verdict where the judge wrote it: first token, the label after the reasoning, or the text.

One entry, :func:`read_verdict`, turns one completion into one :class:`judge.verdicts.parsing.Verdict` with its
``method``:

- ``logprob-first-token``: the reply starts with the label (``B``, ``[[B``); label probabilities from the
  top logprobs at that token (AlpacaEval's reading, :func:`judge.verdicts.parsing.verdict_from_logprobs`);
- ``logprob-at-verdict``: the judge reasons first and states its verdict later ("... Final verdict:
  [[B]]", MT-bench / Arena-Hard style); the label token is located in the text and read from the top
  logprobs at that position;
- ``text``: no logprobs (or none at the label): the written verdict, with no probability claim.

A ``<think>...</think>`` block before the answer is skipped (reasoning models served locally); an unclosed
one means the answer never came, and the verdict is unparsable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from judge.verdicts.parsing import (
    Verdict,
    normalise_piece,
    token_label,
    unparsable,
    verdict_at,
    verdict_from_text,
    verdict_position,
    verdict_span,
)

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def visible_start(text: str) -> int | None:
    """Offset where the answer begins after a leading ``<think>`` block (0 without one); None when the
    block never closes."""
    head = text.lstrip()
    if not head.startswith(THINK_OPEN):
        return 0
    end = text.find(THINK_CLOSE)
    return None if end < 0 else end + len(THINK_CLOSE)


def _token_index(tokens: Sequence[Mapping], offset: int) -> int:
    """The index of the token holding character ``offset`` of the tokens joined as text."""
    pos = 0
    for i, t in enumerate(tokens):
        pos += len(normalise_piece(t.get("token", "")))
        if pos > offset:
            return i
    return len(tokens) - 1


def read_verdict(text: str, tokens: Sequence[Mapping] | None, outcomes: Mapping[str, str],
                 text_outcomes: Mapping[str, str] | None = None, case_sensitive: bool = False,
                 marker: str | None = None) -> Verdict:
    """The verdict of one completion (see the module docstring). ``outcomes`` are the logprob labels,
    ``text_outcomes`` those the text parser also accepts (``[[A>>B]]``); ``marker`` a rubric's own lead-in."""
    text_outcomes = text_outcomes or outcomes
    start = visible_start(text or "")
    if start is None:
        return unparsable("text", reason="the reply ended inside <think>: no answer")
    if not tokens:
        v = verdict_from_text(text[start:], text_outcomes, case_sensitive)
        return Verdict(v.probs, v.label, "text", v.label_mass, extra={**v.extra, "logprobs": "none returned"})
    joined = "".join(normalise_piece(t.get("token", "")) for t in tokens)
    begin = visible_start(joined)
    first = 0 if not begin else _token_index(tokens, begin - 1) + 1
    tail = list(tokens[first:])
    pos = verdict_position(tail)
    span = verdict_span(joined[begin or 0:], text_outcomes, case_sensitive, marker)
    if span is not None:  # a stated verdict ("[[B]]", "Verdict: B"): read the label token there
        at = _token_index(tokens, (begin or 0) + span[0])
        if token_label(tokens[at]["token"], list(outcomes), case_sensitive) is not None:
            method = "logprob-first-token" if pos is not None and at == first + pos else "logprob-at-verdict"
            v = verdict_at(tokens, at, outcomes, case_sensitive, method)
            if v.parsable:
                return v
    if pos is not None and token_label(tail[pos]["token"], list(outcomes), case_sensitive) is not None:
        return verdict_at(tokens, first + pos, outcomes, case_sensitive, "logprob-first-token")
    v = verdict_from_text(text[start:], text_outcomes, case_sensitive)
    if v.parsable:  # prose with no label token to read: a written verdict, not a probability
        return Verdict(v.probs, v.label, "text", v.label_mass, extra={**v.extra, "logprobs": "no label token"})
    if pos is None:
        return unparsable("logprob-first-token", reason="no generated tokens")
    # nothing stated: the first token's top logprobs, if they list a label at all (then low label mass)
    return verdict_at(tokens, first + pos, outcomes, case_sensitive, "logprob-first-token")
