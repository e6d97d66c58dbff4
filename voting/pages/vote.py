"""The blind voting page: a prompt, answers "A" and "B" on randomised sides, names only after the vote.

Keyboard: 1 = A is better, 2 = B is better, 3 = tie, 4 = both are bad, S = skip; after the vote
U = undo, N = next (queued in the browser while the page redraws; a key pressed under one pair never acts on
the next one; see :mod:`voting.pages.keyboard`). Each pair is a round drawn in the store
(:func:`voting.store.issue_round`); its buttons' keys carry the round id, and the vote's transaction checks
and uses it, so a click, key or replayed message can only vote on the pair it was made under, once, and not
sooner than ``PREFLAB_MIN_SECONDS`` after the pair was drawn. The progress bars, the prompt and the answers
are one block of HTML rendered on the server (:mod:`voting.pages.pair_html`: Markdown with raw HTML shown
as text, line breaks kept, code plain), in equal-height boxes that scroll. After the vote they stay as they are;
only the bar under them changes: it is a fragment inside the pair's fragment, so a vote is not sent the pair again.

Per rerun the page reads only what is bounded by the dataset's size: the vote counts per (item, pair,
outcome) and this voter's own items; items, models and answers are cached per dataset version.
"""

from __future__ import annotations

import secrets
import time

import numpy as np
import streamlit as st

from voting.assign import votes_per_item
from voting.pages.common import (
    AppConfig,
    cached_answers,
    cached_items,
    code_span,
    get_config,
    get_engine,
    guarded,
    pick_dataset,
)
from voting.pages.keyboard import keyboard_queue, undo_countdown
from voting.pages.pair_html import pair_html, progress_html
from voting.pages.reading_script import close_sidebar_on_phone, new_pair, show_mine
from voting.pages.voter_gate import open_rate_checks, voter_gate
from voting.rounds import ShownRound, VotedRound, pair_to_show, reissue
from voting.store import (
    DuplicateVote,
    Vote,
    VoteChecks,
    VoteRefused,
    get_criteria,
    record_skip,
    record_vote,
    seen_items,
    undo_vote,
    vote_tallies,
)
from voting.votes import style_meta

BUTTONS = (("A", "A is better", "1", ":material/arrow_back:"), ("B", "B is better", "2", ":material/arrow_forward:"),
           ("tie", "Tie", "3", ":material/drag_handle:"), ("bothbad", "Both are bad", "4", ":material/thumb_down:"))
SAID = {"A": "A is better", "B": "B is better", "tie": "a tie", "bothbad": "both are bad"}
KEYS = {key: f"vote_{choice}" for choice, _, key, _ in BUTTONS} | {"s": "skip", "u": "undo", "n": "next"}
BOUND = (*(f"vote_{choice}" for choice, *_ in BUTTONS), "skip")  # their buttons' keys end in "-<round id>"
HELP = [(key, label) for _, label, key, _ in BUTTONS] + [("S", "Skip this pair"), ("U", "Undo the vote (after it)"),
                                                          ("N", "Next pair (after the vote)"), ("?", "This help")]
ANSWER_HEIGHT = 300  # px at most: equal boxes that scroll, shorter on short screens (the vote bar stays on screen)
PAIR = "pair"  # the key of the pair's fragment: Skip, Next and a withdrawn vote rerun it (a vote reruns the bar)
PROMPT_HEIGHT = 130  # px, for prompts longer than fit in a few lines
GENERIC_CRITERIA = ("Pick the answer that serves the person who asked better: correct, helpful, clear. "
                    "Length is not a virtue by itself. Use **Tie** when they are equally good and **Both are "
                    "bad** when neither is acceptable.")


