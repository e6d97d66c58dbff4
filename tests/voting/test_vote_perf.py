"""The vote page's cost per rerun does not grow with stored votes; what a rerun shows (line breaks, the
judging criteria, the Undo countdown) and that it shows nothing by accident (Streamlit "magic")."""

from __future__ import annotations

import time

import sqlalchemy as sa

from tests.voting.conftest import round_button
from tests.voting.test_vote_page import login, shown_text, start
from voting.store import count_rows, load_votes, open_store, set_criteria, vote_tallies, votes_t


def _bulk_votes(url: str, n: int) -> None:
    """``n`` stored votes on the tiny dataset (one voter each, so the unique key holds), through the ORM
    path that every writer uses (the triggers keep the counts)."""
    engine = open_store(url)
    models = ("zephyrine-7b", "quokka-13b", "marmoset-70b")
    rows = []
    for k in range(n):
        a, b = models[k % 3], models[(k + 1) % 3]
        rows.append(dict(voter=f"bulk-{k}", dataset="tiny", item_id=f"q{k % 4:03d}", round=1, model_left=a,
                         model_right=b, shown_order="xy" if a < b else "yx", outcome="win",
                         winner_model=a if k % 2 else b, voted_at=1e9 + k))
    with engine.begin() as conn:
        for start_ in range(0, n, 20_000):
            conn.execute(votes_t.insert(), rows[start_:start_ + 20_000])
    engine.dispose()


