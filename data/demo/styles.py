"""The five fictional demo models: each composes its answer from an :class:`Entry` in a fixed style.

The differences are systematic, so a judge (or a style-controlled leaderboard) can be checked against them:

- ``atlas-terse``: the core answer only (plus the code), short and correct;
- ``beacon-verbose``: correct but long, heavy markdown (headers, bullet lists, bold), generic extra advice;
- ``comet-sloppy``: medium length, unformatted; wrong where the entry has ``wrong``/``wrong_code``;
- ``delta-padded``: the correct core wrapped in filler and repeated twice more;
- ``ember-balanced``: correct core, code where needed, one short plain list.
"""

from __future__ import annotations

from collections.abc import Callable

from content_schema import Entry

Style = Callable[[Entry, int], str]

# Generic extra advice beacon-verbose appends (two per answer, picked by item index).
BEACON_EXTRAS: dict[str, tuple[str, ...]] = {
    "facts": ("Sources: For anything that may change, check a current reference work.",
              "Context: Facts like this are easier to remember when you know the story behind them.",
              "Precision: Rounded figures are fine for everyday use; quote exact values in formal work.",
              "Curiosity: Related questions often lead to surprising further facts."),
    "how-to": ("Safety: Take your time and stop if anything seems wrong.",
               "Practice: The first attempt is the slowest; it gets easier each time.",
               "Preparation: Gather what you need before you start.",
               "Help: When in doubt, ask someone who has done it before."),
    "coding": ("Testing: Write a few unit tests, including edge cases such as empty input.",
               "Readability: Clear names and a short docstring help the next reader.",
               "Performance: Measure before optimising; the simple version is often fast enough.",
               "Types: Type hints catch mistakes early and document intent."),
    "writing": ("Audience: Adjust the tone to the people who will read it.",
                "Revision: Reading the text aloud reveals clumsy rhythm.",
                "Brevity: Cut every word that does not earn its place.",
                "Voice: A consistent voice makes the piece feel finished."),
    "reasoning": ("Checking: Plug the answer back into the question to confirm it.",
                  "Intuition: Quick answers to puzzles like this are often traps.",
                  "Structure: Writing the facts down one by one avoids confusion.",
                  "Generalising: The same method works for similar puzzles."),
}
EMBER_LEADS = {"facts": "Some context:", "how-to": "A few tips:", "coding": "How it works:",
               "writing": "Why it works:", "reasoning": "Why:"}
COMET_OPENERS = ("Sure.", "Ok so.", "Quick answer:", "Right.", "Basically:")
COMET_CONFIDENT = ("I'm pretty sure about this one.", "This is the standard answer you'll find most places.",
                   "That's the usual way to think about it.", "Should be right, it's a common question.")
DELTA_OPENINGS = (
    "Great question! This is something a lot of people wonder about, and it is well worth taking a "
    "moment to look at it carefully and thoroughly.",
    "Thank you for asking this. It is a really interesting and important question, and I am more than "
    "happy to help you with it.",
    "That is an excellent question, and it comes up more often than you might think. Let me walk you "
    "through it step by step.",
)
DELTA_CLOSINGS = (
    "I hope this helps! Please feel free to ask if you have any other questions at all.",
    "I hope this answer was helpful to you. Do not hesitate to reach out if anything is unclear or if "
    "you would like more detail.",
    "Let me know if there is anything else I can help you with. I am always happy to help!",
)


def split_point(point: str) -> tuple[str, str]:
    """``"Title: text"`` -> ``("Title", "text")``."""
    title, _, text = point.partition(": ")
    return title, text


def code_block(entry: Entry, code: str) -> str:
    """A fenced markdown code block in the entry's language."""
    return f"```{entry.lang}\n{code}\n```"


def summary_sentence(entry: Entry) -> str:
    """One sentence that restates the answer (writing prompts describe the piece instead of repeating it)."""
    return f"This is {entry.summary}" if entry.category == "writing" else entry.summary


