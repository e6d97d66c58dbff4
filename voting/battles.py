"""Live battles: a voter's own prompt, two roster models answering side by side, the vote stored as an app
vote (so the leaderboard, ``rank --style-control`` and ``export-votes`` count it like any other), and the
battle itself stored in full in its own table.

A battle is ``answering`` while the answers stream (again during a follow-up), ``answered`` when both
finished, ``voted`` after the vote (its ``vote_id`` points at the ``votes`` row: dataset
:data:`BATTLE_DATASET`, item = battle id, source ``battle``), ``failed`` when an answer failed, or
``abandoned`` when the voter left it mid-answer: those two have no vote row and never count.
Pairs are drawn least-compared first (answered or voted battles per unordered pair), uniformly, or by the
arena's active sampler on the battle votes (the app's ``--strategy``), sides at random.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from answering.model_specs import ModelSpec, load_roster
from answering.stream import stream_answers
from llm.providers.base import ProviderError
from llm.providers.generation import Generation
from voting.tables import BATTLE_SOURCE, battles_t, votes_t
from voting.votes import style_meta
from voting.writes import DuplicateVote, Vote, VoteChecks, VoteRefused, check_rate, serialise, vote_row

if TYPE_CHECKING:
    import pandas as pd

BATTLE_DATASET = "battle"


@dataclass(frozen=True)
class ArenaLimits:
    """What one voter, one client address and one conversation may ask, and what the arena may spend.

    ``battles_per_minute``: prompts (a new battle or a follow-up turn) per voter per minute;
    ``per_address_per_minute``: the same from one client address, all its guest ids together;
    ``max_turns`` and ``max_conversation_chars``: one battle's length (a side's prompts and answers so far
    plus the new prompt: what one request carries); ``usd_per_day`` (UTC day) and ``usd_total``: the
    arena's spend caps (None: no cap);
    ``tokens_per_day``: a cap on the tokens reserved per day, which also holds models with no known price."""

    max_prompt_chars: int = 4000
    battles_per_minute: int = 6
    max_tokens: int = 1024
    per_address_per_minute: int = 20
    max_turns: int = 10
    max_conversation_chars: int = 40_000
    usd_per_day: float | None = None
    usd_total: float | None = None
    tokens_per_day: int | None = None


def open_battles(engine: Engine) -> Engine:
    """The engine, unchanged: the battles table is part of the store's schema (:func:`voting.engine.open_store`
    creates it); kept so callers that opened battles separately keep working."""
    return engine


def load_arena(path: str) -> list[ModelSpec]:
    """The roster of a live arena (a ``generate`` roster TOML); at least two models."""
    from preflab.errors import InputError

    roster = load_roster(path)
    if len(roster) < 2:
        raise InputError(path, None, "model", "a battle needs at least two models", "add another [[model]] table")
    return roster


def pair_counts(engine: Engine) -> dict[frozenset, int]:
    """Answered or voted battles per unordered pair of model names."""
    q = (sa.select(battles_t.c.model_a, battles_t.c.model_b, sa.func.count())
         .where(battles_t.c.status.in_(("answered", "voted"))).group_by(battles_t.c.model_a, battles_t.c.model_b))
    out: dict[frozenset, int] = {}
    with engine.connect() as conn:
        for a, b, n in conn.execute(q):
            out[frozenset((a, b))] = out.get(frozenset((a, b)), 0) + int(n)
    return out


def battle_outcomes(engine: Engine, names: Sequence[str]) -> np.ndarray:
    """(k, k, 3) counts of (left wins, right wins, tie) per ordered pair of roster models from the battle
    votes (both tie kinds are ties), as :func:`arena.simulation.sampling.outcome_tensor` lays them out."""
    from voting.reads import load_votes
    from voting.votes import vote_codes

    index = {n: i for i, n in enumerate(names)}
    out = np.zeros((len(names), len(names), 3))
    votes = load_votes(engine, BATTLE_DATASET)
    if len(votes):
        keep = votes["model_left"].isin(index) & votes["model_right"].isin(index)
        votes = votes[keep]
        codes = np.minimum(vote_codes(votes), 2)
        np.add.at(out, (votes["model_left"].map(index).to_numpy(), votes["model_right"].map(index).to_numpy(),
                        codes), 1.0)
    return out


def draw_pair(roster: Sequence[ModelSpec], counts: dict[frozenset, int], rng: np.random.Generator,
              strategy: str = "balanced", outcomes: np.ndarray | None = None) -> tuple[ModelSpec, ModelSpec]:
    """The next pair, sides at random: (shown as A, shown as B). ``balanced``: the least-compared pair (ties
    broken at random, weighted by the product of the models' weights); ``uniform``: any pair, by weight;
    ``active``: :func:`arena.simulation.sampling.next_pair` on the battle ``outcomes`` (balanced until there are
    votes)."""
    if strategy == "active" and outcomes is not None and outcomes.sum() > 0:
        from arena.simulation.sampling import next_pair

        i, j = next_pair(outcomes, seed=rng)
        return roster[i], roster[j]
    pairs = [(x, y) for i, x in enumerate(roster) for y in roster[i + 1:]]
    n = np.array([counts.get(frozenset((x.name, y.name)), 0) for x, y in pairs])
    least = pairs if strategy == "uniform" else [p for p, k in zip(pairs, n, strict=True) if k == n.min()]
    w = np.array([x.weight * y.weight for x, y in least])
    x, y = least[int(rng.choice(len(least), p=w / w.sum()))]
    return (x, y) if rng.random() < 0.5 else (y, x)


def new_battle_row(battle_id: str, voter: str, model_a: str, model_b: str, now: float, turns: int = 0) -> dict:
    """The stored row of a battle just started (``answering``): no turn of its own yet; ``turns``: those it carries
    as context (Regenerate), counted as its own."""
    return dict(id=battle_id, voter=voter, model_a=model_a, model_b=model_b, status="answering", turns=turns,
                conversation_a="[]", conversation_b="[]", answer_meta="[]", created_at=now, updated_at=now)


def start_battle(engine: Engine, voter: str, model_a: str, model_b: str) -> str:
    """Store a new battle (``answering``) with no limit checked; returns its id. The Battle page starts its
    battles with :func:`voting.arena_guard.claim_turn`, which checks the limits in the same transaction."""
    bid = secrets.token_hex(12)
    with engine.connect().execution_options(write=True) as conn, conn.begin():
        conn.execute(battles_t.insert().values(**new_battle_row(bid, voter, model_a, model_b, time.time())))
    return bid


def load_battle(engine: Engine, battle_id: str) -> dict | None:
    """One stored battle, JSON fields decoded."""
    with engine.connect() as conn:
        row = conn.execute(sa.select(battles_t).where(battles_t.c.id == battle_id)).mappings().first()
    if row is None:
        return None
    out = dict(row)
    for k in ("conversation_a", "conversation_b", "answer_meta"):
        out[k] = json.loads(out[k])
    out["style"] = json.loads(out["style"]) if out["style"] else None
    return out


def _assistant_text(conversation: list[dict]) -> str:
    return "\n\n".join(m["content"] for m in conversation if m["role"] == "assistant")


def abandon(engine: Engine, battle_id: str) -> None:
    """A battle left while answering (a reload, a click mid-stream) or before its vote (New round,
    Regenerate) is marked ``abandoned``: never counted."""
    with engine.connect().execution_options(write=True) as conn, conn.begin():
        conn.execute(battles_t.update().where(battles_t.c.id == battle_id,
                                              battles_t.c.status.in_(("answering", "answered")))
                     .values(status="abandoned", updated_at=time.time()))


def save_turn(engine: Engine, battle_id: str, conv_a: list[dict], conv_b: list[dict],
              results: dict[str, Generation | Exception], identity: Sequence[str] = ()) -> bool:
    """Store a finished turn: both conversations and each answer's tokens, latency and finish reason; a
    failed side marks the battle ``failed`` (it will never count). The answers so far are matched against the
    ``identity`` words (:func:`voting.identity.said_identity`): what they said is kept in ``identity_leak``.
    True when both answers arrived."""
    battle = load_battle(engine, battle_id)
    if battle is None or battle["status"] != "answering":
        return False
    meta = battle["answer_meta"]
    turn, errors = {}, []
    for side, res in results.items():
        if isinstance(res, Generation):
            turn[side] = {k: v for k, v in res.to_json().items() if k != "text"}
        else:
            kind = res.kind if isinstance(res, ProviderError) else type(res).__name__
            turn[side] = {"error": kind}
            errors.append(f"{side}: {kind}: {str(res)[:200]}")
    meta.append(turn)
    ok = not errors
    values = dict(conversation_a=json.dumps(conv_a), conversation_b=json.dumps(conv_b), answer_meta=json.dumps(meta),
                  turns=battle["turns"] + 1, status="answered" if ok else "failed",
                  error="; ".join(errors) or None, updated_at=time.time())
    if ok:
        values["style"] = json.dumps(style_meta(_assistant_text(conv_a), _assistant_text(conv_b)))
        from voting.identity import said_identity

        said = said_identity(_assistant_text(conv_a) + "\n\n" + _assistant_text(conv_b), identity)
        values["identity_leak"] = json.dumps(said) if said else None
    with engine.connect().execution_options(write=True) as conn, conn.begin():
        conn.execute(battles_t.update().where(battles_t.c.id == battle_id).values(**values))
    return ok


def vote_battle(engine: Engine, battle_id: str, voter: str, choice: str, turns: int | None = None,
                checks: VoteChecks | None = None) -> int:
    """Store the vote on an answered battle as an app vote (style counts included) and mark it ``voted``;
    returns the vote id. ``turns``: the turn the buttons were drawn under (a vote for an earlier turn is
    refused); ``checks``: the open-voting rate keys and the least time from both answers finishing
    (``min_seconds``), checked and counted in the vote's transaction as the Vote page's are.
    Raises :class:`voting.store.DuplicateVote` on a second vote, :class:`voting.store.VoteRefused` ("stale",
    "fast", "rate"), ValueError when the battle is not this voter's or not answered."""
    checks = checks or VoteChecks()
    battle = load_battle(engine, battle_id)
    if battle is None or battle["voter"] != voter:
        raise ValueError("no such battle for this voter")
    if turns is not None and battle["turns"] != turns and battle["status"] != "voted":
        raise VoteRefused("stale", f"battle {battle_id} is at turn {battle['turns']}, not {turns}")
    if battle["status"] == "voted":
        raise DuplicateVote(f"battle {battle_id} was already voted on")
    if battle["status"] != "answered":
        raise ValueError(f"battle {battle_id} is {battle['status']}: it cannot be voted on")
    vote = Vote(voter, BATTLE_DATASET, battle_id, battle["model_a"], battle["model_b"], choice,  # type: ignore[arg-type]
                battle["created_at"], "", 1, battle["style"])
    row = vote_row(vote, source=BATTLE_SOURCE)  # the store's own vote row; only its source differs
    # time on the pair: from both answers of the last turn finishing (the battle's last update) to the vote
    row["seconds_on_pair"] = max(0.0, row["voted_at"] - battle["updated_at"])
    with engine.connect().execution_options(write=True) as conn, conn.begin():  # one transaction: claim + vote
        serialise(conn, *(k for k, _ in checks.rate))
        if checks.min_seconds > 0 and (on_pair := time.time() - battle["updated_at"]) < checks.min_seconds:
            raise VoteRefused("fast", f"{on_pair:.2f} s after the answers (at least {checks.min_seconds:g} s)",
                              checks.min_seconds - on_pair)
        b = battles_t.c
        claimed = conn.execute(battles_t.update().where(  # the turn read above, still unvoted
            b.id == battle_id, b.status == "answered", b.updated_at == battle["updated_at"])
                               .values(status="voted", choice=choice, updated_at=row["voted_at"])).rowcount
        if not claimed:
            raise DuplicateVote(f"battle {battle_id} was already voted on")
        check_rate(conn, checks, row["voted_at"])
        vote_id = int(conn.execute(votes_t.insert().values(**row)).inserted_primary_key[0])
        conn.execute(battles_t.update().where(battles_t.c.id == battle_id).values(vote_id=vote_id))
    return vote_id


async def stream_pair(specs: dict[str, ModelSpec], conversations: dict[str, list[dict]], limits: ArenaLimits,
                      on_text: Callable[[str, str], None],
                      generators: dict[str, object] | None = None) -> dict[str, Generation | Exception]:
    """Stream both sides' next answers at once, capped at the arena's answer tokens
    (:func:`answering.stream.stream_answers`)."""
    return await stream_answers(specs, conversations, limits.max_tokens, on_text, generators)


def failed_battles(engine: Engine, limit: int = 100) -> pd.DataFrame:
    """The latest failed battles, newest first: when, id, voter, both models, turns and the stored cause (the
    admin's view: voters never see it)."""
    import pandas as pd

    cols = ["when", "id", "voter", "model_a", "model_b", "turns", "error"]
    if not sa.inspect(engine).has_table("battles"):
        return pd.DataFrame(columns=cols)
    b = battles_t.c
    q = (sa.select(b.updated_at, b.id, b.voter, b.model_a, b.model_b, b.turns, b.error)
         .where(b.status == "failed").order_by(b.updated_at.desc()).limit(limit))
    with engine.connect() as conn:
        rows = conn.execute(q).all()
    out = pd.DataFrame(rows, columns=cols)
    out["when"] = pd.to_datetime(out["when"], unit="s", utc=True)
    return out
