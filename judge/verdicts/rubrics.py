"""Pairwise judge rubrics whose prompt ends so that the next generated token is the verdict.

Built-ins: ``ab`` (A or B), ``abt`` (A, B or C = tie; MT-bench style, Zheng et al. 2023), ``arena5``
(Arena-Hard's five levels A>>B ... B>>A, Li et al. 2024, asked as one digit so its probability is
readable from one token), ``concise`` (which answer is more concise while complete), and ``alpaca``
(AlpacaEval's ``m``/``M`` labels). Any of them takes an optional reference answer. Custom rubrics load
from a TOML file with the same fields.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from preflab.errors import InputError
from preflab.io import read_text

_PAIR = """[User question]
{prompt}
{reference_block}
[The start of Assistant A's answer]
{answer_a}
[The end of Assistant A's answer]

[The start of Assistant B's answer]
{answer_b}
[The end of Assistant B's answer]
"""

_SYSTEM = ("You are an impartial judge. Compare the two AI assistants' answers to the user question below. "
           "Do not let the order in which the answers appear, their length, or the assistants' names "
           "influence you. ")


@dataclass(frozen=True)
class Rubric:
    """A pairwise rubric: the messages to send and the label tokens that can follow them.

    ``labels`` maps each verdict token to an outcome (``A``, ``B`` or ``tie``); ``text_labels`` adds
    forms accepted only when parsing written verdicts (``[[A>>B]]``).
    """

    name: str
    version: str
    system: str
    instruction: str
    labels: dict[str, str]
    text_labels: dict[str, str] = field(default_factory=dict)
    case_sensitive: bool = False
    answer_prefix: str = "Verdict:"
    verdict_marker: str | None = None  # where a reason-first judge states its verdict ("Final verdict:")
    max_tokens: int | None = None  # room to reason first (default: 3 tokens for a one-token verdict)

    @property
    def outcomes(self) -> list[str]:
        """Distinct outcomes in label order (``["A", "B"]`` or ``["A", "B", "tie"]``)."""
        return list(dict.fromkeys(self.labels.values()))

    @property
    def all_labels(self) -> dict[str, str]:
        """Logprob labels plus text-only labels, for the text parser."""
        return {**self.labels, **self.text_labels}

    @property
    def fingerprint(self) -> str:
        """Name, version and a hash of the full text: part of every cache key."""
        h = hashlib.sha256(repr((self.system, self.instruction, sorted(self.labels.items()))).encode())
        return f"{self.name}@{self.version}:{h.hexdigest()[:12]}"

    def messages(self, prompt: str, answer_a: str, answer_b: str, reference: str | None = None) -> list[dict]:
        """Chat messages for one ordered pair; the last user line asks for the verdict token alone."""
        ref = f"\n[Reference answer]\n{reference}\n[End of reference answer]\n" if reference else ""
        body = _PAIR.format(prompt=prompt, answer_a=answer_a, answer_b=answer_b, reference_block=ref)
        return [{"role": "system", "content": self.system},
                {"role": "user", "content": f"{body}\n{self.instruction}"}]

    def completion_prompt(self, prompt: str, answer_a: str, answer_b: str, reference: str | None = None) -> str:
        """A plain-text prompt for base models on ``/v1/completions``, ending right before the verdict."""
        msgs = self.messages(prompt, answer_a, answer_b, reference)
        return f"{msgs[0]['content']}\n\n{msgs[1]['content']}\n\n{self.answer_prefix}"


_ONE_TOKEN = "Answer with the single letter only, no explanation."
_BETTER = _SYSTEM + "Decide which answer is better: more helpful, correct and relevant."
_WITH_TIE = {"A": "A", "B": "B", "C": "tie", "tie": "tie"}  # C names a tie; a written "tie" is one too
BUILTIN: dict[str, Rubric] = {
    "ab": Rubric(
        "ab", "1", _BETTER,
        "Which answer is better? Reply \"A\" if Assistant A's answer is better or \"B\" if Assistant B's. "
        + _ONE_TOKEN,
        {"A": "A", "B": "B"},
    ),
    "abt": Rubric(
        "abt", "1", _BETTER,
        "Which answer is better? Reply \"A\" if Assistant A's answer is better, \"B\" if Assistant B's, "
        f"or \"C\" for a tie. {_ONE_TOKEN}",
        _WITH_TIE,
    ),
    "arena5": Rubric(
        "arena5", "1", _SYSTEM + "Judge helpfulness, correctness, relevance and conciseness.",
        "Give your verdict as one digit: 1 = Assistant A is significantly better (A>>B), 2 = A is slightly "
        "better (A>B), 3 = tie, relatively the same (A=B), 4 = B is slightly better (B>A), 5 = B is "
        "significantly better (B>>A). Answer with the digit only.",
        {"1": "A", "2": "A", "3": "tie", "4": "B", "5": "B"},
        text_labels={"A>>B": "A", "A>B": "A", "A=B": "tie", "B>A": "B", "B>>A": "B"},
    ),
    "concise": Rubric(
        "concise", "1", _SYSTEM + "Judge conciseness: the better answer fully answers the question "
        "with no padding, repetition or unrequested detail. A shorter answer that misses part of the "
        "question is not more concise, it is incomplete.",
        "Which answer is more concise while still complete? Reply \"A\", \"B\", or \"C\" if they are "
        f"equally concise. {_ONE_TOKEN}",
        _WITH_TIE,
    ),
    "reason": Rubric(
        "reason", "1", _BETTER,
        "Compare the two answers in one or two sentences, then give your final verdict on the last line "
        "exactly as \"Final verdict: [[A]]\" if Assistant A's answer is better, \"Final verdict: [[B]]\" if "
        "Assistant B's is, or \"Final verdict: [[C]]\" for a tie.",
        {"A": "A", "B": "B", "C": "tie"}, verdict_marker="Final verdict:", max_tokens=256,
    ),
    "alpaca": Rubric(
        "alpaca", "1", "You are a helpful assistant that orders models according to the quality of their output.",
        "Which answer is better? Reply \"m\" if Assistant A's answer (the first) is better and \"M\" if "
        "Assistant B's answer (the second) is. Answer with the single letter only.",
        {"m": "A", "M": "B"}, case_sensitive=True,
    ),
}


class RubricError(InputError):
    """A rubric name or file that cannot be used; the message says what to fix (an input error: exit 2)."""

    def __init__(self, message: str, source: str = "<rubric>") -> None:
        ValueError.__init__(self, message)
        self.source, self.line, self.field, self.problem, self.hint = source, None, None, message, ""


def load_rubric(name_or_path: str | Path) -> Rubric:
    """A built-in rubric by name, or a TOML file with ``name, version, system, instruction, [labels]``."""
    key = str(name_or_path)
    if key in BUILTIN:
        return BUILTIN[key]
    path = Path(key)
    if not path.is_file():
        raise RubricError(f"unknown rubric {key!r}: use one of {sorted(BUILTIN)} or a path to a .toml file")
    try:
        data = tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as e:
        raise RubricError(f"{path}: not valid TOML ({e})") from None
    for key_ in ("name", "version", "instruction", "labels"):
        if key_ not in data:
            raise RubricError(f"{path}: field {key_!r} is missing; a rubric needs name, version, instruction, labels")
    if not isinstance(data["labels"], dict):
        raise RubricError(f"{path}: field 'labels' must be a table of label = \"A\" | \"B\" | \"tie\"", str(path))
    labels = {str(k): str(v) for k, v in data["labels"].items()}
    bad = sorted(set(labels.values()) - {"A", "B", "tie"})
    if bad:
        raise RubricError(f"{path}: field 'labels' maps to {bad}; each label must map to A, B or tie")
    return Rubric(str(data["name"]), str(data["version"]), str(data.get("system", _SYSTEM)),
                  str(data["instruction"]), labels, {str(k): str(v) for k, v in data.get("text_labels", {}).items()},
                  bool(data.get("case_sensitive", False)), verdict_marker=data.get("verdict_marker"),
                  max_tokens=int(data["max_tokens"]) if data.get("max_tokens") else None)
