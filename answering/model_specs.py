"""Models to generate answers with: one spec each (provider, display name, system prompt, sampling settings),
given on the command line or in a roster TOML file, and the prompts file they answer.

A command-line spec is a provider spec with optional ``;key=value`` settings::

    local:http://127.0.0.1:8080/v1#smollm2;name=pirate;system=Talk like a pirate.;temperature=0.7

A roster file holds one ``[[model]]`` table per model, with the same keys and ``spec`` for the provider::

    [[model]]
    name = "pirate"
    spec = "local:http://127.0.0.1:8080/v1#smollm2"
    system = "Talk like a pirate."
    temperature = 0.7
    max_tokens = 256

The display name (the ``model`` column of every output) is by default the spec's model name
(``local:http://127.0.0.1:8080/v1#smollm2`` -> ``smollm2``); two "versions" can be one server with two
system prompts under two names. API keys never appear here: they come from the environment.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from llm.providers.base import parse_spec
from llm.providers.generation import GenerationRequest, unsupported_settings
from preflab.errors import InputError
from preflab.io import iter_jsonl, read_csv, read_parquet, require_rows

#: Longest prompt accepted (characters); the vote store keeps no longer text either.
MAX_PROMPT_CHARS = 100_000
SPEC_KEYS = ("name", "system", "max_tokens", "temperature", "top_p", "seed", "weight", "timeout")
_NUMBERS = {"max_tokens": int, "seed": int, "temperature": float, "top_p": float, "weight": float, "timeout": float}


@dataclass(frozen=True)
class ModelSpec:
    """One model to answer with: ``spec`` is the provider spec (``openai:MODEL``, ``anthropic:MODEL``,
    ``local:URL#MODEL``); unset sampling settings are not sent (the provider's default applies)."""

    name: str
    spec: str
    system: str | None = None
    max_tokens: int = 512
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    weight: float = 1.0
    timeout: float = 60.0

    @property
    def provider(self) -> str:
        return parse_spec(self.spec).provider

    def request(self, turns: Sequence[dict]) -> GenerationRequest:
        """The request answering a conversation (``[{"role": "user"|"assistant", "content"}]``), system first."""
        system = ({"role": "system", "content": self.system},) if self.system else ()
        return GenerationRequest(system + tuple(turns), self.max_tokens, self.temperature, self.top_p, self.seed)

    def settings(self) -> dict:
        """Everything that shaped the answers, for the output rows."""
        return asdict(self)


def _check(spec: ModelSpec, source: str, line: int | None) -> ModelSpec:
    try:
        parsed = parse_spec(spec.spec)
    except ValueError as e:
        raise InputError(source, line, "spec", str(e), "see `preflab generate --help`") from None
    if parsed.completions:
        raise InputError(source, line, "spec", "answers are generated on /chat/completions, not /completions",
                         "use local:URL#MODEL, not local+completions:")
    if not spec.name.strip():
        raise InputError(source, line, "name", "empty display name", "give name=NAME")
    if spec.max_tokens < 1:
        raise InputError(source, line, "max_tokens", f"{spec.max_tokens} (must be at least 1)", "give max_tokens=N")
    if spec.timeout <= 0 or spec.weight <= 0:
        field = "timeout" if spec.timeout <= 0 else "weight"
        raise InputError(source, line, field, "must be positive", f"give {field}=a positive number")
    if bad := unsupported_settings(spec.provider, spec.request(())):
        raise InputError(source, line, bad[0], "the Anthropic API (version 2026-10-21) takes no sampling settings",
                         f"drop {', '.join(bad)} from this model")
    return spec


def _typed(key: str, value: object, source: str, line: int | None) -> object:
    if key not in SPEC_KEYS and key != "spec":
        raise InputError(source, line, key, "unknown setting", f"use one of {', '.join(SPEC_KEYS)}")
    kind = _NUMBERS.get(key)
    if kind is None:
        if not isinstance(value, str):
            raise InputError(source, line, key, f"expected text, got {value!r}", "quote the value")
        return value
    try:
        if isinstance(value, bool) or (kind is int and isinstance(value, float)):
            raise ValueError
        return kind(value)
    except (TypeError, ValueError):
        raise InputError(source, line, key, f"{value!r} is not a number", f"give {key}=a number") from None


def default_name(spec: str) -> str:
    """The display name a provider spec gets by default: its model name."""
    return parse_spec(spec).model


def parse_model_spec(text: str, source: str = "--model") -> ModelSpec:
    """A command-line model spec: ``PROVIDER_SPEC[;key=value...]`` (keys: :data:`SPEC_KEYS`)."""
    provider, *settings = text.split(";")
    fields: dict = {}
    for item in settings:
        key, eq, value = item.partition("=")
        if not eq:
            raise InputError(source, None, key.strip() or "spec", f"{item!r} is not key=value",
                             f"write settings as ;key=value (keys: {', '.join(SPEC_KEYS)})")
        fields[key.strip()] = _typed(key.strip(), value, source, None)
    try:
        name = fields.pop("name", None) or default_name(provider.strip())
    except ValueError as e:
        raise InputError(source, None, "spec", str(e), "see `preflab generate --help`") from None
    return _check(ModelSpec(name=name, spec=provider.strip(), **fields), source, None)


def load_roster(path: str | Path) -> list[ModelSpec]:
    """Read a roster TOML file (``[[model]]`` tables, see the module docstring)."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(source, None, None, f"cannot read the roster ({e})", "check the path") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise InputError(source, int(m.group(1)) if m else None, None, f"not valid TOML ({e})",
                         "fix the TOML syntax") from None
    tables = doc.get("model")
    if not isinstance(tables, list) or not tables:
        raise InputError(source, None, "model", "no [[model]] tables", "give one [[model]] table per model")
    starts = [n for n, ln in enumerate(text.splitlines(), 1) if ln.strip().startswith("[[model]]")]
    specs = []
    for i, table in enumerate(tables):
        line = starts[i] if i < len(starts) else None
        if "spec" not in table:
            raise InputError(source, line, "spec", "missing", "give spec = \"local:URL#MODEL\" (or openai:/anthropic:)")
        fields = {k: _typed(k, v, source, line) for k, v in table.items()}
        spec = str(fields.pop("spec"))
        try:
            fields.setdefault("name", default_name(spec))
        except ValueError as e:
            raise InputError(source, line, "spec", str(e), "see `preflab generate --help`") from None
        specs.append(_check(ModelSpec(spec=spec, **fields), source, line))
    return unique_names(specs, source)


def unique_names(specs: list[ModelSpec], source: str = "--model") -> list[ModelSpec]:
    """The specs, refused when two share a display name (their answers would be mixed up)."""
    seen: set[str] = set()
    for s in specs:
        if s.name in seen:
            raise InputError(source, None, "name", f"two models are named {s.name!r}",
                             "give each model its own name=... (e.g. the same server with two system prompts)")
        seen.add(s.name)
    return specs


def _read_prompt_rows(path: Path) -> pd.DataFrame:
    """The prompts file as a table with each row's file ``line`` (JSONL, CSV with a header, Parquet)."""
    name = path.name.lower().removesuffix(".gz")
    if name.endswith(".jsonl"):
        return pd.DataFrame([{**rec, "line": n} for n, rec in iter_jsonl(path, "write one JSON object per line")])
    if name.endswith(".csv"):
        df = read_csv(path, dtype=str, keep_default_na=False)
        df["line"] = range(2, len(df) + 2)
        return df
    if name.endswith((".parquet", ".pq")):
        df = read_parquet(path)
        df["line"] = range(1, len(df) + 1)
        return df
    raise InputError(str(path), None, None, "unknown prompts format", "give a .jsonl, .csv or .parquet file")


def _check_prompt(item: object, prompt: object, source: str, line: int) -> None:
    """One row's item_id (a text or integer id) and prompt (non-empty text, at most MAX_PROMPT_CHARS)."""
    for col, value in (("item_id", item), ("prompt", prompt)):
        if value is None or (isinstance(value, float) and value != value):
            raise InputError(source, line, col, "missing", "give every row an item_id and a prompt")
    if not isinstance(item, str | int) or isinstance(item, bool) or not str(item).strip():
        raise InputError(source, line, "item_id", f"{item!r} is not an id", "give every prompt a text id")
    if not isinstance(prompt, str) or not prompt.strip():
        raise InputError(source, line, "prompt", "empty" if isinstance(prompt, str) else f"{prompt!r} is not text",
                         "give every row a prompt")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise InputError(source, line, "prompt", f"{len(prompt)} characters (at most {MAX_PROMPT_CHARS})",
                         "shorten the prompt")


def load_prompts(path: str | Path) -> pd.DataFrame:
    """Prompts (JSONL, CSV or Parquet): ``item_id, prompt[, category]``, one row each, with its ``line``."""
    path = Path(path)
    source = str(path)
    df = _read_prompt_rows(path)
    require_rows(len(df), source, "prompts", "give one row per prompt: item_id, prompt[, category]")
    for col in ("item_id", "prompt"):
        if col not in df:
            raise InputError(source, None, col, "missing column", "give columns item_id, prompt (optional category)")
    if "category" not in df:
        df["category"] = None
    seen: dict[str, int] = {}
    for row in df.itertuples(index=False):
        item, line = row.item_id, int(row.line)
        _check_prompt(item, row.prompt, source, line)
        if str(item) in seen:
            raise InputError(source, line, "item_id", f"duplicate {str(item)!r} (first on line {seen[str(item)]})",
                             "give each prompt its own item_id")
        seen[str(item)] = line
    df["item_id"] = df["item_id"].astype(str).str.strip()
    df["category"] = df["category"].map(lambda c: c if isinstance(c, str) and c.strip() else None)
    return df[["item_id", "prompt", "category", "line"]].reset_index(drop=True)
