"""Reading the vote store: datasets, items and answers, votes, and the per-pair counts the leaderboard and
pair assignment read (bounded by the number of pairs, not of votes)."""

from __future__ import annotations

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from voting.tables import answers_t, counts_t, items_t, meta_t, metadata, skips_t, undone_t, votes_t


def _frame(engine: Engine, query: sa.Select) -> pd.DataFrame:
    with engine.connect() as conn:
        res = conn.execute(query)
        columns, rows = list(res.keys()), res.fetchall()
    if not rows:
        return pd.DataFrame(columns=columns)
    # column lists, not Row objects: pandas probes each Row's attributes, which costs more than the query
    return pd.DataFrame(dict(zip(columns, map(list, zip(*rows, strict=True)), strict=True)), columns=columns)


def _scalars(engine: Engine, query: sa.Select) -> list:
    with engine.connect() as conn:
        return list(conn.execute(query).scalars())


def list_datasets(engine: Engine) -> list[str]:
    """Dataset names that have items, sorted."""
    return _scalars(engine, sa.select(items_t.c.dataset).distinct().order_by(items_t.c.dataset))


def voted_datasets(engine: Engine) -> list[str]:
    """Dataset names that have votes, sorted (the live battles' ``battle`` has votes and no items); read from the
    per-pair counts, so the cost is bounded by the pairs, not the votes."""
    c = counts_t.c
    return _scalars(engine, sa.select(c.dataset).where(c.n > 0).distinct().order_by(c.dataset))


def load_items_frame(engine: Engine, dataset: str) -> pd.DataFrame:
    """The dataset's items (``item_id, prompt, category``) with their answering models as a list."""
    items = _frame(engine, sa.select(items_t.c.item_id, items_t.c.prompt, items_t.c.category)
                   .where(items_t.c.dataset == dataset).order_by(items_t.c.item_id))
    models = _frame(engine, sa.select(answers_t.c.item_id, answers_t.c.model).where(answers_t.c.dataset == dataset))
    by_item = models.groupby("item_id")["model"].apply(sorted) if len(models) else pd.Series(dtype=object)
    items["models"] = items["item_id"].map(by_item)
    return items


def load_answers(engine: Engine, dataset: str, item_id: str) -> dict[str, str]:
    """``{model: answer}`` for one item."""
    q = sa.select(answers_t.c.model, answers_t.c.answer).where(
        answers_t.c.dataset == dataset, answers_t.c.item_id == item_id)
    with engine.connect() as conn:
        return {model: answer for model, answer in conn.execute(q)}


def item_texts(engine: Engine, datasets: list[str]) -> tuple[dict[tuple[str, str], str], dict[tuple, str]]:
    """The prompts ``{(dataset, item_id): prompt}`` and answers ``{(dataset, item_id, model): answer}`` of
    ``datasets`` (what a preference export pairs with the votes)."""
    prompts = sa.select(items_t.c.dataset, items_t.c.item_id, items_t.c.prompt).where(items_t.c.dataset.in_(datasets))
    answers = sa.select(answers_t.c.dataset, answers_t.c.item_id, answers_t.c.model, answers_t.c.answer).where(
        answers_t.c.dataset.in_(datasets))
    with engine.connect() as conn:
        return ({(d, i): p for d, i, p in conn.execute(prompts)},
                {(d, i, m): a for d, i, m, a in conn.execute(answers)})


def seen_items(engine: Engine, voter: str, dataset: str, round: int = 1) -> set[str]:
    """Items this voter already voted on, skipped or undid (in this round): an undone item does not come
    back, since the voter may have seen which models it showed."""
    q = sa.union(*(sa.select(t.c.item_id).where(t.c.voter == voter, t.c.dataset == dataset, t.c.round == round)
                   for t in (votes_t, skips_t, undone_t)))
    return set(_scalars(engine, q))


