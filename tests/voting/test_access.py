"""Access: invite links stored hashed, labelled rate-limited open voting, identity
across reloads, voters see only their own progress; admin gate banner, lockout, sign-out, data folder."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from tests.voting.conftest import round_button
from tests.voting.test_vote_page import APP, current, login, shown_text, start
from voting.access import invite_voter, issue_invite, revoke_invites
from voting.store import load_votes, open_store


def test_invites_are_stored_hashed_and_replaceable(seeded_url):
    engine = open_store(seeded_url)
    token = issue_invite(engine, "ann")
    assert invite_voter(engine, token) == "ann" and invite_voter(engine, token + "x") is None
    with engine.connect() as conn:
        stored = conn.exec_driver_sql("SELECT * FROM invites").fetchall()
    assert token not in repr(stored)  # only the hash is kept
    newer = issue_invite(engine, "ann")
    assert invite_voter(engine, token) is None and invite_voter(engine, newer) == "ann"
    assert revoke_invites(engine, "ann") == 1 and invite_voter(engine, newer) is None
    from voting.items import ItemDataError

    for bad in ("", "guest-123", "x" * 201):
        with pytest.raises(ItemDataError):
            issue_invite(engine, bad)


def reload(monkeypatch, at: AppTest, **env: str) -> AppTest:
    """A page reload: a new session with the same URL (query parameters)."""
    again = AppTest.from_file(APP, default_timeout=60)
    again.query_params.update(dict(at.query_params))
    return again.run()


def test_invite_link_signs_in_and_survives_a_reload(monkeypatch, seeded_url):
    token = issue_invite(open_store(seeded_url), "ann")
    monkeypatch.setenv("PREFLAB_DB", seeded_url)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["invite"] = token
    at.run()
    assert at.session_state["voter"] == "ann" and current(at)
    round_button(at, "vote_A").click().run()
    assert reload(monkeypatch, at).session_state["voter"] == "ann"
    bad = AppTest.from_file(APP, default_timeout=60)
    bad.query_params["invite"] = "not-a-token"
    bad.run()
    assert "not valid" in bad.error[0].value and "voter" not in bad.session_state


def test_open_voting_is_labelled_one_id_per_session_and_rate_limited(monkeypatch, seeded_url):
    at = start(monkeypatch, seeded_url, open_rate="2")
    assert "Open voting" in at.info[0].value
    login(at, None)
    guest = at.session_state["voter"]
    assert guest.startswith("guest-") and "Open voting" in " ".join(c.value for c in at.sidebar.caption)
    assert reload(monkeypatch, at).session_state["voter"] == guest  # a reload keeps the id
    at.button(key="sign_out").click().run()
    assert "voter" not in at.session_state
    login(at, None)
    assert at.session_state["voter"] == guest  # signing in again in this session: the same id, not a new one
    for _ in range(3):
        round_button(at, "vote_A").click().run()
        if "next" in [b.key for b in at.button]:
            at.button(key="next").click().run()
    assert len(load_votes(open_store(seeded_url))) == 2  # the third vote within a minute was refused
    assert current(at)  # ... and its round is still on screen


def test_voters_see_only_their_own_progress(monkeypatch, seeded_url):
    engine = open_store(seeded_url)
    from voting.store import Vote, record_vote

    record_vote(engine, Vote("secret-bob", "tiny", "q001", "quokka-13b", "marmoset-70b", "A"))
    at = login(start(monkeypatch, seeded_url))
    round_button(at, "vote_A").click().run()
    text = shown_text(at) + " ".join(e.label for e in at.get("expander"))
    assert "secret-bob" not in text and "Votes per voter" not in text
    assert not at.dataframe


def test_admin_unlock_does_not_survive_sign_out(monkeypatch, seeded_url):
    at = login(start(monkeypatch, seeded_url, admin_passcode="boss"))
    at.switch_page("voting/pages/data.py").run()
    at.text_input[0].input("boss")
    at.button[0].click().run()
    assert at.session_state["admin"] is True
    at.switch_page("voting/pages/vote.py").run()
    at.button(key="sign_out").click().run()
    assert "admin" not in at.session_state
    at.switch_page("voting/pages/data.py").run()
    assert "admin passcode" in at.info[0].value.lower() and not at.dataframe


def test_admin_lockout_is_counted_in_the_store_per_address_with_backoff(monkeypatch, seeded_url):
    """Wrong admin passcodes: "N tries left", then a lockout of that address only (not everyone's), counted
    in the store (a second process on it sees the same count), doubling after each further miss."""
    from voting import limits
    from voting.pages import common

    address = {"now": "198.51.100.7"}
    monkeypatch.setattr(common, "client_address", lambda cfg: address["now"])
    at = start(monkeypatch, seeded_url, admin_passcode="boss")
    at.switch_page("voting/pages/leaderboard.py").run()
    said = []
    for _ in range(limits.ADMIN_TRIES):
        at.text_input[0].input("guess")
        at.button[0].click().run()
        said.append(at.error[0].value)
    assert said[0] == "Wrong passcode. 4 tries left before a lockout." and "1 try left" in said[3]
    assert "locked for 5 minutes" in said[4]
    at.text_input[0].input("boss")  # even the right one is refused from this address while locked
    at.button[0].click().run()
    assert "Too many wrong passcodes" in at.error[0].value and "admin" not in at.session_state
    other_process = open_store(seeded_url)  # what another app process on the store reads
    wait, left = limits.admin_lock(other_process, "198.51.100.7")
    assert 290 < wait <= 300 and left == 0
    address["now"] = "203.0.113.9"  # someone else is not locked out by the guesser
    at.text_input[0].input("boss")
    at.button[0].click().run()
    assert at.session_state["admin"] is True
    later = time.time() + 301  # after the wait, one more miss doubles it
    assert limits.admin_lock(other_process, "198.51.100.7", now=later)[0] == 0
    limits.admin_failed(other_process, "198.51.100.7")
    assert 590 < limits.admin_lock(other_process, "198.51.100.7")[0] <= 600


def test_no_admin_passcode_shows_a_banner_and_the_cli_warns(monkeypatch, seeded_url):
    at = start(monkeypatch, seeded_url)
    for page in ("voting/pages/leaderboard.py", "voting/pages/data.py", "voting/pages/calibration.py"):
        at.switch_page(page).run()
        assert any("PREFLAB_ADMIN_PASSCODE" in w.value for w in at.warning), page


def test_calibration_opens_files_only_inside_the_data_folder(tmp_path, monkeypatch):
    from preflab.errors import InputError
    from voting.pages.calibration import inside_data_dir

    data = tmp_path / "data"
    (data / "runs").mkdir(parents=True)
    (data / "runs" / "v.jsonl").write_text("{}\n")
    monkeypatch.chdir(tmp_path)
    assert inside_data_dir("data/runs/v.jsonl", data) == (data / "runs" / "v.jsonl").resolve()
    assert inside_data_dir("runs/v.jsonl", "data") == (data / "runs" / "v.jsonl").resolve()
    for bad in ("/etc/shadow", "data/../../etc/passwd", "../x.jsonl"):
        with pytest.raises(InputError, match="outside the data folder"):
            inside_data_dir(bad, data)
    (data / "link.jsonl").symlink_to("/etc/hostname")
    with pytest.raises(InputError):
        inside_data_dir("data/link.jsonl", data)


def test_calibration_page_refuses_etc_shadow(monkeypatch, seeded_url):
    at = start(monkeypatch, seeded_url)
    at.switch_page("voting/pages/calibration.py").run()
    at.text_input(key="cal_path").input("/etc/shadow").run()
    assert not at.exception and "outside the data folder" in at.error[0].value
    assert not any("not valid JSON" in e.value for e in at.error)


def test_cli_invite_and_import(tmp_path):
    from typer.testing import CliRunner

    from preflab_cli import app as cli
    from tests.voting.conftest import tiny_items

    url = f"sqlite:///{tmp_path / 's.db'}"
    items = tmp_path / "mine.csv"
    tiny_items(3).to_csv(items, index=False)
    out = CliRunner().invoke(cli, ["import", str(items), "--dataset", "mine", "--db", url])
    assert out.exit_code == 0, out.output
    assert "3 items (9 answers from 3 models)" in out.output and "holds 0 votes" in out.output
    out = CliRunner().invoke(cli, ["invite", "ann", "bob", "--db", url, "--base-url", "http://h:1"])
    assert out.exit_code == 0, out.output
    links = dict(line.split("\t") for line in out.output.strip().splitlines())
    engine = open_store(url)
    assert invite_voter(engine, links["bob"].split("invite=")[1]) == "bob"
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM invites")).scalar() == 2
    assert Path(items).exists()


def test_category_in_every_export_and_rank_filters_by_it(seeded_url, tmp_path):
    """Item 11: the item's category travels with votes into every export; `preflab rank --filter` uses it."""
    import io
    import json

    import pandas as pd
    from typer.testing import CliRunner

    from preflab_cli import app as cli
    from tests.voting.conftest import tiny_items
    from voting.items import load_items
    from voting.store import Vote, import_items, record_vote
    from voting.votes import export_bytes

    engine = open_store(seeded_url)
    other = tiny_items(2).assign(category="poetry", item_id=lambda d: "p" + d["item_id"])
    import_items(engine, load_items(other), "tiny2")
    a, b, c = "zephyrine-7b", "quokka-13b", "marmoset-70b"
    for k, (x, y) in enumerate([(a, b), (b, c), (a, c)]):
        record_vote(engine, Vote(f"v{k}", "tiny", "q001", x, y, "A"))
        record_vote(engine, Vote(f"v{k}", "tiny2", "pq001", x, y, "B"))
    votes = load_votes(engine)
    assert sorted(votes["category"].unique()) == ["poetry", "test"]
    assert set(pd.read_csv(io.BytesIO(export_bytes(votes, "votes")))["category"]) == {"poetry", "test"}
    assert set(pd.read_csv(io.BytesIO(export_bytes(votes, "labels")))["category"]) == {"poetry", "test"}
    battles = json.loads(export_bytes(votes, "battles"))
    rows = battles if isinstance(battles, list) else next(v for v in battles.values() if isinstance(v, list))
    assert {r["category"] for r in rows} == {"poetry", "test"}
    path = tmp_path / "battles.json"
    path.write_bytes(export_bytes(votes, "battles"))
    out = CliRunner().invoke(cli, ["rank", str(path), "--filter", "category=poetry", "--bootstrap", "20"])
    assert out.exit_code == 0, out.output
    assert "removed 3 of 6 battles" in " ".join(out.output.split())


def test_leaderboard_page_exclude_diagnostics_categories_and_judge_vs_human(monkeypatch, tmp_path):
    """Item 12: an exclude-models control, notes in a Diagnostics expander in app words, a category filter,
    and the demo judge's ratings beside the human ones with rank correlation and the most-disagreeing pairs."""
    from typer.testing import CliRunner

    from preflab_cli import app as cli

    url = f"sqlite:///{tmp_path / 'demo.db'}"
    assert CliRunner().invoke(cli, ["demo-seed", "--db", url]).exit_code == 0
    monkeypatch.chdir(Path(APP).parent)  # data/demo/verdicts-smollm2.jsonl lies in the data folder
    at = start(monkeypatch, url)
    at.switch_page("voting/pages/leaderboard.py").run(timeout=300)
    at.select_slider(key="lb_boot").set_value(100).run(timeout=300)
    assert not at.exception
    at.multiselect(key="lb_exclude").set_value(["comet-sloppy"]).run(timeout=300)
    table = at.dataframe[0].value
    assert "comet-sloppy" not in set(table["model"]) and len(table) == 4
    shown = " ".join(m.value for m in at.markdown) + " ".join(i.value for i in at.info)
    assert "exclude_models" not in shown and "n_bootstrap" not in shown
    assert not at.info or all("bootstrap replicates" not in i.value for i in at.info)  # notes: in the expander
    cats = at.multiselect(key="lb_categories")
    assert cats.options
    at.selectbox(key="lb_verdicts").set_value("data/demo/verdicts-smollm2.jsonl").run(timeout=300)
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    rho = metrics["Spearman's rho"]  # the tiny demo judge rates every model alike: no ranking, shown as —
    assert (rho == "—" or -1.0 <= float(rho) <= 1.0) and int(metrics["Shared items"]) > 0
    pairs = at.dataframe[-1].value  # the last table: where they disagree most
    assert {"share_human", "share_judge", "gap"} <= set(pairs.columns)
    assert pairs["gap"].is_monotonic_decreasing
    at.multiselect(key="lb_categories").set_value([cats.options[0]]).run(timeout=300)
    assert not at.exception and at.dataframe[0].value["battles"].sum() < table["battles"].sum()


def test_judge_vs_human_compare_against_scipy():
    import pandas as pd
    from scipy.stats import spearmanr

    from judge_arena.battles_from_verdicts import verdict_battles
    from judge_arena.versus_human import compare, pair_win_shares

    verdicts = pd.DataFrame({"item_id": ["i1", "i2"], "model_x": ["a", "b"], "model_y": ["b", "c"],
                             "judge_xy": [0.0, 2.0], "judge_yx": [1.0, float("nan")]})
    b = verdict_battles(verdicts)
    # i1 xy: a (x) wins; i1 yx: b shown first, code 1 = y = b wins -> model_a; i2 xy tie; i2 yx unparsed
    assert b["winner"].tolist() == ["model_a", "tie", "model_a"] and b["model_a"].tolist() == ["a", "b", "b"]
    shares = pair_win_shares(b).set_index(["model_1", "model_2"])
    assert shares.loc[("a", "b"), "share"] == 0.5 and shares.loc[("b", "c"), "share"] == 0.5
    h = pd.DataFrame({"model": list("abcd"), "rating": [4.0, 3.0, 2.0, 1.0]})
    j = pd.DataFrame({"model": list("abcd"), "rating": [3.0, 4.0, 1.0, 2.0]})
    res = compare(h, j, b, b)
    assert res["spearman"] == pytest.approx(spearmanr([4, 3, 2, 1], [3, 4, 1, 2]).statistic)


def test_data_page_issues_invite_links(monkeypatch, seeded_url):
    at = start(monkeypatch, seeded_url)
    at.switch_page("voting/pages/data.py").run()
    at.text_area(key="invite_names").input("ann\nbob").run()
    at.button(key="invite_go").click().run()
    assert not at.exception
    links = at.dataframe[-1].value.set_index("voter")["link"]
    engine = open_store(seeded_url)
    assert [invite_voter(engine, links[v].split("invite=")[1]) for v in ("ann", "bob")] == ["ann", "bob"]