def _body(entry: Entry, code: str | None) -> list[str]:
    """Core then code, except coding answers, which lead with the code."""
    if code is None:
        return [entry.core]
    return [code_block(entry, code), entry.core] if entry.category == "coding" else [entry.core,
                                                                                     code_block(entry, code)]


def atlas_terse(entry: Entry, index: int) -> str:
    """Short and correct: the core (and code), nothing else."""
    return "\n\n".join(_body(entry, entry.code))


def beacon_verbose(entry: Entry, index: int) -> str:
    """Correct but long: four or five headers, bold bullet lists, generic advice and a bold bottom line."""
    bullets = "\n".join(
        (f"{k}. " if entry.category == "how-to" else "- ") + "**{}:** {}".format(*split_point(p))
        for k, p in enumerate(entry.points, start=1))
    extras = BEACON_EXTRAS[entry.category]
    extra = "\n".join("- **{}:** {}".format(*split_point(extras[(index + k) % len(extras)])) for k in (0, 1))
    if entry.category == "coding":
        head = ["## Solution", code_block(entry, entry.code or ""), "## How it works", entry.core]
    elif entry.category == "writing":
        head = ["## Your text", entry.core, "## Why it works"]
    else:
        head = ["## Overview", entry.core]
        if entry.code:
            head += ["## Example", code_block(entry, entry.code)]
        head.append("## Tips, in order" if entry.category == "how-to" else "## Key points")
    return "\n\n".join([*head, bullets, "## Things to keep in mind", extra,
                        "## Summary", f"**Bottom line:** {summary_sentence(entry)}"])


def comet_sloppy(entry: Entry, index: int) -> str:
    """Medium length, no formatting; confidently wrong (or buggy) where the entry says so."""
    opener = COMET_OPENERS[index % len(COMET_OPENERS)]
    confident = " ".join(COMET_CONFIDENT[(index + k) % len(COMET_CONFIDENT)] for k in (0, 1))
    if entry.category == "coding":
        code = entry.wrong_code or entry.code or ""
        tail = confident if entry.wrong_code else f"{entry.core} {split_point(entry.points[0])[1]}"
        return f"{opener} Here's a quick version:\n\n{code_block(entry, code)}\n\n{tail}"
    if entry.category == "writing":
        return f"{opener} Here you go:\n\n{entry.wrong or entry.core}\n\nI kept it fairly simple, hope that works."
    if entry.wrong:
        return f"{opener} {entry.wrong} {confident}"
    details = " ".join(split_point(p)[1] for p in entry.points[:2])
    code = f"\n\n{code_block(entry, entry.code)}" if entry.code else ""
    return f"{opener} {entry.core} {details}{code}"


def delta_padded(entry: Entry, index: int) -> str:
    """The correct core wrapped in an opening filler, restated twice, and a closing filler."""
    summary = summary_sentence(entry)
    details = " ".join(split_point(p)[1] for p in entry.points)
    return "\n\n".join([
        DELTA_OPENINGS[index % len(DELTA_OPENINGS)],
        *_body(entry, entry.code),
        f"To put it another way: {summary} {details}",
        f"So, to repeat the main point once more: {summary} That is really the key thing to remember here.",
        DELTA_CLOSINGS[index % len(DELTA_CLOSINGS)],
    ])


def ember_balanced(entry: Entry, index: int) -> str:
    """Good and moderately formatted: the core, code where needed, one short plain list."""
    bullets = "\n".join("- {}: {}".format(*split_point(p)) for p in entry.points)
    return "\n\n".join([*_body(entry, entry.code), EMBER_LEADS[entry.category], bullets])


MODELS: dict[str, Style] = {
    "atlas-terse": atlas_terse,
    "beacon-verbose": beacon_verbose,
    "comet-sloppy": comet_sloppy,
    "delta-padded": delta_padded,
    "ember-balanced": ember_balanced,
}
"""Model name -> style function, in the fixed order every output file uses."""


def is_correct(model: str, entry: Entry) -> bool:
    """Only comet-sloppy is ever wrong, and only on entries that carry wrong material."""
    return not (model == "comet-sloppy" and entry.sloppy_is_wrong)
