"""The one outcome vocabulary: every table stores these codes; labels are converted at the edges only.

A code names the winner by position in the row's pair: ``FIRST`` is ``model_a`` in a battle, ``x`` in a
judged pair (by identity, never by slot) and the left answer ``A`` in a vote. Ties come in two kinds
(Chatbot Arena's ``tie`` and ``tie (bothbad)``); every fit treats both as ties.
"""

from __future__ import annotations

from enum import IntEnum


class Outcome(IntEnum):
    """Who won a pairwise comparison, by position in the pair."""

    UNPARSABLE = -1  # a judge answer that names no winner
    FIRST = 0
    SECOND = 1
    TIE = 2
    TIE_BOTHBAD = 3

    @property
    def is_tie(self) -> bool:
        return self in (Outcome.TIE, Outcome.TIE_BOTHBAD)


#: Chatbot Arena's ``winner`` labels, indexed by code (battle tables).
BATTLE_LABELS: tuple[str, ...] = ("model_a", "model_b", "tie", "tie (bothbad)")
#: Judged-pair names by identity (verdict tables), by code.
IDENTITY_NAMES: dict[int, str] = {Outcome.FIRST: "x", Outcome.SECOND: "y", Outcome.TIE: "tie",
                                  Outcome.UNPARSABLE: "unparsable"}
#: What a voter clicks on the voting page (left answer A, right answer B), by code.
VOTE_CHOICES: dict[str, Outcome] = {"A": Outcome.FIRST, "B": Outcome.SECOND, "tie": Outcome.TIE,
                                    "bothbad": Outcome.TIE_BOTHBAD}
#: Labels accepted for an identity winner in label files (A = x, B = y; the seed's convention).
IDENTITY_LABELS: dict[str, Outcome] = {
    "a": Outcome.FIRST, "x": Outcome.FIRST, "model_a": Outcome.FIRST, "model_x": Outcome.FIRST,
    "1": Outcome.FIRST, "left": Outcome.FIRST,
    "b": Outcome.SECOND, "y": Outcome.SECOND, "model_b": Outcome.SECOND, "model_y": Outcome.SECOND,
    "2": Outcome.SECOND, "right": Outcome.SECOND,
    "tie": Outcome.TIE, "0": Outcome.TIE, "draw": Outcome.TIE, "tie (bothbad)": Outcome.TIE,
}


def battle_label(code: int) -> str:
    """The Chatbot Arena ``winner`` label of a code (``model_a``, ``model_b``, ``tie``, ``tie (bothbad)``)."""
    return BATTLE_LABELS[Outcome(code)]


def swapped(code: int) -> Outcome:
    """The same outcome seen with the pair's two sides exchanged (ties stay ties)."""
    code = Outcome(code)
    return {Outcome.FIRST: Outcome.SECOND, Outcome.SECOND: Outcome.FIRST}.get(code, code)