def vote_tallies(engine: Engine, dataset: str) -> pd.DataFrame:
    """Vote counts of a dataset: ``item_id, model_left, model_right, outcome, winner_model, n``.

    One row per (item, shown pair, outcome) with votes, read from the trigger-kept ``vote_counts`` table, so
    the result and its cost are bounded by the dataset's size, not by the number of votes (what pair
    assignment and progress need; see :mod:`voting.assign`).
    """
    c = counts_t.c
    winner = sa.case((c.winner == "", sa.null()), else_=c.winner).label("winner_model")
    out = _frame(engine, sa.select(c.item_id, c.model_left, c.model_right, c.outcome, winner, c.n)
                 .where(c.dataset == dataset, c.n > 0))
    out["n"] = out["n"].astype(int)
    return out


def voter_votes(engine: Engine, voter: str, dataset: str) -> pd.DataFrame:
    """``model_left, model_right`` of this voter's votes on a dataset (bounded by the voter's own votes:
    what ``balanced`` assignment spreads evenly over models)."""
    c = votes_t.c
    return _frame(engine, sa.select(c.model_left, c.model_right).where(c.voter == voter, c.dataset == dataset))


def dataset_version(engine: Engine, dataset: str) -> tuple:
    """Changes when a dataset's items change (their number and last import time): the key for caching
    items, models and answers, which votes never change."""
    c = items_t.c
    with engine.connect() as conn:
        n, last = conn.execute(sa.select(sa.func.count(), sa.func.max(c.imported_at)).where(c.dataset == dataset)).one()
    return int(n), last


def pair_outcome_counts(engine: Engine, dataset: str | None = None, voters: list[str] | None = None,
                        since: float | None = None, until: float | None = None,
                        categories: list[str] | None = None) -> pd.DataFrame:
    """Votes as leaderboard cells ``model_left, model_right, outcome, winner_model, n``, counted by the database
    (the ``vote_counts`` table, joined to the items for ``categories``, unless voters or a time window need
    each vote: then a GROUP BY over the votes those filters select): a result bounded by the number of model
    pairs, with the same filters as :func:`load_votes` plus the items' ``categories``."""
    if not (voters or since is not None or until is not None):
        c = counts_t.c
        winner = sa.case((c.winner == "", sa.null()), else_=c.winner)
        keys = (c.model_left, c.model_right, c.outcome, winner)
        q = sa.select(*keys, sa.func.sum(c.n)).where(c.n > 0).group_by(*keys)
        q = q.where(c.dataset == dataset) if dataset is not None else q
        if categories:
            on = sa.and_(items_t.c.dataset == c.dataset, items_t.c.item_id == c.item_id)
            q = q.select_from(counts_t.join(items_t, on)).where(items_t.c.category.in_(categories))
    else:
        v = votes_t.c
        keys = (v.model_left, v.model_right, v.outcome, v.winner_model)
        q = sa.select(*keys, sa.func.count()).where(*_vote_filters(dataset, voters, since, until))
        if categories:
            on = sa.and_(items_t.c.dataset == v.dataset, items_t.c.item_id == v.item_id)
            q = q.select_from(votes_t.join(items_t, on)).where(items_t.c.category.in_(categories))
        q = q.group_by(*keys)
    with engine.connect() as conn:
        rows = conn.execute(q).all()
    out = pd.DataFrame(rows, columns=["model_left", "model_right", "outcome", "winner_model", "n"])
    out["n"] = out["n"].astype(int)
    return out[out["n"] > 0].reset_index(drop=True)


def item_categories(engine: Engine, dataset: str | None = None) -> list[str]:
    """The distinct item categories of a dataset (all datasets for None), sorted."""
    q = sa.select(items_t.c.category).where(items_t.c.category.is_not(None)).distinct()
    q = q.where(items_t.c.dataset == dataset) if dataset is not None else q
    with engine.connect() as conn:
        return sorted(str(r[0]) for r in conn.execute(q))


def votes_stamp(engine: Engine) -> tuple[int, int]:
    """(number of votes, highest vote id): changes whenever a vote is cast or undone; cheap (counts table, key)."""
    with engine.connect() as conn:
        total = conn.execute(sa.select(sa.func.coalesce(sa.func.sum(counts_t.c.n), 0))).scalar_one()
        last = conn.execute(sa.select(sa.func.max(votes_t.c.id))).scalar_one()
    return int(total), int(last or 0)


