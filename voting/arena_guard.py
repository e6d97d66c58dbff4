"""What keeps an open Battle page from being abused: the arena's settings (limits, prices, identity words),
the claim of a battle turn, and its cost.

:func:`claim_turn` starts a battle, or the next turn of one, in one write transaction (SQLite's
``BEGIN IMMEDIATE``; a PostgreSQL transaction lock): it checks the voter's and the client address's prompts in
the last minute (every turn counts, follow-ups included), the conversation's turns and length, and the
arena's spend so far; then it stores the battle (or marks it ``answering``), counts the turn, and reserves
its cost. Concurrent Sends therefore cannot pass one count together, and concurrent battles cannot spend
past a cap. :func:`settle_turn` replaces the reservation with what the answers' reported tokens cost.

A reservation is the most a turn can cost: each side's input at one token per UTF-8 byte of its messages
(a byte-level BPE token is at least one byte) plus 4 per message, and its capped ``max_tokens`` of output,
at the model's price (the roster's ``[arena.prices]``, else :func:`llm.calls.spend.spec_price`; a local server
costs nothing). A model with no known price has no dollar figure: it is stated at start and on the
Leaderboard page, and its tokens count against ``tokens_per_day``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import secrets
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from answering.model_specs import ModelSpec
from llm.prices import Price
from llm.providers.generation import Generation
from voting.battles import ArenaLimits, load_battle, new_battle_row
from voting.engine import retry, writing
from voting.limits import address_key
from voting.tables import battles_t, spend_t
from voting.writes import VoteChecks, VoteRefused, check_rate, serialise

#: Environment overrides of the ``[arena]`` table, by field of :class:`ArenaLimits`.
ENV = {"max_prompt_chars": "PREFLAB_ARENA_MAX_PROMPT", "battles_per_minute": "PREFLAB_ARENA_PER_MINUTE",
       "max_tokens": "PREFLAB_ARENA_MAX_TOKENS", "per_address_per_minute": "PREFLAB_ARENA_PER_ADDRESS",
       "max_turns": "PREFLAB_ARENA_MAX_TURNS", "max_conversation_chars": "PREFLAB_ARENA_MAX_CONVERSATION",
       "usd_per_day": "PREFLAB_ARENA_USD_PER_DAY", "usd_total": "PREFLAB_ARENA_USD_TOTAL",
       "tokens_per_day": "PREFLAB_ARENA_TOKENS_PER_DAY"}


class ArenaRefused(Exception):
    """A turn not started; ``reason``: "voter" or "address" (prompts a minute), "turns" or "length" (the
    conversation), "day", "total" or "tokens" (the spend caps), "state" (the battle was voted or left)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class ArenaSettings:
    """The arena's limits, the prices by roster model name (None: unknown) and the identity words added by
    the roster."""

    limits: ArenaLimits = ArenaLimits()
    prices: Mapping[str, Price | None] = field(default_factory=dict)
    identity_words: tuple[str, ...] = ()