def _shown_pair(cfg: AppConfig, dataset: str, voter: str, tallies) -> ShownRound | None:  # noqa: ANN001
    """The pair on screen, or the voter's next one (:func:`voting.rounds.pair_to_show`)."""
    rng = st.session_state.setdefault("rng", np.random.default_rng(secrets.randbits(64)))
    items, prompts = cached_items(dataset)
    return pair_to_show(get_engine(), voter, dataset, st.session_state.get("round"), items, prompts, tallies, rng,
                        cfg.strategy, cfg.overlap, cfg.round)


def _stale(rnd: ShownRound | None, round_id: str) -> bool:
    """True when a click was made under another round than the one on screen (e.g. clicked while Skip was
    loading the next pair): applying it would vote on, or skip, a pair the voter has not seen."""
    if rnd is not None and rnd.round_id == round_id:
        return False
    st.session_state["flash"] = "The pair changed before your click arrived: read this one, then vote."
    return True


REFUSED = {
    "stale": "The pair changed before your click arrived: read this one, then vote.",
    "fast": "That was fast: read both answers, then vote.",
    "rate": "That is many votes in a minute: take a moment to read both answers, then vote again.",
}


@guarded
def _cast(choice: str, round_id: str) -> None:
    """Button callback: store the vote in one transaction (which checks and uses the round), then switch to
    the after-vote panel."""
    state, cfg = st.session_state, get_config()
    rnd, last = state.get("round"), state.get("last_vote")
    if rnd is None and last is not None and last.shown.round_id == round_id:
        return  # a second click on a round already voted on
    if _stale(rnd, round_id):
        st.rerun(scope=PAIR)  # the pair shown may be the old one: send the current one
    answers = cached_answers(rnd.dataset, rnd.item_id)
    vote = Vote(state["voter"], rnd.dataset, rnd.item_id, rnd.left, rnd.right, choice,  # type: ignore[arg-type]
                rnd.shown_at, state.get("reason", "").strip(), cfg.round,
                style_meta(answers[rnd.left], answers[rnd.right]))
    checks = VoteChecks(round_id, cfg.min_seconds, open_rate_checks(cfg))
    try:
        vote_id = record_vote(get_engine(), vote, checks)
    except VoteRefused as e:
        state["flash"] = REFUSED[e.reason]
        if e.reason == "stale":
            state.pop("round", None)
            st.rerun(scope=PAIR)
        return
    except DuplicateVote:
        state.pop("round", None)
        state["flash"] = "You had already voted on that item (another tab?); here is a new one."
        st.rerun(scope=PAIR)
    state.pop("round", None)
    state["reason"] = ""
    mine = len(seen_items(get_engine(), state["voter"], rnd.dataset, cfg.round))  # the bar says it at the vote
    state["last_vote"] = VotedRound(vote_id, choice, time.time(), rnd, mine)


@guarded
def _skip(round_id: str) -> None:
    state = st.session_state
    rnd = state.get("round")
    if _stale(rnd, round_id):
        st.rerun(scope=PAIR)
    state.pop("round", None)
    try:
        record_skip(get_engine(), state["voter"], rnd.dataset, rnd.item_id, get_config().round, round_id)
        state["flash"] = "Skipped."
    except (DuplicateVote, VoteRefused):
        state["flash"] = REFUSED["stale"]
    st.rerun(scope=PAIR)  # a new pair: the pair fragment, not only the bar


@guarded
def _undo() -> None:
    state, cfg = st.session_state, get_config()
    last = state.get("last_vote")
    if last and undo_vote(get_engine(), last.vote_id, state["voter"], cfg.undo_seconds, revealed=cfg.reveal):
        state.pop("last_vote")
        if cfg.reveal:  # the voter saw the models: the item does not come back (it counts as seen)
            state["flash"] = "Vote withdrawn. You saw which models answered, so here is another item."
            st.rerun(scope=PAIR)
        else:  # nothing was revealed: the same item and sides (a new round), vote again
            state["round"] = reissue(get_engine(), state["voter"], last.shown, cfg.round)
            state["flash"] = "Vote undone. Vote again."
    else:
        state["flash"] = f"Too late to undo (the window is {cfg.undo_seconds:.0f} s)."


