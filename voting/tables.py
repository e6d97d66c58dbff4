"""The vote store's schema: every table in one :data:`metadata`, one :data:`SCHEMA_VERSION`, and the database
triggers that keep the per-pair vote counts.

Opening a store creates and migrates them (:mod:`voting.migrations`, called by :func:`voting.engine.open_store`);
every reader and writer uses these tables. A change here bumps :data:`SCHEMA_VERSION` and, unless it only adds
tables, indexes or nullable columns, adds a step to :data:`voting.migrations.STEPS`.
"""

from __future__ import annotations

import sqlalchemy as sa

#: 1: votes, items, rounds, ... (the app's own tables); 2: the live battles and the dataset archive joined them.
SCHEMA_VERSION = 2

metadata = sa.MetaData()
_name = sa.String(200)
items_t = sa.Table(
    "items", metadata,
    sa.Column("dataset", _name, primary_key=True),
    sa.Column("item_id", _name, primary_key=True),
    sa.Column("prompt", sa.Text, nullable=False),
    sa.Column("category", _name),
    sa.Column("imported_at", sa.Float, nullable=False),
)
answers_t = sa.Table(
    "answers", metadata,
    sa.Column("dataset", _name, primary_key=True),
    sa.Column("item_id", _name, primary_key=True),
    sa.Column("model", _name, primary_key=True),
    sa.Column("answer", sa.Text, nullable=False),
    sa.ForeignKeyConstraint(["dataset", "item_id"], ["items.dataset", "items.item_id"]),
)
votes_t = sa.Table(
    "votes", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("voter", _name, nullable=False),
    sa.Column("dataset", _name, nullable=False),
    sa.Column("item_id", _name, nullable=False),
    sa.Column("round", sa.Integer, nullable=False, server_default="1"),
    sa.Column("model_left", _name, nullable=False),  # shown as "A"
    sa.Column("model_right", _name, nullable=False),  # shown as "B"
    # "xy" when the alphabetically first model was shown on the left, else "yx" (the judge's convention)
    sa.Column("shown_order", sa.String(2), nullable=False),
    sa.Column("outcome", sa.String(16), nullable=False),  # "win", "tie" or "tie (bothbad)"
    sa.Column("winner_model", _name),  # by identity; NULL for ties
    sa.Column("reason", sa.Text),
    sa.Column("shown_at", sa.Float),
    sa.Column("voted_at", sa.Float, nullable=False),
    sa.Column("app_version", sa.String(32)),
    sa.Column("source", sa.String(200), server_default="app"),
    sa.Column("conv_metadata", sa.Text),  # JSON style counts per side (Chatbot Arena's), when known
    sa.Column("seconds_on_pair", sa.Float),  # from the round's issue to the vote, server clocks (app votes)
    sa.UniqueConstraint("voter", "dataset", "item_id", "round", name="uq_votes_voter_item_round"),
    sa.Index("ix_votes_dataset_item", "dataset", "item_id"),
    sa.Index("ix_votes_dataset_time", "dataset", "voted_at"),  # the leaderboard's date range and window
    sqlite_autoincrement=True,  # never reuse the id of an undone vote (SQLite's default reuses max(id) + 1)
)
# Undone votes are moved here, not dropped: the audit trail of what voters took back. Its own key: a vote
# id can appear twice (stores made before ``sqlite_autoincrement`` reused the ids of undone votes).
undone_t = sa.Table(
    "undone_votes", metadata,
    sa.Column("undo_id", sa.Integer, primary_key=True, autoincrement=True),
    *[sa.Column(c.name, c.type, nullable=c.nullable) for c in votes_t.columns],
    sa.Column("undone_at", sa.Float, nullable=False),
    sa.Column("revealed", sa.Boolean),  # the names were shown before the undo (NULL: stores from before)
    sa.Index("ix_undone_voter", "voter", "dataset", "round"),
)
skips_t = sa.Table(
    "skips", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("voter", _name, nullable=False),
    sa.Column("dataset", _name, nullable=False),
    sa.Column("item_id", _name, nullable=False),
    sa.Column("round", sa.Integer, nullable=False, server_default="1"),
    sa.Column("skipped_at", sa.Float, nullable=False),
    sa.UniqueConstraint("voter", "dataset", "item_id", "round", name="uq_skips_voter_item_round"),
)
# Voter invites: the token is given to the voter once (in a link); only its SHA-256 is stored.
invites_t = sa.Table(
    "invites", metadata,
    sa.Column("token_hash", sa.String(64), primary_key=True),
    sa.Column("voter", _name, nullable=False, index=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("revoked_at", sa.Float),
)
# Open-voting ids: issued by the server only (the token goes into the voter's link; its SHA-256 is kept).
guests_t = sa.Table(
    "guests", metadata,
    sa.Column("token_hash", sa.String(64), primary_key=True),
    sa.Column("voter", _name, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)
# Vote counts per (item, shown pair, outcome), kept by database triggers in the transaction of every insert or
# delete on ``votes`` (any writer, any process): the vote page and the leaderboard read these cells instead of
# scanning every vote, so a click costs the same at 1k and 1M stored votes.
counts_t = sa.Table(
    "vote_counts", metadata,
    sa.Column("dataset", _name, primary_key=True),
    sa.Column("item_id", _name, primary_key=True),
    sa.Column("model_left", _name, primary_key=True),
    sa.Column("model_right", _name, primary_key=True),
    sa.Column("outcome", sa.String(16), primary_key=True),
    sa.Column("winner", _name, primary_key=True),  # winner_model, '' for ties (a key cannot be NULL)
    sa.Column("n", sa.Integer, nullable=False),
)
COUNT_KEY = "dataset, item_id, model_left, model_right, outcome, winner"
SQLITE_TRIGGERS = (
    f"""CREATE TRIGGER IF NOT EXISTS vote_counts_ins AFTER INSERT ON votes BEGIN
    INSERT INTO vote_counts ({COUNT_KEY}, n) VALUES (NEW.dataset, NEW.item_id, NEW.model_left,
        NEW.model_right, NEW.outcome, COALESCE(NEW.winner_model, ''), 1)
    ON CONFLICT ({COUNT_KEY}) DO UPDATE SET n = n + 1; END""",
    """CREATE TRIGGER IF NOT EXISTS vote_counts_del AFTER DELETE ON votes BEGIN
    UPDATE vote_counts SET n = n - 1 WHERE dataset = OLD.dataset AND item_id = OLD.item_id
        AND model_left = OLD.model_left AND model_right = OLD.model_right AND outcome = OLD.outcome
        AND winner = COALESCE(OLD.winner_model, ''); END""",
)
PG_TRIGGERS = (
    f"""CREATE OR REPLACE FUNCTION preflab_vote_counts() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO vote_counts ({COUNT_KEY}, n) VALUES (NEW.dataset, NEW.item_id, NEW.model_left,
        NEW.model_right, NEW.outcome, COALESCE(NEW.winner_model, ''), 1)
    ON CONFLICT ({COUNT_KEY}) DO UPDATE SET n = vote_counts.n + 1;
    RETURN NEW;
  END IF;
  UPDATE vote_counts SET n = n - 1 WHERE dataset = OLD.dataset AND item_id = OLD.item_id
      AND model_left = OLD.model_left AND model_right = OLD.model_right AND outcome = OLD.outcome
      AND winner = COALESCE(OLD.winner_model, '');
  RETURN OLD;
END $$ LANGUAGE plpgsql""",
    """CREATE OR REPLACE TRIGGER vote_counts_trg AFTER INSERT OR DELETE ON votes
    FOR EACH ROW EXECUTE FUNCTION preflab_vote_counts()""",
)
# One row per pair drawn for a voter: its id is issued here, checked and consumed in the vote's (or skip's)
# transaction, so a message can only vote on the pair it was drawn for, once, and not sooner than the page's
# minimum time after it was drawn (server clocks).
rounds_t = sa.Table(
    "rounds", metadata,
    sa.Column("round_id", sa.String(64), primary_key=True),
    sa.Column("voter", _name, nullable=False),
    sa.Column("dataset", _name, nullable=False),
    sa.Column("item_id", _name, nullable=False),
    sa.Column("model_left", _name, nullable=False),
    sa.Column("model_right", _name, nullable=False),
    sa.Column("round", sa.Integer, nullable=False),
    sa.Column("shown_at", sa.Float, nullable=False),
    sa.Column("used_at", sa.Float),
)
# Recent events per key (an open-voting guest, a client address, an admin sign-in from an address): the
# rate limits and the admin lockout read them, so every app process on the store shares one count.
events_t = sa.Table(
    "rate_events", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("key", _name, nullable=False),
    sa.Column("at", sa.Float, nullable=False),
    sa.Index("ix_rate_events_key_at", "key", "at"),
)
meta_t = sa.Table("preflab_meta", metadata, sa.Column("key", _name, primary_key=True), sa.Column("value", sa.Text))

# Live battles (:mod:`voting.battles`): a voter's own prompt, two roster models answering; the vote itself is a
# ``votes`` row (dataset "battle", item = battle id) that ``vote_id`` points at.
BATTLE_SOURCE = "battle"  # the ``source`` of a battle's vote row
battles_t = sa.Table(
    "battles", metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    sa.Column("voter", _name, nullable=False, index=True),
    sa.Column("model_a", _name, nullable=False),  # shown as A (left)
    sa.Column("model_b", _name, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),  # answering | answered | voted | failed | abandoned
    sa.Column("turns", sa.Integer, nullable=False),
    sa.Column("conversation_a", sa.Text, nullable=False),  # JSON [{"role", "content"}], OpenAI style
    sa.Column("conversation_b", sa.Text, nullable=False),
    sa.Column("answer_meta", sa.Text, nullable=False),  # JSON per turn: {"a": {...}, "b": {...}}
    sa.Column("style", sa.Text),  # Chatbot Arena conv_metadata totals, once answered
    sa.Column("error", sa.Text),  # which side failed and how (never shown to the voter)
    sa.Column("choice", sa.String(16)),
    sa.Column("vote_id", sa.Integer),
    sa.Column("created_at", sa.Float, nullable=False, index=True),
    sa.Column("updated_at", sa.Float, nullable=False),
    # JSON list of the roster words an answer said (a model, provider, family or persona): the voter may have
    # learnt who answered, so its vote is kept out of the anonymous leaderboard (NULL: none said)
    sa.Column("identity_leak", sa.Text),
)
# What each battle turn may cost, reserved before its calls (so concurrent turns cannot overshoot the arena's
# cap) and settled from the reported tokens after them (:mod:`voting.arena_guard`). ``usd`` NULL: a model with
# no known price (its tokens still count against the token cap); where tokens were not reported the
# reservation stays.
spend_t = sa.Table(
    "arena_spend", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("battle_id", sa.String(40), nullable=False, index=True),
    sa.Column("turn", sa.Integer, nullable=False),
    sa.Column("day", sa.String(10), nullable=False, index=True),  # UTC date of the reservation
    sa.Column("usd", sa.Float),
    sa.Column("tokens", sa.Integer, nullable=False),
    sa.Column("settled", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("at", sa.Float, nullable=False),
)
# Deleting a dataset (:mod:`voting.archive`) moves its votes here, and a row in ``archived_datasets`` says what
# went and when.
archived_votes_t = sa.Table(
    "archived_votes", metadata,
    sa.Column("archive_id", sa.Integer, primary_key=True, autoincrement=True),
    *[sa.Column(c.name, c.type, nullable=c.nullable) for c in votes_t.columns],
    sa.Column("archived_at", sa.Float, nullable=False),
    sa.Index("ix_archived_votes_dataset", "dataset"),
)
archived_datasets_t = sa.Table(
    "archived_datasets", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("dataset", _name, nullable=False),
    sa.Column("archived_at", sa.Float, nullable=False),
    sa.Column("items", sa.Integer, nullable=False),
    sa.Column("answers", sa.Integer, nullable=False),
    sa.Column("votes", sa.Integer, nullable=False),
    sa.Column("skips", sa.Integer, nullable=False),
    sa.Column("by", _name),
)
