"""The store's votes as the files others read, one function per store for every caller: ``preflab export-votes``
and the Data page's downloads both call :func:`export_votes`, so they hand out the same bytes.

Kinds: ``battles`` (Chatbot Arena JSON, live battles with their ``conversation_a``/``conversation_b``), ``votes``
(every vote column, CSV), ``labels`` (the seed's ``judge_labels.csv``) and ``pairs`` (alias ``dpo``): preference
pairs in the layout TRL's ``DPOTrainer`` and Hugging Face ``datasets`` read (TRL's "preference" type: ``prompt``,
``chosen``, ``rejected``), as JSONL or Parquet. Ties and both-bad votes have no chosen answer: they are left out
and counted.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from voting.reads import item_texts, load_votes
from voting.tables import BATTLE_SOURCE, battles_t
from voting.votes import EXPORTS as FRAME_EXPORTS
from voting.votes import export_bytes

EXPORTS: dict[str, str] = {**FRAME_EXPORTS, "pairs": "preference pairs (prompt, chosen, rejected)"}
ALIASES: dict[str, str] = {"dpo": "pairs"}
FORMATS = ("jsonl", "parquet")  # of ``pairs``
PAIR_COLUMNS = ("prompt", "chosen", "rejected", "vote_id", "dataset", "item_id", "chosen_model", "rejected_model",
                "voter", "category")
#: Why a vote has no preference row: (one, several).
LEFT_OUT = {"tie": ("tie", "ties"), "bothbad": ("both-bad vote", "both-bad votes"),
            "missing": ("vote whose prompt or answers are not stored", "votes whose prompt or answers are not stored")}


@dataclass(frozen=True)
class Export:
    """An export's bytes, the votes read, the rows written and the votes left out (by reason, see
    :data:`LEFT_OUT`)."""

    data: bytes
    votes: int
    rows: int
    left_out: dict[str, int] = field(default_factory=dict)

    def left_out_text(self) -> str:
        """``left out 3 ties and 1 both-bad vote`` ('' when nothing was)."""
        parts = [f"{n} {LEFT_OUT[k][n != 1]}" for k, n in self.left_out.items() if n]
        if not parts:
            return ""
        return "left out " + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0])


def export_kind(kind: str) -> str:
    """The canonical kind (``dpo`` -> ``pairs``); raises ValueError naming the kinds for an unknown one."""
    kind = ALIASES.get(kind, kind)
    if kind not in EXPORTS:
        raise ValueError(f"unknown export {kind!r}; use one of {', '.join([*EXPORTS, *ALIASES])}")
    return kind


def attach_conversations(engine: Engine, votes: pd.DataFrame) -> pd.DataFrame:
    """``votes`` with ``conversation_a``/``conversation_b`` (Chatbot Arena's message lists, left = a) for the
    live battles among them, so an export carries what was asked and answered, and ``identity_leak`` (the
    roster words an answer said, else None: such a vote is not anonymous); other votes get None."""
    out = votes.copy()
    mine = out["source"].eq(BATTLE_SOURCE) if "source" in out else pd.Series(False, index=out.index)
    convs: dict[str, tuple] = {}
    if mine.any():
        ids = out.loc[mine, "item_id"].astype(str).unique().tolist()
        b = battles_t.c
        q = sa.select(b.id, b.conversation_a, b.conversation_b, b.identity_leak).where(b.id.in_(ids))
        with engine.connect() as conn:
            convs = {i: (json.loads(a), json.loads(c), json.loads(w) if w else None) for i, a, c, w in conn.execute(q)}
    for k, column in ((0, "conversation_a"), (1, "conversation_b"), (2, "identity_leak")):
        out[column] = [convs[i][k] if m and i in convs else None
                       for i, m in zip(out["item_id"].astype(str), mine, strict=True)]
    return out


def _split_conversations(a: list[dict], b: list[dict]) -> tuple[list[dict], list[dict], list[dict]]:
    """(shared prompt, rest of ``a``, rest of ``b``): the longest common prefix of messages is the prompt (TRL's
    explicit form of an implicit-prompt pair)."""
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
        k += 1
    return a[:k], a[k:], b[k:]


def _messages(messages: list[dict]) -> list[dict]:
    return [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]


def _texts(v: dict, won_left: bool, prompts: dict, answers: dict, chat: bool) -> tuple | None:
    """(prompt, chosen, rejected) of one decisive vote: a live battle's from its conversations, an item's
    from the store (as chat messages when ``chat``); None when the store lacks them."""
    if isinstance(v.get("conversation_a"), list):
        prompt, rest_a, rest_b = _split_conversations(v["conversation_a"], v["conversation_b"])
        chosen, rejected = (rest_a, rest_b) if won_left else (rest_b, rest_a)
        return _messages(prompt), _messages(chosen), _messages(rejected)
    key = (v["dataset"], v["item_id"])
    left, right = answers.get((*key, v["model_left"])), answers.get((*key, v["model_right"]))
    prompt, (chosen, rejected) = prompts.get(key), ((left, right) if won_left else (right, left))
    if prompt is None or chosen is None or rejected is None:
        return None
    if not chat:
        return prompt, chosen, rejected
    return ([{"role": "user", "content": prompt}], [{"role": "assistant", "content": chosen}],
            [{"role": "assistant", "content": rejected}])


def preference_pairs(votes: pd.DataFrame, prompts: dict, answers: dict) -> tuple[list[dict], dict[str, int]]:
    """Decisive votes as preference rows (:data:`PAIR_COLUMNS`) and the votes left out by reason.

    Conversational (chat messages) when any vote is a live battle (its conversations attached by
    :func:`attach_conversations`), else standard (strings): one file holds one of TRL's two formats."""
    left = {"tie": 0, "bothbad": 0, "missing": 0}
    chat = bool(len(votes)) and "conversation_a" in votes and votes["conversation_a"].notna().any()
    rows = []
    for v in votes.to_dict("records"):
        if v["winner_model"] is None or pd.isna(v["winner_model"]):
            left["tie" if v["outcome"] == "tie" else "bothbad"] += 1
            continue
        won_left = v["winner_model"] == v["model_left"]
        texts = _texts(v, won_left, prompts, answers, chat)
        if texts is None:
            left["missing"] += 1
            continue
        models = (v["model_left"], v["model_right"]) if won_left else (v["model_right"], v["model_left"])
        category = v.get("category")
        rows.append(dict(zip(PAIR_COLUMNS, (*texts, int(v["id"]), v["dataset"], v["item_id"], *models, v["voter"],
                                            None if category is None or pd.isna(category) else category),
                             strict=True)))
    return rows, left


def pairs_bytes(rows: list[dict], fmt: str, chat: bool) -> bytes:
    """Preference rows as JSONL (one object per line, UTF-8) or Parquet (``chat``: the text columns are lists of
    ``{role, content}`` messages)."""
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
    if fmt != "parquet":
        raise ValueError(f"unknown format {fmt!r} for preference pairs; use one of {', '.join(FORMATS)}")
    import pyarrow as pa
    import pyarrow.parquet as pq

    text = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())])) if chat else pa.string()
    schema = pa.schema([("prompt", text), ("chosen", text), ("rejected", text), ("vote_id", pa.int64()),
                        *((c, pa.string()) for c in PAIR_COLUMNS[4:])])
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), buf)
    return buf.getvalue()


def export_votes(engine: Engine, kind: str, dataset: str | None = None, fmt: str = "jsonl",
                 votes: pd.DataFrame | None = None) -> Export:
    """The votes of ``dataset`` (all when None) as ``kind`` (:data:`EXPORTS`, or an alias); ``fmt`` (jsonl or
    parquet) is the file format of ``pairs``. Live battles carry their conversations in ``battles`` and
    ``pairs``. ``votes``: the caller's :func:`voting.reads.load_votes` of the same dataset (read once for
    several exports)."""
    kind = export_kind(kind)
    votes = load_votes(engine, dataset) if votes is None else votes
    if kind in ("battles", "pairs"):
        votes = attach_conversations(engine, votes)
    if kind != "pairs":
        return Export(export_bytes(votes, kind), len(votes), len(votes))
    prompts, answers = item_texts(engine, sorted(set(votes["dataset"]))) if len(votes) else ({}, {})
    rows, left = preference_pairs(votes, prompts, answers)
    chat = bool(rows) and isinstance(rows[0]["prompt"], list)
    return Export(pairs_bytes(rows, fmt, chat), len(votes), len(rows), left)