@guarded
def _next() -> None:
    st.session_state.pop("last_vote", None)
    st.rerun(scope=PAIR)


def _progress(cfg: AppConfig, dataset: str, voter: str) -> tuple[int, object, list[tuple[float, str]]]:
    """How many items the voter has done, the vote counts (read once per run, reused for the next pair) and
    the progress bars, (fraction, label): this voter's items, the dataset's coverage."""
    engine = get_engine()
    items, _ = cached_items(dataset)
    tallies = vote_tallies(engine, dataset)
    mine = len(seen_items(engine, voter, dataset, cfg.round))
    n = max(len(items), 1)
    bars = [_mine_bar(mine, len(items))]
    total = int(tallies["n"].sum()) if len(tallies) else 0
    if cfg.overlap:
        done = int(votes_per_item(tallies).clip(upper=cfg.overlap).sum()) if total else 0
        want = n * cfg.overlap
        bars.append((min(done / want, 1.0), f"Dataset: {done} of {want} votes ({cfg.overlap} per item)"))
    else:
        covered = tallies["item_id"].nunique() if total else 0
        bars.append((covered / n, f"Dataset: {covered} of {len(items)} items have votes ({total} votes)"))
    return mine, tallies, bars


def _mine_bar(mine: int, items: int) -> tuple[float, str]:
    """The voter's own progress bar: (fraction, label)."""
    return min(mine / max(items, 1), 1.0), f"You: {mine} of {items} items"


def _criteria_sidebar(dataset: str) -> None:
    """The dataset's judging criteria in the sidebar, on demand (full runs only: a fragment cannot draw there)."""
    with st.sidebar.expander("Judging criteria", icon=":material/rule:"):
        st.markdown(get_criteria(get_engine(), dataset) or GENERIC_CRITERIA)


def _criteria(dataset: str, mine: int, bars: list) -> bool:
    """The dataset's own judging criteria (under the progress ``bars``) before the voter's first vote; True
    when the page should wait for the voter to read them."""
    key = f"criteria_read:{dataset}"
    if mine or st.session_state.get(key):
        return False
    text = get_criteria(get_engine(), dataset)
    if not text:
        return False
    st.html(progress_html(bars))
    st.markdown("#### How to judge", anchors=False)
    with st.container(border=True):
        st.markdown(text)
    if st.button("I have read this: start voting", type="primary", key="criteria_ok"):
        st.session_state[key] = True
        st.rerun()
    return True


def _after_vote(cfg: AppConfig, last: VotedRound) -> None:
    """Under the answers, in place of the vote bar: the vote said and the names (if revealed) in one line,
    Undo and Next in one row (few elements and no columns: less for every voter's browser to draw)."""
    rnd = last.shown
    names = f" **A** was {code_span(rnd.left)}, **B** was {code_span(rnd.right)}." if cfg.reveal else ""
    st.success(f"Vote saved: {SAID[last.choice]}.{names}")
    done, label = _mine_bar(last.mine, len(cached_items(rnd.dataset)[0]))
    show_mine(label, done)
    left = cfg.undo_seconds - (time.time() - last.at)
    with st.container(horizontal=True, key="after_vote"):
        # the browser counts the window down (no rerun a second); the server decides whether undo is in time
        st.button(f"Undo ({left:.0f} s left)" if left > 0 else "Undo (window closed)", on_click=_undo,
                  shortcut="u", disabled=left <= 0, key="undo", icon=":material/undo:")
        st.button("Next", on_click=_next, shortcut="n", type="primary", key="next", icon=":material/skip_next:")
    if left > 0:
        undo_countdown(left, last.vote_id)


