"""The shape of one hand-written demo prompt and its answer material (see make_demo.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    """One prompt with the material every fictional model composes its answer from.

    ``core`` is the correct answer in a sentence or two (for writing prompts: the piece itself);
    ``points`` are three ``"Title: text"`` supporting points; ``code``/``lang`` a code block where the
    answer needs one; ``gist`` a one-line summary (defaults to ``core``). ``wrong`` (a wrong core) or
    ``wrong_code`` (buggy code) is what comet-sloppy answers instead, and ``flaw`` says what is wrong.
    """

    category: str
    prompt: str
    core: str
    points: tuple[str, str, str]
    code: str | None = None
    lang: str | None = None
    gist: str | None = None
    wrong: str | None = None
    wrong_code: str | None = None
    flaw: str | None = None

    @property
    def summary(self) -> str:
        return self.gist or self.core

    @property
    def sloppy_is_wrong(self) -> bool:
        return self.wrong is not None or self.wrong_code is not None
