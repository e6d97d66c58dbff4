"""The vote store's public names in one place: SQLAlchemy over SQLite (default, WAL) or PostgreSQL
(``postgresql+psycopg://``).

Each name lives in the module of its concept: the schema in :mod:`voting.tables`, opening a store and its
write transactions in :mod:`voting.engine`, votes, skips, undos, rounds and imports in :mod:`voting.writes`,
and the reads in :mod:`voting.reads`. The pages, the CLI and the tests import them from here.
"""

from __future__ import annotations

from voting.engine import open_store, resolve_url, retry, writing
from voting.reads import (
    MAX_VOTER_OPTIONS,
    count_rows,
    dataset_version,
    get_criteria,
    item_categories,
    list_datasets,
    load_answers,
    load_items_frame,
    load_votes,
    pair_outcome_counts,
    seen_items,
    vote_summary,
    vote_tallies,
    voter_votes,
    votes_stamp,
)
from voting.tables import (
    COUNT_KEY,
    SCHEMA_VERSION,
    SQLITE_TRIGGERS,
    answers_t,
    counts_t,
    events_t,
    guests_t,
    invites_t,
    items_t,
    meta_t,
    metadata,
    rounds_t,
    skips_t,
    undone_t,
    votes_t,
)
from voting.writes import (
    CHOICES,
    Choice,
    DuplicateVote,
    Vote,
    VoteChecks,
    VoteRefused,
    import_battles,
    import_items,
    issue_round,
    record_skip,
    record_vote,
    set_criteria,
    stored_outcome,
    undo_vote,
    vote_row,
)

__all__ = [
    "CHOICES", "COUNT_KEY", "MAX_VOTER_OPTIONS", "SCHEMA_VERSION", "SQLITE_TRIGGERS", "Choice", "DuplicateVote",
    "Vote", "VoteChecks", "VoteRefused", "answers_t", "count_rows", "counts_t", "dataset_version", "events_t",
    "get_criteria", "guests_t", "import_battles", "import_items", "invites_t", "issue_round", "item_categories",
    "items_t", "list_datasets", "load_answers", "load_items_frame", "load_votes", "meta_t", "metadata", "open_store",
    "pair_outcome_counts", "record_skip", "record_vote", "resolve_url", "retry", "rounds_t", "seen_items",
    "set_criteria", "skips_t", "stored_outcome", "undo_vote", "undone_t", "vote_row", "vote_summary",
    "vote_tallies", "voter_votes", "votes_stamp", "votes_t", "writing",
]