def _pair(rnd: ShownRound, bars: list) -> None:
    """The progress ``bars``, the prompt and the two answers: one ``st.html`` element of server-rendered HTML
    (:mod:`voting.pages.pair_html`), sent with a new pair only (a vote reruns only the bar under it)."""
    answers = cached_answers(rnd.dataset, rnd.item_id)
    st.html(pair_html(rnd.item_id, rnd.prompt, answers[rnd.left], answers[rnd.right], progress=bars,
                      prompt_height=PROMPT_HEIGHT, answer_height=ANSWER_HEIGHT))
    new_pair(rnd.round_id, HELP)  # back to the top of the pair when it is a new one


def _vote_bar(rnd: ShownRound) -> None:
    # The buttons' keys (and so the ids in the browser's messages) carry the round: a message made under an
    # earlier pair, or replayed, names a button that is gone. Each sits in a container with the stable key
    # (vote_A, ..., skip) that the key queue and the tests find it by.
    rid = rnd.round_id
    with st.container(horizontal=True, key="vote_bar"):  # one row, no columns; Streamlit shows the shortcut key
        for choice, label, key, icon in BUTTONS:
            with st.container(key=f"vote_{choice}"):
                st.button(label, on_click=_cast, args=(choice, rid), shortcut=key, key=f"vote_{choice}-{rid}",
                          icon=icon, width="stretch", type="primary" if choice in ("A", "B") else "secondary")
        with st.container(key="skip"):
            st.button("Skip", on_click=_skip, args=(rid,), shortcut="s", key=f"skip-{rid}", width="stretch",
                      icon=":material/skip_next:")
    st.text_input("Why? (optional)", key="reason", max_chars=1000)


def render() -> None:
    """The page: sign-in and sidebar on a full run; the voting part in a fragment (:func:`_voting`)."""
    cfg, engine = get_config(), get_engine()
    voter = voter_gate(cfg)
    if not voter:
        return
    dataset = pick_dataset(engine)
    if dataset is None:
        st.warning("There is nothing to vote on yet: import a dataset on the Data page, "
                   "or run `preflab demo-seed --db URL`.")
        return
    _criteria_sidebar(dataset)
    if st.session_state.get("shown_dataset", dataset) != dataset:
        close_sidebar_on_phone(dataset)
    st.session_state["shown_dataset"] = dataset
    st.fragment(_voting, key=PAIR)(cfg, dataset, voter)


@guarded
def _voting(cfg: AppConfig, dataset: str, voter: str) -> None:
    """The pair's fragment: progress, the prompt and answers, and the bar under them (its own fragment,
    :func:`_bar`). Skip, Next and a withdrawn vote rerun this fragment (``st.rerun(scope=PAIR)`` in their
    callbacks); a vote or an undone vote reruns only the bar, so the answers are not sent again. Neither
    redraws the sidebar or the sign-in."""
    mine, tallies, bars = _progress(cfg, dataset, voter)
    if _criteria(dataset, mine, bars):
        return
    state = st.session_state
    if last := state.get("last_vote"):
        _pair(last.shown, bars)
    elif rnd := _shown_pair(cfg, dataset, voter, tallies):
        state["round"] = rnd
        _pair(rnd, bars)
    else:
        state.pop("round", None)
        st.html(progress_html(bars))
        st.success("You have seen every item available to you. Thank you for voting!")
        return
    st.fragment(_bar)(cfg)


@guarded
def _bar(cfg: AppConfig) -> None:
    """The vote bar before the vote, the after-vote panel after it; a vote reruns only this."""
    state = st.session_state
    shown = state["last_vote"].shown if state.get("last_vote") else state.get("round")
    # here: its run marker must change on every run that redraws the buttons; a key acts on its pair only
    keyboard_queue(KEYS, shown.round_id if shown else "", BOUND)
    if last := state.get("last_vote"):
        _after_vote(cfg, last)
    elif rnd := state.get("round"):
        _vote_bar(rnd)
    if msg := state.pop("flash", None):  # last: an element before the bar would move it and make it new
        st.toast(msg)


if __name__ == "__main__":
    render()
