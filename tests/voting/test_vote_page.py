"""The voting page's flows through Streamlit's AppTest (vote, undo, skip, no repeats, reveal, gates)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.voting.conftest import EVIL, MODELS, round_button
from voting.rounds import ShownRound, issue
from voting.store import load_votes, open_store

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def start(monkeypatch, url: str, **env: str) -> AppTest:
    monkeypatch.setenv("PREFLAB_DB", url)
    for key, value in env.items():
        monkeypatch.setenv(f"PREFLAB_{key.upper()}", value)
    return AppTest.from_file(APP, default_timeout=60).run()


def login(at: AppTest, name: str | None = "ann", passcode: str | None = None) -> AppTest:
    """Sign in with a fresh invite code for ``name`` (issued in the store as an admin would), or as an
    open-voting guest when ``name`` is None."""
    import os

    from voting.access import issue_invite

    code = issue_invite(open_store(os.environ["PREFLAB_DB"]), name) if name else ""
    at.text_input(key="invite_code").input(code)
    if passcode is not None:
        at.text_input[1].input(passcode)
    at.button[0].click().run()
    assert not at.exception
    return at


def shown_text(at: AppTest) -> str:
    """Everything a voter can read on the page (main area and sidebar)."""
    parts = [m.value for m in at.markdown] + [b.label for b in at.button] + [c.value for c in at.caption]
    parts += [s.value for s in at.success] + [t.value for t in at.title] + [str(p.proto) for p in at.get("progress")]
    parts += [h.proto.body for h in at.get("html")]  # the progress, prompt and answers (voting.pages.pair_html)
    return "\n".join(parts)


def pair_body(at: AppTest) -> str:
    """The HTML of the progress, prompt and answers (one ``st.html`` element)."""
    bodies = [h.proto.body for h in at.get("html") if "data-item=" in h.proto.body]
    assert len(bodies) == 1, f"{len(bodies)} pair elements"
    return bodies[0]


def current(at: AppTest) -> ShownRound:
    """The round on the voter's screen, as the page keeps it (typed: :class:`voting.rounds.ShownRound`)."""
    shown = at.session_state["round"]
    assert isinstance(shown, ShownRound), f"the session keeps the round as {type(shown).__name__}"
    return shown


def test_blind_vote_reveal_and_next(monkeypatch, seeded_url):
    at = login(start(monkeypatch, seeded_url))
    rnd = current(at)
    assert not any(m in shown_text(at) for m in MODELS), "a model name is visible before the vote"
    assert "You: 0 of 4 items" in shown_text(at)
    at.text_input(key="reason").input("more precise")
    round_button(at, "vote_B").click().run()
    row = load_votes(open_store(seeded_url)).iloc[0]
    assert (row.voter, row.item_id, row.model_left, row.model_right) == ("ann", rnd.item_id, rnd.left,
                                                                         rnd.right)
    assert row.winner_model == rnd.right and row.reason == "more precise"
    text = shown_text(at)
    assert f"**A** was `{rnd.left}`" in text and f"**B** was `{rnd.right}`" in text
    assert "Vote saved: B is better." in text
    at.button(key="next").click().run()
    assert current(at).item_id != rnd.item_id
    assert "You: 1 of 4 items" in shown_text(at)


def _elements(node) -> list:  # noqa: ANN001
    """Every element under ``node`` of AppTest's tree, depth first."""
    out = []
    for child in getattr(node, "children", {}).values():
        out += [child, *_elements(child)]
    return out


def test_key_queue_installer_is_the_same_html_on_every_run(monkeypatch, seeded_url):
    """The browser keeps an element whose HTML did not change; a key-queue installer that embedded the run
    number was replaced (and its iframe reloaded) on every run, in every voter's tab."""
    at = login(start(monkeypatch, seeded_url))

    def installer() -> list[str]:
        return [str(e.proto) for e in _elements(at.main) if "__preflabQueue" in str(e.proto)]

    runs = [installer()]
    round_button(at, "vote_A").click().run()
    runs.append(installer())
    at.button(key="next").click().run()
    runs.append(installer())
    assert len(runs[0]) == 1 and runs[0] == runs[1] == runs[2]


def _tree(at: AppTest) -> dict[tuple, str]:
    """The main area's elements by their place (indices from the root): their protobuf text."""
    out: dict[tuple, str] = {}

    def walk(node, path: tuple) -> None:  # noqa: ANN001
        for k, child in getattr(node, "children", {}).items():
            out[path + (k,)] = f"{type(child).__name__} {getattr(child, 'proto', '')}"
            walk(child, path + (k,))

    walk(at.main, ())
    return out