#: The leaderboard's voter filter lists at most this many voters (beyond it the voter ids are typed).
MAX_VOTER_OPTIONS = 2000
# Distinct voters by a walk down the unique (voter, dataset, ...) index, one step per voter ("loose index
# scan", https://wiki.postgresql.org/wiki/Loose_indexscan): its cost grows with the voters, not the votes.
_VOTERS_SQL = """WITH RECURSIVE v(voter) AS (
  SELECT (SELECT voter FROM votes WHERE {cond} ORDER BY voter LIMIT 1)
  UNION ALL
  SELECT (SELECT voter FROM votes WHERE voter > v.voter AND {cond} ORDER BY voter LIMIT 1) FROM v
  WHERE v.voter IS NOT NULL)
SELECT voter FROM v WHERE voter IS NOT NULL LIMIT :limit"""


def vote_summary(engine: Engine, dataset: str | None = None, max_voters: int | None = None) -> dict:
    """Voters (sorted, at most ``max_voters``; ``more_voters`` says there were more) and the first and last
    ``voted_at`` of the stored votes, from the indexes: a few index probes per dataset and per voter, not a
    scan of the votes. ``max_voters`` defaults to :data:`MAX_VOTER_OPTIONS`."""
    c, max_voters = votes_t.c, MAX_VOTER_OPTIONS if max_voters is None else max_voters
    with engine.connect() as conn:
        if dataset is None:
            datasets = conn.execute(sa.select(counts_t.c.dataset).where(counts_t.c.n > 0).distinct()).scalars().all()
        else:
            datasets = [dataset]
        spans = [conn.execute(sa.select(sa.func.min(c.voted_at), sa.func.max(c.voted_at))
                              .where(c.dataset == d)).one() for d in datasets]
        # SQLite: the unary + keeps the planner off the dataset indexes (which would sort every vote of the
        # dataset for each step) and on the unique index, in voter order
        col = "+dataset" if conn.dialect.name == "sqlite" else "dataset"
        cond, params = (f"{col} = :dataset", {"dataset": dataset}) if dataset is not None else ("1 = 1", {})
        voters = conn.execute(sa.text(_VOTERS_SQL.format(cond=cond)),
                              {**params, "limit": max_voters + 1}).scalars().all()
    los = [lo for lo, _ in spans if lo is not None]
    his = [hi for _, hi in spans if hi is not None]
    return {"voters": list(voters[:max_voters]), "more_voters": len(voters) > max_voters,
            "first": min(los) if los else None, "last": max(his) if his else None}


def _vote_filters(dataset: str | None, voters: list[str] | None, since: float | None,
                  until: float | None) -> list:
    c, out = votes_t.c, []
    if dataset is not None:
        out.append(c.dataset == dataset)
    if voters:
        out.append(c.voter.in_(voters))
    if since is not None:
        out.append(c.voted_at >= since)
    if until is not None:
        out.append(c.voted_at < until)
    return out


def load_votes(
    engine: Engine, dataset: str | None = None, voters: list[str] | None = None,
    since: float | None = None, until: float | None = None,
) -> pd.DataFrame:
    """Stored votes (all columns, plus the item's ``category``), optionally filtered by dataset, voters and
    a ``voted_at`` window."""
    on = sa.and_(items_t.c.dataset == votes_t.c.dataset, items_t.c.item_id == votes_t.c.item_id)
    q = sa.select(votes_t, items_t.c.category).select_from(votes_t.outerjoin(items_t, on))
    return _frame(engine, q.where(*_vote_filters(dataset, voters, since, until)).order_by(votes_t.c.id))


def count_rows(engine: Engine, table: str = "votes") -> int:
    """Number of rows in a table."""
    t = metadata.tables[table]
    with engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one())


def get_criteria(engine: Engine, dataset: str) -> str:
    """The dataset's judging criteria (Markdown shown to voters), '' when none were set."""
    with engine.connect() as conn:
        text = conn.execute(sa.select(meta_t.c.value).where(meta_t.c.key == f"criteria:{dataset}")).scalar()
    return text or ""

