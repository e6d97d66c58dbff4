"""How long an answer is, in words: one count for the vote page's length label and the A/B gate's length
check, so "longer" means the same thing to a voter and to ``preflab compare``."""

from __future__ import annotations

import re

_WORD = re.compile(r"\S*\w\S*")


def word_count(text: str) -> int:
    """Words in an answer, as a reader counts them: runs of non-space characters holding a letter or digit
    (Markdown's ``|``, ``---`` and ``>`` are not words; ``**bold**`` and ``50.0`` are one each). No tokenizer:
    the same for every model."""
    return len(_WORD.findall(text))
