"""Vote integrity: undo never lets a voter re-vote knowing the models, and a second
undo works on every store, including SQLite stores made before undone votes had their own key."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tests.voting.conftest import round_button
from voting.store import Vote, count_rows, load_votes, open_store, record_vote, seen_items, undo_vote


def test_second_undo_on_sqlite(seeded_url):
    """SQLite reused the id of an undone vote; the second undo then hit UNIQUE(undone_votes.id)."""
    engine = open_store(seeded_url)
    for item in ("q001", "q002", "q003"):  # vote, undo, vote: each new vote is the table's last row
        vid = record_vote(engine, Vote("ann", "tiny", item, "quokka-13b", "marmoset-70b", "A"))
        assert undo_vote(engine, vid, "ann")
    assert count_rows(engine) == 0 and count_rows(engine, "undone_votes") == 3


def test_old_undone_table_is_rekeyed(sqlite_url):
    """A store from before ``undo_id``: ``undone_votes`` keyed by the vote id, votes without AUTOINCREMENT."""
    engine = open_store(sqlite_url)
    vid = record_vote(engine, Vote("ann", "tiny", "q1", "a", "b", "A"))
    assert undo_vote(engine, vid, "ann")
    with engine.begin() as conn:  # rebuild the old layouts by hand
        cols = [c["name"] for c in sa.inspect(conn).get_columns("undone_votes") if c["name"] != "undo_id"]
        conn.exec_driver_sql(f"CREATE TABLE old_u AS SELECT {', '.join(cols)} FROM undone_votes")
        conn.exec_driver_sql("DROP TABLE undone_votes")
        ddl = ", ".join(f'"{c}"' + (" INTEGER PRIMARY KEY" if c == "id" else "") for c in cols)
        conn.exec_driver_sql(f"CREATE TABLE undone_votes ({ddl})")
        conn.exec_driver_sql(f"INSERT INTO undone_votes SELECT {', '.join(cols)} FROM old_u")
        conn.exec_driver_sql("DROP TABLE old_u")
    engine.dispose()
    engine = open_store(sqlite_url)
    assert count_rows(engine, "undone_votes") == 1
    vid2 = record_vote(engine, Vote("ann", "tiny", "q2", "a", "b", "B"))
    assert undo_vote(engine, vid2, "ann")  # the same id again is fine now
    assert count_rows(engine, "undone_votes") == 2


def test_an_undone_item_counts_as_seen(seeded_url):
    engine = open_store(seeded_url)
    vid = record_vote(engine, Vote("ann", "tiny", "q001", "quokka-13b", "marmoset-70b", "A"))
    assert undo_vote(engine, vid, "ann")
    assert seen_items(engine, "ann", "tiny") == {"q001"}
    assert seen_items(engine, "bob", "tiny") == set()


def test_undo_after_the_reveal_never_brings_the_item_back(monkeypatch, seeded_url):
    """Rule: with the reveal on, an undo withdraws the vote; that item is not offered to the voter again."""
    from tests.voting.test_vote_page import current, login, start

    at = login(start(monkeypatch, seeded_url, strategy="uniform"))
    first = current(at)
    round_button(at, "vote_A").click().run()
    at.button(key="undo").click().run()
    assert not at.exception and current(at).item_id != first.item_id
    offered = []
    while at.session_state["round"] if "round" in at.session_state else None:
        offered.append(current(at).item_id)
        round_button(at, "vote_B").click().run()
        at.button(key="next").click().run()
    assert first.item_id not in offered and len(offered) == 3  # the other three items, then done
    votes = load_votes(open_store(seeded_url))
    assert first.item_id not in set(votes["item_id"]) and count_rows(open_store(seeded_url), "undone_votes") == 1


def test_a_second_undo_in_the_app_shows_no_traceback(monkeypatch, seeded_url):
    from tests.voting.test_vote_page import login, start

    at = login(start(monkeypatch, seeded_url, reveal="0"))
    for _ in range(2):
        round_button(at, "vote_A").click().run()
        at.button(key="undo").click().run()
        assert not at.exception and not at.error
    assert count_rows(open_store(seeded_url), "undone_votes") == 2


def test_unexpected_errors_show_one_line_and_log_the_detail(monkeypatch, seeded_url, caplog):
    import voting.writes
    from tests.voting.test_vote_page import login, shown_text, start
    from voting.pages.common import OOPS

    def broken(*_a, **_k):  # noqa: ANN002, ANN003, ANN202
        raise sa.exc.IntegrityError("INSERT INTO undone_votes (id) VALUES (?)", (7,), Exception("UNIQUE failed"))

    at = login(start(monkeypatch, seeded_url))
    monkeypatch.setattr(voting.writes, "vote_row", broken)
    with caplog.at_level("ERROR", logger="preflab.app"):
        round_button(at, "vote_A").click().run()
    assert not at.exception
    shown = shown_text(at) + " ".join(e.value for e in at.error)
    assert OOPS in shown and "undone_votes" not in shown and "INSERT" not in shown
    assert "undone_votes" in caplog.text  # the detail is in the server log


def test_csv_exports_neutralise_formulas(seeded_url, tmp_path):
    """OWASP CSV injection: voter-typed text starting with = + - @ tab CR is prefixed with ', in every CSV."""
    import io

    import pandas as pd
    from typer.testing import CliRunner

    from preflab.io import csv_safe
    from preflab_cli import app as cli
    from voting.votes import export_bytes

    frame = pd.DataFrame({"t": ["=1+1", "+x", "-y", "@SUM(A1)", "\tz", "\rw", "ok", None], "n": [-1.5] * 8})
    safe = csv_safe(frame)
    assert safe["t"].tolist()[:7] == ["'=1+1", "'+x", "'-y", "'@SUM(A1)", "'\tz", "'\rw", "ok"]
    assert safe["n"].tolist() == [-1.5] * 8 and frame["t"][0] == "=1+1"  # numbers kept, input not changed
    engine = open_store(seeded_url)
    evil = '=HYPERLINK("http://x","click")'
    record_vote(engine, Vote(evil, "tiny", "q001", "quokka-13b", "marmoset-70b", "A", reason="@SUM(1+1)"))
    votes = load_votes(engine)
    for kind in ("votes", "labels"):
        text = export_bytes(votes, kind).decode()
        cells = [c for row in pd.read_csv(io.StringIO(text), dtype=str).fillna("").to_numpy() for c in row]
        assert not [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r"))], (kind, cells)
    out = tmp_path / "v.csv"
    assert CliRunner().invoke(cli, ["export-votes", str(out), "--db", seeded_url, "--as", "votes"]).exit_code == 0
    assert "'=HYPERLINK" in out.read_text() and "'@SUM" in out.read_text()


def test_imports_refuse_huge_answers_long_and_invisible_names(sqlite_url):
    import pandas as pd
    import pytest

    from tests.voting.conftest import tiny_items
    from voting.items import MAX_TEXT_CHARS, ItemDataError, load_items
    from voting.store import import_items

    def with_(row: int, **change) -> pd.DataFrame:  # noqa: ANN003
        df = tiny_items(2)
        for col, value in change.items():
            df.loc[row, col] = value
        return df

    cases = [(with_(4, answer="x" * (MAX_TEXT_CHARS + 1)), "line 5: field 'answer': 100,001 characters"),
             (with_(1, model="m" * 250), "line 2: field 'model': 250 characters (at most 200)"),
             (with_(2, model="quokka\u200b-13b"), "invisible characters ['U+200B']"),
             (with_(0, item_id="q\u2060000"), "field 'item_id'")]
    for df, words in cases:
        with pytest.raises(ItemDataError, match=None) as e:
            load_items(df)
        assert words in str(e.value), str(e.value)
    engine = open_store(sqlite_url)
    with pytest.raises(ItemDataError, match="dataset"):
        import_items(engine, load_items(tiny_items(2)), "d" * 250)
    assert count_rows(engine, "items") == 0


def test_reveal_escapes_backticks_in_model_names():
    from voting.pages.common import code_span

    assert code_span("plain") == "`plain`"
    assert code_span("a`b") == "`` a`b ``" and code_span("x``y`") == "``` x``y` ```"
    from markdown_it import MarkdownIt

    html = MarkdownIt().render("**A** was " + code_span("evil` **bold** `x"))
    assert "<strong>bold</strong>" not in html and "<code>evil` **bold** `x</code>" in html


@pytest.mark.postgres
def test_long_names_on_postgresql_are_input_errors(pg_clean_url):
    from tests.voting.conftest import tiny_items
    from voting.items import ItemDataError, load_items
    from voting.store import import_items

    engine = open_store(pg_clean_url)
    with pytest.raises(ItemDataError, match="at most 200"):  # before: sqlalchemy.exc.DataError
        import_items(engine, load_items(tiny_items(1)), "d" * 250)
    with pytest.raises(ItemDataError, match="at most 200"):
        load_items(tiny_items(1).assign(model=lambda d: d["model"] + "x" * 240))