def _pair_place(tree: dict[tuple, str]) -> tuple:
    """The place of the one element that shows the progress, prompt and answers."""
    places = [p for p in sorted(tree) if "preflab-pair" in tree[p] and "data-item=" in tree[p]]
    assert len(places) == 1, places
    return places[0]


def test_the_answers_stay_as_they_are_from_vote_to_reveal(monkeypatch, seeded_url):
    """Vote -> reveal sends no new pair: the prompt and answers stay unchanged in the same place (the browser
    keeps them and redraws only the bar under them); Next and Skip put the new pair in the same place (an
    update of one element, not new elements), the Skip message after it."""
    at = login(start(monkeypatch, seeded_url))
    before = _tree(at)
    place = _pair_place(before)
    rnd = current(at)
    assert f'data-item="{rnd.item_id}"' in pair_body(at) and "Prompt number" in before[place]
    round_button(at, "vote_A").click().run()
    after = _tree(at)  # AppTest reruns the whole page (the browser only the bar): the progress moved on
    assert after[place].split("<h4>Prompt")[1] == before[place].split("<h4>Prompt")[1]
    assert "Vote saved" in shown_text(at)
    kind = before[place].split(" ")[0]
    for click in ("next", "skip"):
        item = [h.proto.body for h in at.get("html") if "data-item=" in h.proto.body]
        round_button(at, click).click().run()
        new = _tree(at)
        assert [h.proto.body for h in at.get("html") if "data-item=" in h.proto.body] != item
        assert _pair_place(new) == place and new[place].split(" ")[0] == kind
    assert at.toast and "Skipped" in at.toast[0].value


def test_reveal_can_be_turned_off(monkeypatch, seeded_url):
    at = login(start(monkeypatch, seeded_url, reveal="0"))
    round_button(at, "vote_A").click().run()
    assert "Vote saved" in shown_text(at)
    assert not any(m in shown_text(at) for m in MODELS)


def test_undo_restores_the_same_round_and_deletes_the_row(monkeypatch, seeded_url):
    at = login(start(monkeypatch, seeded_url, reveal="0"))  # nothing revealed: the same round comes back
    rnd = current(at)
    round_button(at, "vote_A").click().run()
    assert len(load_votes(open_store(seeded_url))) == 1
    at.button(key="undo").click().run()
    assert len(load_votes(open_store(seeded_url))) == 0
    again = current(at)
    assert (again.item_id, again.left, again.right) == (rnd.item_id, rnd.left, rnd.right)
    round_button(at, "vote_tie").click().run()
    votes = load_votes(open_store(seeded_url))
    assert votes["outcome"].tolist() == ["tie"] and votes["winner_model"].isna().all()


@pytest.mark.parametrize("button", ["vote_A", "skip"])
def test_a_click_on_an_earlier_rounds_bar_is_not_applied_to_the_new_pair(monkeypatch, seeded_url, button):
    # a click sent while Skip was still loading the next pair reaches the server after the new round was
    # drawn there: it must not vote on (or skip) a pair the voter has not seen
    at = login(start(monkeypatch, seeded_url, strategy="uniform"))
    old = current(at)
    other = next(i for i in ("q000", "q001", "q002", "q003") if i != old.item_id)
    new = issue(open_store(seeded_url), "ann", "tiny", other, old.left, old.right, old.prompt)
    at.session_state["round"] = new  # the server moved on; the click below is the bar drawn for `old`
    round_button(at, button).click().run()
    store = open_store(seeded_url)
    assert len(load_votes(store)) == 0
    assert current(at).item_id == new.item_id  # the new pair stays, to be read and voted on
    round_button(at, "vote_A").click().run()  # the bar drawn for the new round counts
    assert load_votes(store)["item_id"].tolist() == [new.item_id]


def test_undo_window_closes(monkeypatch, seeded_url):
    at = login(start(monkeypatch, seeded_url, undo_seconds="0"))
    round_button(at, "vote_A").click().run()
    assert at.button(key="undo").disabled
    assert len(load_votes(open_store(seeded_url))) == 1


def test_skip_and_no_repeats_until_done(monkeypatch, seeded_url):
    at = login(start(monkeypatch, seeded_url, strategy="uniform"))
    seen = []
    for k in range(4):
        seen.append(current(at).item_id)
        if k == 1:
            round_button(at, "skip").click().run()
        else:
            round_button(at, "vote_bothbad").click().run()
            at.button(key="next").click().run()
    assert sorted(seen) == ["q000", "q001", "q002", "q003"]  # every item once, none twice
    assert "You have seen every item available to you" in shown_text(at)
    votes = load_votes(open_store(seeded_url))
    assert sorted(votes["item_id"]) == sorted(set(seen) - {seen[1]})
    assert (votes["outcome"] == "tie (bothbad)").all()


