"""The blind voting page: a prompt, answers "A" and "B" on randomised sides, names only after the vote.

Keyboard: 1 = A is better, 2 = B is better, 3 = tie, 4 = both are bad, S = skip; after the vote
U = undo, N = next. Answers are rendered as Markdown with raw HTML disabled (shown as text).
"""

from __future__ import annotations

import secrets
import time

import numpy as np
import streamlit as st

from voting.assign import next_round
from voting.pages.common import (
    AppConfig,
    code_span,
    get_config,
    get_engine,
    guarded,
    pick_dataset,
)
from voting.pages.voter_gate import open_rate_ok, voter_gate
from voting.store import (
    DuplicateVote,
    Vote,
    load_answers,
    load_items_frame,
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


def _new_round(cfg: AppConfig, dataset: str, voter: str) -> dict | None:
    engine = get_engine()
    rng = st.session_state.setdefault("rng", np.random.default_rng(secrets.randbits(64)))
    items = load_items_frame(engine, dataset)
    rnd = next_round(items, seen_items(engine, voter, dataset, cfg.round), vote_tallies(engine, dataset), rng,
                     cfg.strategy, cfg.overlap, voter=voter)
    if rnd is None:
        return None
    return dict(dataset=dataset, item_id=rnd.item_id, left=rnd.model_left, right=rnd.model_right,
                prompt=items.set_index("item_id").at[rnd.item_id, "prompt"], shown_at=time.time())


@guarded
def _cast(choice: str) -> None:
    """Button callback: store the vote in one transaction, then switch to the after-vote panel."""
    state, cfg = st.session_state, get_config()
    rnd = state.pop("round", None)
    if rnd is None:  # a second click on a round already voted on
        return
    if not open_rate_ok(cfg):
        state["round"] = rnd
        state["flash"] = "That is fast: take a moment to read both answers, then vote again."
        return
    answers = load_answers(get_engine(), rnd["dataset"], rnd["item_id"])
    vote = Vote(state["voter"], rnd["dataset"], rnd["item_id"], rnd["left"], rnd["right"], choice,  # type: ignore[arg-type]
                rnd["shown_at"], state.get("reason", "").strip(), cfg.round,
                style_meta(answers[rnd["left"]], answers[rnd["right"]]))
    try:
        vote_id = record_vote(get_engine(), vote)
    except DuplicateVote:
        state["flash"] = "You had already voted on that item (another tab?); here is a new one."
        return
    state["reason"] = ""
    state["last_vote"] = dict(id=vote_id, choice=choice, at=time.time(), round=rnd)


@guarded
def _skip() -> None:
    state = st.session_state
    rnd = state.pop("round", None)
    if rnd is not None:
        try:
            record_skip(get_engine(), state["voter"], rnd["dataset"], rnd["item_id"], get_config().round)
        except DuplicateVote:
            pass
        state["flash"] = "Skipped."


@guarded
def _undo() -> None:
    state, cfg = st.session_state, get_config()
    last = state.get("last_vote")
    if last and undo_vote(get_engine(), last["id"], state["voter"], cfg.undo_seconds):
        state.pop("last_vote")
        if cfg.reveal:  # the voter saw the models: the item does not come back (it counts as seen)
            state["flash"] = "Vote withdrawn. You saw which models answered, so here is another item."
        else:  # nothing was revealed: the same item and sides, vote again
            state["round"] = last["round"]
            state["flash"] = "Vote undone. Vote again."
    else:
        state["flash"] = f"Too late to undo (the window is {cfg.undo_seconds:.0f} s)."


@guarded
def _next() -> None:
    st.session_state.pop("last_vote", None)


def _progress(cfg: AppConfig, dataset: str, voter: str) -> None:
    engine = get_engine()
    items = load_items_frame(engine, dataset)
    tallies = vote_tallies(engine, dataset)
    mine = len(seen_items(engine, voter, dataset, cfg.round))
    n = max(len(items), 1)
    st.progress(min(mine / n, 1.0), text=f"You: {mine} of {len(items)} items")
    if cfg.overlap:
        done, want = min(len(tallies), n * cfg.overlap), n * cfg.overlap
        st.progress(done / want, text=f"Dataset: {done} of {want} votes ({cfg.overlap} per item)")
    else:
        covered = tallies["item_id"].nunique() if len(tallies) else 0
        st.progress(covered / n, text=f"Dataset: {covered} of {len(items)} items have votes ({len(tallies)} votes)")


def _after_vote(cfg: AppConfig) -> None:
    last = st.session_state["last_vote"]
    rnd = last["round"]
    st.success(f"Vote saved: {SAID[last['choice']]}.")
    if cfg.reveal:
        a, b = st.columns(2)
        a.markdown(f"**A** was {code_span(rnd['left'])}")
        b.markdown(f"**B** was {code_span(rnd['right'])}")
    left = cfg.undo_seconds - (time.time() - last["at"])
    c1, c2 = st.columns(2)
    c1.button(f"Undo ({max(left, 0):.0f} s window)", on_click=_undo, shortcut="u", disabled=left <= 0, key="undo",
              icon=":material/undo:")
    c2.button("Next", on_click=_next, shortcut="n", type="primary", key="next", icon=":material/skip_next:")


def render() -> None:
    """The page."""
    cfg, engine = get_config(), get_engine()
    voter = voter_gate(cfg)
    if not voter:
        return
    dataset = pick_dataset(engine)
    if dataset is None:
        st.warning("There is nothing to vote on yet: import a dataset on the Data page, "
                   "or run `preflab demo-seed --db URL`.")
        return
    state = st.session_state
    if msg := state.pop("flash", None):
        st.toast(msg)
    _progress(cfg, dataset, voter)
    if state.get("last_vote"):
        _after_vote(cfg)
        return
    rnd = state.get("round")
    if rnd is None or rnd["dataset"] != dataset:
        rnd = state["round"] = _new_round(cfg, dataset, voter)
    if rnd is None:
        state.pop("round", None)
        st.success("You have seen every item available to you. Thank you for voting!")
        return
    answers = load_answers(engine, dataset, rnd["item_id"])
    st.markdown("#### Prompt", anchors=False)
    with st.container(border=True):
        st.markdown(rnd["prompt"], unsafe_allow_html=False)
    cols = st.columns(2)
    for col, side, model in ((cols[0], "A", rnd["left"]), (cols[1], "B", rnd["right"])):
        with col:
            st.markdown(f"#### {side}", anchors=False)
            with st.container(border=True):
                st.markdown(answers[model], unsafe_allow_html=False)
    cols = st.columns(len(BUTTONS) + 1)
    for col, (choice, label, key, icon) in zip(cols, BUTTONS, strict=False):  # Streamlit shows the shortcut key
        col.button(label, on_click=_cast, args=(choice,), shortcut=key, key=f"vote_{choice}", icon=icon,
                   width="stretch", type="primary" if choice in ("A", "B") else "secondary")
    cols[-1].button("Skip", on_click=_skip, shortcut="s", key="skip", width="stretch", icon=":material/skip_next:")
    st.text_input("Why? (optional)", key="reason", max_chars=1000)


if __name__ == "__main__":
    render()