def _number(value: object, name: str, source: str) -> float | int | None:
    from preflab.errors import InputError

    kind = next(f.type for f in fields(ArenaLimits) if f.name == name)
    try:
        out = float(value) if "float" in str(kind) else int(str(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        out = math.nan
    if not math.isfinite(out) or out < 0:
        raise InputError(source, None, name, f"{value!r} is not a non-negative number", f"give {name} = a number")
    return out


def arena_settings(path: str, roster: Sequence[ModelSpec], env: Mapping[str, str] | None = None) -> ArenaSettings:
    """The roster TOML's optional ``[arena]`` table (limits by :class:`ArenaLimits` field name,
    ``identity_words = [...]``, ``[arena.prices]`` "model name" = {in = USD, out = USD} per 1M tokens), with
    the ``PREFLAB_ARENA_*`` environment variables (:data:`ENV`) taking precedence."""
    from llm.calls.spend import spec_price
    from preflab.errors import InputError

    env = os.environ if env is None else env
    table = tomllib.loads(Path(path).read_text(encoding="utf-8")).get("arena", {})
    values = {}
    for f in fields(ArenaLimits):
        raw = env.get(ENV[f.name]) or table.get(f.name)
        if raw is not None and raw != "":
            values[f.name] = _number(raw, f.name, ENV[f.name] if env.get(ENV[f.name]) else path)
    prices: dict[str, Price | None] = {m.name: spec_price(m.spec) for m in roster}
    for name, p in (table.get("prices") or {}).items():
        if name not in prices or not isinstance(p, dict) or not {"in", "out"} <= set(p):
            raise InputError(path, None, "arena.prices", f"{name!r}: not a roster model with in and out prices",
                             'give "model name" = {in = USD, out = USD} per 1M tokens')
        prices[name] = Price(_number(p["in"], "usd_total", path), _number(p["out"], "usd_total", path), path)
    words = table.get("identity_words") or []
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        raise InputError(path, None, "arena.identity_words", "not a list of strings", 'give ["word", ...]')
    return ArenaSettings(replace(ArenaLimits(), **values), prices, tuple(words))


def unpriced(settings: ArenaSettings) -> list[str]:
    """Roster models whose price is unknown (their cost is not counted in dollars)."""
    return sorted(name for name, p in settings.prices.items() if p is None)


def _side_tokens(spec: ModelSpec, conversation: list[dict], limits: ArenaLimits) -> tuple[int, int]:
    """(input, output) tokens a side's next answer can take at most."""
    messages = spec.request(conversation).messages
    return (sum(len(m["content"].encode()) + 4 for m in messages), min(spec.max_tokens, limits.max_tokens))


def turn_cost(specs: Mapping[str, ModelSpec], conversations: Mapping[str, list[dict]], settings: ArenaSettings
              ) -> tuple[float | None, int]:
    """(USD, tokens) a turn can cost at most; USD None when a side's price is unknown."""
    usd: float | None = 0.0
    tokens = 0
    for side, spec in specs.items():
        t_in, t_out = _side_tokens(spec, conversations[side], settings.limits)
        tokens += t_in + t_out
        price = settings.prices.get(spec.name)
        usd = None if usd is None or price is None else usd + price.cost(t_in, t_out)
    return usd, tokens


def _today(now: float) -> str:
    return dt.datetime.fromtimestamp(now, dt.UTC).date().isoformat()


def _totals(conn: sa.Connection, now: float) -> dict:
    """USD and tokens reserved or spent today (UTC) and in all, the turns, and those with no dollar figure."""
    s = spend_t.c
    usd, tokens = sa.func.coalesce(sa.func.sum(s.usd), 0.0), sa.func.coalesce(sa.func.sum(s.tokens), 0)
    t_usd, t_tok = conn.execute(sa.select(usd, tokens).where(s.day == _today(now))).one()
    a_usd, a_tok, turns = conn.execute(sa.select(usd, tokens, sa.func.count())).one()
    unknown = conn.execute(sa.select(sa.func.count()).where(s.usd.is_(None))).scalar_one()
    return {"usd_today": float(t_usd), "tokens_today": int(t_tok), "usd_total": float(a_usd),
            "tokens_total": int(a_tok), "turns": int(turns), "unpriced_turns": int(unknown)}


def _check_spend(conn: sa.Connection, usd: float | None, tokens: int, limits: ArenaLimits, now: float) -> None:
    t = _totals(conn, now)
    if limits.tokens_per_day is not None and t["tokens_today"] + tokens > limits.tokens_per_day:
        raise ArenaRefused("tokens", f"{t['tokens_today']:,} tokens today; the cap is {limits.tokens_per_day:,}")
    if usd is None:
        return
    if limits.usd_total is not None and t["usd_total"] + usd > limits.usd_total:
        raise ArenaRefused("total", f"${t['usd_total']:.4f} spent in all; the cap is ${limits.usd_total:g}")
    if limits.usd_per_day is not None and t["usd_today"] + usd > limits.usd_per_day:
        raise ArenaRefused("day", f"${t['usd_today']:.4f} spent today; the cap is ${limits.usd_per_day:g}")


def _check_rate_keys(conn: sa.Connection, voter_key: str, address: str | None, limits: ArenaLimits,
                     now: float) -> None:
    rate = [(voter_key, limits.battles_per_minute)]
    if address is not None:
        rate.append((address_key("battle-address", address), limits.per_address_per_minute))
    try:
        check_rate(conn, VoteChecks(rate=tuple(rate)), now)
    except VoteRefused as e:
        reason = "voter" if str(e).startswith(voter_key + " ") else "address"
        raise ArenaRefused(reason, str(e)) from None


def _conversation_chars(conversations: Mapping[str, list[dict]]) -> int:
    """Characters of the longest conversation a side would be sent (system prompt aside)."""
    return max(sum(len(m["content"]) for m in conv) for conv in conversations.values())


def claim_turn(engine: Engine, voter: str, address: str | None, prompt: str, specs: Mapping[str, ModelSpec],
               settings: ArenaSettings, battle: dict | None = None,
               earlier: Mapping[str, list[dict]] | None = None) -> dict:
    """Start a battle of ``specs`` (a = shown as A) on ``prompt``, or with ``battle`` its next turn, when
    every limit allows it (else :class:`ArenaRefused`); returns the stored battle, ``answering``. ``earlier``
    (``{"a": [...], "b": [...]}``, a new battle only): the turns it carries as context (Regenerate), counted
    in its length and cost like a battle's own."""
    limits = settings.limits
    carried = {s: battle[f"conversation_{s}"] for s in "ab"} if battle else dict(earlier or {"a": [], "b": []})
    carried_turns = sum(m["role"] == "user" for m in carried["a"])
    done = battle["turns"] if battle else carried_turns  # the turns stored: a new battle's are those it carries
    turns = max(done, carried_turns)
    if turns >= limits.max_turns:  # a regenerated battle's carried turns count: Regenerate resets no count
        raise ArenaRefused("turns", f"the conversation has {turns} turns")
    convs = {s: list(carried[s]) + [{"role": "user", "content": prompt}] for s in "ab"}
    if (chars := _conversation_chars(convs)) > limits.max_conversation_chars:
        raise ArenaRefused("length", f"the conversation would be {chars:,} characters")
    usd, tokens = turn_cost(specs, convs, settings)
    bid = battle["id"] if battle else secrets.token_hex(12)

    def attempt() -> None:
        with writing(engine) as conn:
            serialise(conn, "arena-claim")  # PostgreSQL: one claim at a time (the spend caps are global)
            now = time.time()
            _check_rate_keys(conn, "battle-voter:" + voter, address, limits, now)
            _check_spend(conn, usd, tokens, limits, now)
            if battle is None:
                conn.execute(battles_t.insert().values(**new_battle_row(bid, voter, specs["a"].name, specs["b"].name,
                                                                        now, done)))
            elif not conn.execute(battles_t.update().where(
                    battles_t.c.id == bid, battles_t.c.status == "answered", battles_t.c.turns == battle["turns"])
                    .values(status="answering", updated_at=now)).rowcount:
                raise ArenaRefused("state", f"battle {bid} is no longer answered")
            conn.execute(spend_t.insert().values(battle_id=bid, turn=done + 1,
                                                 day=_today(now), usd=usd, tokens=tokens, at=now))

    retry(attempt)
    return load_battle(engine, bid)  # type: ignore[return-value]


def settle_turn(engine: Engine, battle_id: str, turn: int, specs: Mapping[str, ModelSpec],
                conversations: Mapping[str, list[dict]], results: Mapping[str, object],
                settings: ArenaSettings) -> None:
    """Replace a turn's reservation with what it cost: each side's reported tokens at its price; a side that
    failed or reported no tokens keeps its reservation (unknown is not 0)."""
    usd: float | None = 0.0
    tokens = 0
    for side, spec in specs.items():
        res = results.get(side)
        t_in, t_out = _side_tokens(spec, conversations[side], settings.limits)
        if isinstance(res, Generation) and res.tokens_in is not None and res.tokens_out is not None:
            t_in, t_out = int(res.tokens_in), int(res.tokens_out)
        tokens += t_in + t_out
        price = settings.prices.get(spec.name)
        usd = None if usd is None or price is None else usd + price.cost(t_in, t_out)

    def attempt() -> None:
        with writing(engine) as conn:
            conn.execute(spend_t.update().where(spend_t.c.battle_id == battle_id, spend_t.c.turn == turn)
                         .values(usd=usd, tokens=tokens, settled=True))

    retry(attempt)


def spend_summary(engine: Engine, now: float | None = None) -> dict:
    """USD and tokens reserved or spent today (UTC) and in all, the turns, and those with no dollar figure."""
    with engine.connect() as conn:
        return _totals(conn, time.time() if now is None else now)


def spend_lines(engine: Engine, settings: ArenaSettings) -> list[str]:
    """What the arena spent against its caps, and which models' cost is unknown (for the admin)."""
    s, lim = spend_summary(engine), settings.limits

    def cap(x: float | None) -> str:
        return f" of ${x:g}" if x is not None else " (no cap)"

    lines = [f"Arena spend: ${s['usd_today']:.4f} today{cap(lim.usd_per_day)}, ${s['usd_total']:.4f} in all"
             f"{cap(lim.usd_total)}; {s['tokens_today']:,} tokens today"
             + (f" of {lim.tokens_per_day:,}" if lim.tokens_per_day is not None else "")
             + f" ({s['turns']:,} turns, reserved before each turn and settled after)."]
    if names := unpriced(settings):
        lines.append(f"No known price for {', '.join(names)}: their {s['unpriced_turns']:,} turns have no dollar "
                     "figure and are not held by the dollar caps"
                     + (" (the token cap holds them)." if lim.tokens_per_day is not None else
                        "; set `[arena.prices]` in the roster or a token cap (`tokens_per_day`)."))
    return lines


def start_lines(settings: ArenaSettings) -> list[str]:
    """What ``preflab app --arena`` says at start: the limits in force, and a warning naming each model whose
    price is unknown."""
    lim = settings.limits

    def usd(x: float | None) -> str:
        return "no cap" if x is None else f"${x:g}"

    lines = [f"Battle limits: {lim.battles_per_minute} prompts a minute per voter, {lim.per_address_per_minute} per "
             f"client address; {lim.max_turns} turns and {lim.max_conversation_chars:,} characters per battle; "
             f"spend {usd(lim.usd_per_day)} a day, {usd(lim.usd_total)} in all"
             + (f", {lim.tokens_per_day:,} tokens a day" if lim.tokens_per_day is not None else "")]
    if names := unpriced(settings):
        lines.append(f"warning: no known price for {', '.join(names)}: their cost is not counted in dollars"
                     + ("; the token cap holds them" if lim.tokens_per_day is not None else
                        "; give [arena.prices] in the roster, or a token cap (tokens_per_day)"))
    return lines


def battle_identity(engine: Engine, ids: Sequence[str]) -> dict[str, list[str]]:
    """The identity words each of these battles' answers said (battles that said none are left out)."""
    if not ids:
        return {}
    q = sa.select(battles_t.c.id, battles_t.c.identity_leak).where(battles_t.c.id.in_(list(ids)),
                                                                      battles_t.c.identity_leak.is_not(None))
    with engine.connect() as conn:
        return {i: json.loads(w) for i, w in conn.execute(q)}