def test_overlap_limits_votes_per_item(monkeypatch, seeded_url):
    for voter in ("ann", "bob"):
        at = login(start(monkeypatch, seeded_url, overlap="1"), voter)
        while "round" in at.session_state and at.session_state["round"]:
            round_button(at, "vote_A").click().run()
            at.button(key="next").click().run()
    votes = load_votes(open_store(seeded_url))
    assert len(votes) == 4 and votes["item_id"].is_unique  # ann took every item; bob got none
    assert set(votes["voter"]) == {"ann"}


def test_answers_render_as_markdown_without_html(monkeypatch, seeded_url):
    """The item with an HTML attack (q000): both answers are shown, their HTML as escaped text (a <script> or
    <img onerror> never becomes an element), the fenced code as an escaped code block."""
    import html

    at = login(start(monkeypatch, seeded_url))
    for _ in range(4):
        if current(at).item_id == "q000":
            break
        round_button(at, "skip").click().run()
    body = pair_body(at)
    assert body.count(html.escape(EVIL)) == 2, body  # both answers, as text
    assert "<script" not in body.lower() and "<img" not in body.lower() and "onerror=\"" not in body
    assert body.count("<pre><code class=\"language-python\">print('&lt;b&gt;not bold&lt;/b&gt;')") == 2
    assert not [h for h in at.get("html") if h.proto.unsafe_allow_javascript and "data-item=" in h.proto.body]


def test_voter_passcode(monkeypatch, seeded_url):
    at = start(monkeypatch, seeded_url, passcode="s3cret")
    login_fail = login(at, "ann", "wrong")
    assert "Wrong passcode" in " ".join(e.value for e in login_fail.error)
    assert "voter" not in at.session_state
    login(at, "ann", "s3cret")
    assert at.session_state["voter"] == "ann" and current(at)


def test_invite_only_refuses_a_missing_code(monkeypatch, seeded_url):
    at = login(start(monkeypatch, seeded_url, access="invite"), None)
    assert "by invitation" in at.error[0].value and "voter" not in at.session_state


def test_empty_store_says_what_to_do(monkeypatch, sqlite_url):
    at = login(start(monkeypatch, sqlite_url))
    assert "preflab demo-seed" in at.warning[0].value


@pytest.mark.parametrize("page", ["voting/pages/leaderboard.py", "voting/pages/data.py",
                                  "voting/pages/calibration.py"])
def test_admin_pages_are_gated(monkeypatch, seeded_url, page):
    at = start(monkeypatch, seeded_url, admin_passcode="boss")
    at.switch_page(page).run()
    assert "admin passcode" in at.info[0].value.lower()
    assert not at.dataframe and not at.get("file_uploader") and not at.selectbox
    at.text_input[0].input("nope")
    at.button[0].click().run()
    assert "Wrong passcode" in at.error[0].value and "admin" not in at.session_state
    at.text_input[0].input("boss")
    at.button[0].click().run()
    assert not at.exception and at.session_state["admin"] is True
    assert not any("admin passcode" in i.value.lower() for i in at.info)
    assert at.selectbox or at.warning  # the page's own content (filters, or "not enough votes")


def test_pages_open_without_a_passcode(monkeypatch, seeded_url):
    at = start(monkeypatch, seeded_url)
    at.switch_page("voting/pages/data.py").run()
    assert not at.exception and "tiny" in at.dataframe[0].value["dataset"].tolist()


@pytest.mark.postgres
def test_vote_and_undo_on_postgresql(monkeypatch, pg_clean_url):
    from tests.voting.conftest import tiny_items
    from voting.items import load_items
    from voting.store import import_items

    import_items(open_store(pg_clean_url), load_items(tiny_items()), "tiny")
    at = login(start(monkeypatch, pg_clean_url, reveal="0"))
    rnd = current(at)
    round_button(at, "vote_A").click().run()
    votes = load_votes(open_store(pg_clean_url))
    assert votes[["item_id", "model_left", "winner_model"]].values.tolist() == [[rnd.item_id, rnd.left,
                                                                                 rnd.left]]
    at.button(key="undo").click().run()
    assert load_votes(open_store(pg_clean_url)).empty and current(at).item_id == rnd.item_id


