"""Answers that say who wrote them: a battle whose answer names a roster model, its provider or its family,
or a system prompt's persona, may have told the voter which side is which, so its vote is not anonymous.
FastChat drops such battles from its anonymous leaderboard (``fastchat/serve/monitor/clean_battle_data.py``,
``identity_words``); preflab keeps the vote and leaves it out of the battle leaderboard by default, counted.

:func:`identity_words` builds the list from the roster (every model's name, the model id of its spec, the
provider's and family's names, the persona of its system prompt) plus the words the roster's ``[arena]``
table adds; :func:`said_identity` finds them in a text as whole words, ignoring case.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from answering.model_specs import ModelSpec
from llm.providers.base import parse_spec

#: Names an answer uses for the company behind a provider, by spec provider.
PROVIDER_WORDS: dict[str, tuple[str, ...]] = {
    "openai": ("OpenAI", "ChatGPT", "GPT"),
    "anthropic": ("Anthropic", "Claude"),
}
#: Model families by the leading letters of a model id, and the words that name them or their maker.
FAMILY_WORDS: dict[str, tuple[str, ...]] = {
    "gpt": ("GPT", "ChatGPT", "OpenAI"), "o": ("OpenAI",), "claude": ("Claude", "Anthropic"),
    "gemini": ("Gemini", "Google", "DeepMind"), "gemma": ("Gemma", "Google", "DeepMind"),
    "llama": ("Llama", "Meta AI"), "mistral": ("Mistral",), "mixtral": ("Mixtral", "Mistral"),
    "qwen": ("Qwen", "Alibaba"), "deepseek": ("DeepSeek",), "phi": ("Microsoft",), "smollm": ("SmolLM", "Hugging Face"),
    "grok": ("Grok", "xAI"), "command": ("Cohere",), "yi": ("01.AI",),
}
_PERSONA = re.compile(r"\byou are (?:an? |the )?([\w' -]{2,40}?)(?:[.,;:!\n]| who | that | and |$)", re.I)


def family(model_id: str) -> str:
    """The family of a model id: its leading letters, lower-cased (``gpt-4o-mini`` -> ``gpt``, ``SmolLM2`` ->
    ``smollm``); '' when it starts with none."""
    m = re.match(r"[A-Za-z]+", model_id.rsplit("/", 1)[-1])
    return m.group(0).lower() if m else ""


def persona(system: str | None) -> str | None:
    """The persona a system prompt gives the model (``"You are a pirate."`` -> ``pirate``), or None."""
    m = _PERSONA.search(system or "")
    if not m:
        return None
    words = [w for w in m.group(1).split() if w.lower() not in ("a", "an", "the", "helpful", "friendly", "assistant",
                                                                 "ai", "concise", "brief", "expert", "an")]
    return " ".join(words) or None


def identity_words(roster: Sequence[ModelSpec], extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The words that reveal a roster model: names, model ids, provider and family names, personas, and
    ``extra`` (the roster's ``[arena] identity_words``); distinct, longest first."""
    words: set[str] = {w.strip() for w in extra if w.strip()}
    for spec in roster:
        s = parse_spec(spec.spec.split(";")[0])
        words |= {spec.name, s.model, *PROVIDER_WORDS.get(s.provider, ()), *FAMILY_WORDS.get(family(s.model), ())}
        if len(fam := family(s.model)) >= 3:
            words.add(fam)
        if p := persona(spec.system):
            words.add(p)
    distinct: dict[str, str] = {}
    for w in sorted(words):  # one spelling per word: capitals first ("Claude" before "claude")
        if len(w) >= 2:
            distinct.setdefault(w.lower(), w)
    return tuple(sorted(distinct.values(), key=lambda w: (-len(w), w.lower())))


def _pattern(word: str) -> str:
    """``word`` as a whole word, or its plural or possessive: not inside a longer run of letters; a word
    ending in a letter may be followed by a version (``Claude3``, ``gpt4``)."""
    body = r"[\s_-]*".join(re.escape(part) for part in re.split(r"[\s_-]+", word))
    after = r"(?![^\W\d_])" if word[-1:].isalpha() else r"(?!\w)"
    return rf"(?<!\w){body}(?:'?s)?{after}"


def said_identity(text: str, words: Sequence[str]) -> list[str]:
    """The ``words`` that ``text`` says (case-insensitive, whole words; spaces, hyphens and underscores inside a
    word are interchangeable), in the order of ``words``."""
    return [w for w in words if re.search(_pattern(w), text, re.I)]