class RowCounter:
    """Every SELECT the app runs (SQLAlchemy event), re-run afterwards to count the rows it returned."""

    def __init__(self) -> None:
        self.statements: list[tuple[str, object]] = []

    def __enter__(self) -> RowCounter:
        sa.event.listen(sa.engine.Engine, "after_cursor_execute", self._seen)
        return self

    def __exit__(self, *exc: object) -> None:
        sa.event.remove(sa.engine.Engine, "after_cursor_execute", self._seen)

    def _seen(self, conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
        if statement.lstrip().upper().startswith(("SELECT", "WITH")):
            self.statements.append((statement, parameters))

    def rows(self, url: str) -> list[int]:
        engine = open_store(url)
        with engine.connect() as conn:
            out = [len(conn.exec_driver_sql(s, p).fetchall()) for s, p in self.statements]
        engine.dispose()
        return out


def _rows_per_click(monkeypatch, url: str) -> list[int]:
    at = login(start(monkeypatch, url))
    with RowCounter() as counter:
        round_button(at, "vote_A").click().run()
        at.button(key="next").click().run()
    assert not at.exception and "round" in at.session_state
    return counter.rows(url)


def test_rows_read_per_rerun_do_not_grow_with_stored_votes(monkeypatch, seeded_url, tmp_path):
    from tests.voting.conftest import tiny_items
    from voting.items import load_items
    from voting.store import import_items

    big = f"sqlite:///{tmp_path / 'big.db'}"
    import_items(open_store(big), load_items(tiny_items()), "tiny")
    _bulk_votes(seeded_url, 1_000)
    _bulk_votes(big, 100_000)
    assert int(vote_tallies(open_store(big), "tiny")["n"].sum()) == count_rows(open_store(big)) == 100_000
    small_rows, big_rows = _rows_per_click(monkeypatch, seeded_url), _rows_per_click(monkeypatch, big)
    assert len(small_rows) == len(big_rows), "the number of queries per click depends on the stored votes"
    assert max(big_rows) <= 100 and sum(big_rows) <= sum(small_rows) + 20, (small_rows, big_rows)


def test_counts_follow_votes_undo_and_a_store_from_before_the_counts_table(seeded_url):
    engine = open_store(seeded_url)
    _bulk_votes(seeded_url, 50)
    with engine.begin() as conn:  # undo-style delete: the trigger takes the vote out of the counts
        conn.execute(votes_t.delete().where(votes_t.c.voter.in_(["bulk-0", "bulk-1"])))
        conn.exec_driver_sql("DROP TABLE vote_counts")  # an old store: counted once when opened again
    engine.dispose()
    tallies = vote_tallies(open_store(seeded_url), "tiny")
    votes = load_votes(open_store(seeded_url))
    expect = votes.groupby(["item_id", "model_left", "model_right", "winner_model"]).size().sort_index()
    got = tallies.set_index(["item_id", "model_left", "model_right", "winner_model"])["n"].sort_index()
    assert int(got.sum()) == 48 and got.to_dict() == expect.to_dict()


def test_no_magic_output_in_the_sidebar(monkeypatch, seeded_url):
    """A bare ``a if c else b`` expression of elements made Streamlit ``st.write`` a DeltaGenerator."""
    at = login(start(monkeypatch, seeded_url))
    round_button(at, "vote_A").click().run()
    at.button(key="next").click().run()
    kinds = {type(e).__name__ for e in at.sidebar} | {e.type for e in at.sidebar if hasattr(e, "type")}
    assert not at.get("help") and not at.get("doc_string") and "help" not in kinds, kinds


def test_judging_criteria_before_the_first_vote_and_on_demand(monkeypatch, seeded_url):
    set_criteria(open_store(seeded_url), "tiny", "Prefer **correct** answers over long ones.")
    at = login(start(monkeypatch, seeded_url))
    assert "Prefer **correct** answers" in shown_text(at)
    assert [b for b in at.button if b.key == "criteria_ok"]
    assert not [b for b in at.button if (b.key or "").startswith("vote_A-")]
    at.button(key="criteria_ok").click().run()
    assert [b for b in at.button if (b.key or "").startswith("vote_A-")]
    assert any("Prefer **correct** answers" in m.value for m in at.sidebar.markdown)  # on demand


def test_undo_button_counts_down(monkeypatch, seeded_url):
    at = login(start(monkeypatch, seeded_url, undo_seconds="20"))
    round_button(at, "vote_A").click().run()
    first = at.button(key="undo").label
    time.sleep(2.1)
    at.run()
    second = at.button(key="undo").label
    n1, n2 = (int(label.split("(")[1].split()[0]) for label in (first, second))
    assert 18 <= n1 <= 20 and n2 <= n1 - 2, (first, second)


def test_leaderboard_from_database_counts_equals_the_fit_on_every_vote(tmp_path):
    """The leaderboard page fits the SQL-counted cells; the same fit as on the loaded battles."""
    import numpy as np
    from typer.testing import CliRunner

    from arena.leaderboard import fit_leaderboard
    from arena.leaderboard_options import IntervalOptions
    from preflab_cli import app as cli
    from voting.assign import tally_counts
    from voting.store import pair_outcome_counts
    from voting.votes import votes_to_battles

    url = f"sqlite:///{tmp_path / 'demo.db'}"
    assert CliRunner().invoke(cli, ["demo-seed", "--db", url]).exit_code == 0
    engine = open_store(url)
    cells = pair_outcome_counts(engine, "demo")
    filtered = pair_outcome_counts(engine, "demo", since=0.0)  # the GROUP BY path over the votes
    key = ["model_left", "model_right", "outcome", "winner_model"]
    assert cells.sort_values(key).fillna("").values.tolist() == filtered.sort_values(key).fillna("").values.tolist()
    models = sorted(set(cells["model_left"]) | set(cells["model_right"]))
    from_counts = fit_leaderboard(tally_counts(cells, models), IntervalOptions(n_bootstrap=50)).table.set_index("model")
    # the page counts votes per model pair, so its unit is the battle (the loaded votes' items would cluster)
    from_votes = fit_leaderboard(votes_to_battles(load_votes(engine, "demo")),
                                 IntervalOptions(n_bootstrap=50, unit="battle")).table.set_index("model")
    assert int(cells["n"].sum()) == count_rows(engine)
    for col in ("rating", "lower", "upper", "battles", "wins", "ties"):
        np.testing.assert_allclose(from_counts[col], from_votes.loc[from_counts.index, col], rtol=1e-6)


def test_criteria_are_set_on_the_data_page(monkeypatch, seeded_url):
    from voting.store import get_criteria

    at = start(monkeypatch, seeded_url)
    at.switch_page("voting/pages/data.py").run()
    at.text_area(key="criteria_tiny").input("Be **strict**.")
    at.button(key="criteria_save").click().run()
    assert not at.exception and get_criteria(open_store(seeded_url), "tiny") == "Be **strict**."


def test_app_start_warms_the_leaderboard_imports(seeded_url):
    """The first page a server renders starts one background import of the leaderboard's statistics (JAX),
    so the first leaderboard render does not pay for it; the vote page itself does not import them."""
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "import os, sys\n"
        "from streamlit.testing.v1 import AppTest\n"
        f"os.environ['PREFLAB_DB'] = {seeded_url!r}\n"
        "at = AppTest.from_file('app.py', default_timeout=120).run()\n"
        "import voting.app\n"
        "t = voting.app.warm_thread\n"
        "assert t is not None and t.name == 'preflab-warm-imports', t\n"
        "assert voting.app.warm_imports() is t  # once per process\n"
        "t.join(120)\n"
        "assert 'arena.leaderboard' in sys.modules and 'jax' in sys.modules\n"
        "print('warm ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0 and "warm ok" in out.stdout, out.stderr[-2000:]