def test_leaderboard_page_fits_the_demo_votes_with_length_control(monkeypatch, tmp_path):
    """The demo store's leaderboard: five rated models, then style control on length alone."""
    from typer.testing import CliRunner

    from preflab_cli import app as cli

    url = f"sqlite:///{tmp_path / 'demo.db'}"
    assert CliRunner().invoke(cli, ["demo-seed", "--db", url]).exit_code == 0
    at = start(monkeypatch, url)
    at.switch_page("voting/pages/leaderboard.py").run(timeout=180)
    assert not at.exception
    table = at.dataframe[0].value
    assert sorted(table["model"]) == ["atlas-terse", "beacon-verbose", "comet-sloppy", "delta-padded",
                                      "ember-balanced"]
    assert table["rating"].between(800, 1200).all() and (table["lower"] < table["rating"]).all()
    at.multiselect(key="lb_style").set_value(["length"]).run(timeout=180)
    assert not at.exception
    styled = at.dataframe[0].value
    assert styled["rating"].between(600, 1400).all()  # length alone stays identifiable on the demo data
    assert any("Style coefficients" in m.value for m in at.markdown)


def test_calibration_page_scores_the_bundled_smollm2_verdicts(monkeypatch, tmp_path):
    """The demo's judge file (SmolLM2 via llama.cpp on data/demo/pairs.jsonl) against the demo votes."""
    from typer.testing import CliRunner

    from preflab_cli import app as cli

    url = f"sqlite:///{tmp_path / 'demo.db'}"
    assert CliRunner().invoke(cli, ["demo-seed", "--db", url]).exit_code == 0
    monkeypatch.chdir(Path(APP).parent)  # the app finds verdict files under data/, as `preflab app` runs it
    at = start(monkeypatch, url)
    at.switch_page("voting/pages/calibration.py").run(timeout=180)
    at.selectbox(key="cal_pick").set_value("data/demo/verdicts-smollm2.jsonl").run(timeout=300)
    assert not at.exception
    rows = at.table[0].value["value"]
    assert rows["position consistency"].startswith("0.000 [")  # the tiny judge answers "A" whatever the order
    assert float(rows["first-slot rate (2P verdicts; CI over pairs)"].split()[0]) > 0.95
    assert any("Do not use for" in m.value for m in at.error)


def test_the_calibration_page_leads_with_the_verdict_and_names_an_upload_by_its_own_name(monkeypatch, tmp_path):
    """Before: agreement 0.446 (the humans' tie rate) in large type for a judge with kappa 0.00, and the card
    showed the server's temporary copy of the upload (``/tmp/preflab-upload-.../``)."""
    import tempfile

    from typer.testing import CliRunner

    from judge.cards.card import NOTHING_USABLE
    from preflab_cli import app as cli

    url = f"sqlite:///{tmp_path / 'demo.db'}"
    assert CliRunner().invoke(cli, ["demo-seed", "--db", url]).exit_code == 0
    at = start(monkeypatch, url)
    at.switch_page("voting/pages/calibration.py").run(timeout=180)
    verdicts = Path(APP).parent / "data" / "demo" / "verdicts-smollm2.jsonl"
    at.file_uploader(key="cal_upload").set_value(("judge-verdicts.jsonl", verdicts.read_bytes(),
                                                 "application/jsonl")).run(timeout=300)
    assert not at.exception
    assert not at.metric  # no number in large type: the verdict leads
    assert [w.value for w in at.warning][-1:] == [f"**Usable for:** {NOTHING_USABLE}."]
    avoid = at.error[0].value
    assert avoid.startswith("**Do not use for:**") and "kappa 0.00 [0.00, 0.00] does not exclude 0" in avoid
    card = next(h.proto.body for h in at.get("html") if "Judge card" in h.proto.body)
    shown = card + " ".join(m.value for m in [*at.markdown, *at.caption, *at.error, *at.warning])
    assert "judge-verdicts.jsonl" in card
    assert "preflab-upload" not in shown and tempfile.gettempdir() not in shown


def test_the_session_keeps_typed_rounds(monkeypatch, seeded_url):
    """The page keeps the pair on screen as a voting.rounds.ShownRound and the vote just cast as a VotedRound
    (frozen values, not dicts); an undo with nothing revealed puts a new round of the same pair back."""
    from voting.rounds import VotedRound

    at = login(start(monkeypatch, seeded_url, reveal="0"))
    rnd = current(at)
    round_button(at, "vote_A").click().run()
    last = at.session_state["last_vote"]
    assert isinstance(last, VotedRound) and last.shown == rnd and last.choice == "A" and last.mine == 1
    assert "round" not in at.session_state
    assert last.vote_id == load_votes(open_store(seeded_url))["id"].iloc[0]
    at.button(key="undo").click().run()
    again = current(at)
    assert (again.item_id, again.left, again.right) == (rnd.item_id, rnd.left, rnd.right)
    assert again.round_id != rnd.round_id and "last_vote" not in at.session_state
