"""The Battle page: the voter types a prompt, two roster models answer it side by side as they stream,
labelled only A and B; after both finished the voter votes (keys 1-4), then the names are shown.

Follow-up prompts go to the same two models in the same sides until the vote. Nothing that names a model
reaches the browser before the vote: not its name, provider, endpoint, token counts or its error text; a
failed answer shows one neutral line, and that battle is stored as failed and never counted. Streaming speed
is visible (as in Chatbot Arena). The roster comes from ``PREFLAB_ARENA`` (``preflab app --arena FILE``), an
optional prompt set to draw from from ``PREFLAB_ARENA_PROMPTS`` (``--arena-prompts FILE``).
"""

from __future__ import annotations

import secrets
import time

import numpy as np
import streamlit as st

from answering.model_specs import ModelSpec
from voting.arena_guard import ArenaRefused, ArenaSettings, arena_settings, claim_turn
from voting.battle_runs import TurnRun, live_run, start_run
from voting.battles import (
    abandon,
    battle_outcomes,
    draw_pair,
    load_arena,
    load_battle,
    open_battles,
    pair_counts,
    vote_battle,
)
from voting.identity import identity_words
from voting.pages.common import client_address, code_span, get_config, get_engine, guarded
from voting.pages.pair_html import markdown_html
from voting.pages.voter_gate import open_rate_checks, voter_gate
from voting.store import DuplicateVote, VoteChecks, VoteRefused

BUTTONS = (("A", "A is better", "1"), ("B", "B is better", "2"), ("tie", "Tie", "3"), ("bothbad", "Both are bad", "4"))
SAID = {"A": "A is better", "B": "B is better", "tie": "a tie", "bothbad": "both are bad"}
FAILED = "One answer failed; this battle will not count. Send a prompt to start a new battle."
REDRAW_S = 0.05  # the streaming boxes are redrawn at most this often
BOX = ('<div class="pf-battle" data-side="{side}" data-done="{done}" style="border:1px solid #ddd;border-radius:6px;'
       'padding:0.6em;min-height:4em;max-height:420px;overflow:auto"><h4>{side}</h4>{body}</div>')


@st.cache_resource(show_spinner=False)
def _roster(path: str) -> list[ModelSpec]:
    return load_arena(path)


@st.cache_resource(show_spinner=False)
def _prompt_set(path: str) -> list[str]:
    from answering.model_specs import load_prompts

    return load_prompts(path)["prompt"].tolist()


def _draw_prompt(path: str) -> None:
    """Button callback: put a prompt drawn from the prompt set (``PREFLAB_ARENA_PROMPTS``) in the box."""
    rng = st.session_state.setdefault("rng", np.random.default_rng(secrets.randbits(64)))
    prompts = _prompt_set(path)
    st.session_state["battle_text"] = prompts[int(rng.integers(len(prompts)))]


#: What the page says when a turn is not started (:class:`voting.arena_guard.ArenaRefused`), by reason.
REFUSED = {
    "voter": "You can send {l.battles_per_minute} prompts a minute (new battles and follow-ups); wait a moment, "
             "then send again.",
    "address": "Many prompts are coming from your network right now; wait a minute, then send again.",
    "turns": "This battle has reached {l.max_turns} turns: vote on it, then send a prompt to start a new battle.",
    "length": "This conversation has reached its length limit ({l.max_conversation_chars:,} characters): vote on "
              "it, then send a prompt to start a new battle.",
    "day": "The arena has reached today's spending limit; new battles start again tomorrow (UTC).",
    "tokens": "The arena has reached today's spending limit; new battles start again tomorrow (UTC).",
    "total": "The arena has reached its spending limit: no new battles can start.",
    "state": "That battle was voted on or left in another tab; send a prompt to start a new battle.",
}
VOTE_REFUSED = {
    "fast": "That was fast: read both answers, then vote.",
    "rate": "That is many votes in a minute: take a moment to read both answers, then vote again.",
    "stale": "Those buttons were for an earlier turn; here is the current one.",
}


def settings(path: str) -> ArenaSettings:
    """The arena's settings: the roster's ``[arena]`` table and the ``PREFLAB_ARENA_*`` variables
    (:func:`voting.arena_guard.arena_settings`)."""
    return arena_settings(path, _roster(path))


def _box(side: str, text: str, done: bool) -> str:
    body = f'<div class="pf-text">{markdown_html(text)}</div>' if text else '<p class="pf-wait">…</p>'
    return BOX.format(side=side, done="1" if done else "0", body=body)


def _conversation(battle: dict) -> None:
    """Earlier turns: each prompt, then A and B side by side."""
    conv_a, conv_b = battle["conversation_a"], battle["conversation_b"]
    for i in range(0, len(conv_a) - 1, 2):
        st.markdown(f"**You:** {code_span(conv_a[i]['content'])}" if "\n" not in conv_a[i]["content"]
                    else "**You:**")
        if "\n" in conv_a[i]["content"]:
            st.text(conv_a[i]["content"])
        left, right = st.columns(2)
        left.html(_box("A", conv_a[i + 1]["content"], True))
        right.html(_box("B", conv_b[i + 1]["content"], True))


def _send(path: str, voter: str) -> None:
    """Send-button callback: start a battle (or the current one's next turn) with the typed prompt once the
    store's claim allows it (voter, address, conversation and spend limits in one transaction); both answers
    are generated by a background run, so a click or key while they stream stops nothing."""
    state, engine, cfg = st.session_state, open_battles(get_engine()), get_config()
    arena = settings(path)
    limits = arena.limits
    prompt = (state.get("battle_text") or "").strip()
    if not prompt:
        return
    if len(prompt) > limits.max_prompt_chars:
        state["warn"] = f"That prompt is {len(prompt):,} characters; the limit is {limits.max_prompt_chars:,}."
        return
    roster = _roster(path)
    by_name = {m.name: m for m in roster}
    current = state.get("battle")
    battle = load_battle(engine, current["id"]) if current else None
    if battle is not None and battle["status"] == "answering" and live_run(battle["id"]):
        state["warn"] = "Wait until both answers have finished."
        return
    if battle is None or battle["status"] != "answered":
        rng = state.setdefault("rng", np.random.default_rng(secrets.randbits(64)))
        outcomes = battle_outcomes(engine, [m.name for m in roster]) if cfg.strategy == "active" else None
        a, b = draw_pair(roster, pair_counts(engine), rng, cfg.strategy, outcomes)
        battle = None
    else:
        a, b = by_name[battle["model_a"]], by_name[battle["model_b"]]
    try:
        claimed = claim_turn(engine, voter, client_address(cfg), prompt, {"a": a, "b": b}, arena, battle)
    except ArenaRefused as e:
        state["warn"] = REFUSED[e.reason].format(l=limits)
        if e.reason == "state":
            state.pop("battle", None)
        return
    state["battle"] = {"id": claimed["id"]}
    start_run(engine, claimed, {"a": a, "b": b}, prompt, arena, identity_words(roster, arena.identity_words))


def _streaming(battle: dict, run: TurnRun) -> dict:
    """Draw the turn being answered: earlier turns, the prompt, and two boxes to be filled by :func:`_follow`."""
    _conversation(battle)
    st.markdown(f"**You:** {code_span(run.prompt)}" if "\n" not in run.prompt else "**You:**")
    if "\n" in run.prompt:
        st.text(run.prompt)
    left, right = st.columns(2)
    boxes = {"a": left.empty(), "b": right.empty()}
    for side in "ab":
        boxes[side].html(_box(side.upper(), run.texts[side], False))
    return boxes


def _follow(run: TurnRun, boxes: dict) -> None:
    """Redraw the boxes as the run's text grows (the first piece at once, then at most every REDRAW_S);
    when both answers finished, rerun the page to show the vote bar (or the failure)."""
    seen, shown = -1, {"a": None, "b": None}
    while True:
        seen, texts, done = run.wait(seen, 1.0)
        for side in "ab":
            if texts[side] != shown[side]:
                shown[side] = texts[side]
                boxes[side].html(_box(side.upper(), texts[side], False))
        if done:
            break
        time.sleep(REDRAW_S)
    st.rerun()


@guarded
def _vote(choice: str, battle_id: str, turns: int) -> None:
    """Button callback: vote on the battle and turn these buttons were drawn for; their key carries both, so a
    message for an earlier battle's buttons names a button that is gone, and the store refuses a vote whose
    turn is not the battle's last (a click for an earlier battle or turn is not applied)."""
    state = st.session_state
    current = state.get("battle")
    if not current or current["id"] != battle_id:
        state["flash"] = "That battle is over; here is the current one."
        return
    if live_run(battle_id) is not None:  # a click on the last turn's bar while a follow-up streams
        state["flash"] = "Both answers must finish before you vote; that click was not counted."
        return
    checks = VoteChecks(None, get_config().min_seconds, open_rate_checks(get_config()))
    try:
        vote_battle(open_battles(get_engine()), battle_id, state["voter"], choice, turns, checks)
    except DuplicateVote:
        state["flash"] = "You already voted on that battle."
    except VoteRefused as e:
        state["flash"] = VOTE_REFUSED[e.reason]
        return
    except ValueError:
        state["flash"] = "That battle cannot be voted on."
        state.pop("battle", None)
        return
    state["revealed"] = {"id": battle_id, "choice": choice}
    state.pop("battle", None)


def vote_key(choice: str, battle: dict) -> str:
    """A vote button's key: the choice, the battle and its turn (``battle_A_<id>_<turns>``)."""
    return f"battle_{choice}_{battle['id']}_{battle['turns']}"


def _revealed(engine, revealed: dict) -> None:  # noqa: ANN001
    battle = load_battle(engine, revealed["id"])
    if battle is None:
        return
    _conversation(battle)
    st.success(f"Vote saved: {SAID[revealed['choice']]}. **A** was {code_span(battle['model_a'])}, "
               f"**B** was {code_span(battle['model_b'])}.")


def _notices(engine) -> None:  # noqa: ANN001
    """What the last action left to say: a message, a warning, or the names behind the pair just voted on."""
    state = st.session_state
    if msg := state.pop("flash", None):
        st.info(msg)
    if msg := state.pop("warn", None):
        st.warning(msg)
    if revealed := state.pop("revealed", None):
        _revealed(engine, revealed)


def _current_battle(engine) -> tuple[dict | None, str | None, TurnRun | None, dict | None]:  # noqa: ANN001
    """Show the voter's battle as it stands: (battle, its status, its run in this process, the streaming boxes).

    An answered battle gets the vote bar; a failed or interrupted one is dropped with a message."""
    state = st.session_state
    current = state.get("battle")
    battle = load_battle(engine, current["id"]) if current else None
    status = battle["status"] if battle is not None else None
    run = live_run(current["id"]) if status == "answering" else None
    boxes = None
    if status == "answered":
        _conversation(battle)
        with st.container(horizontal=True, key="battle_vote_bar"):
            for choice, label, key in BUTTONS:
                st.button(label, on_click=_vote, args=(choice, battle["id"], battle["turns"]), shortcut=key,
                          key=vote_key(choice, battle), width="stretch",
                          type="primary" if choice in "AB" else "secondary")
    elif run is not None:
        boxes = _streaming(battle, run)
    elif status == "failed":
        state.pop("battle", None)
        st.info(FAILED)
    elif current is not None:  # answering with no run here (the process restarted), or voted elsewhere
        state.pop("battle", None)
        if status == "answering":
            abandon(engine, current["id"])
            st.info("That battle was interrupted before both answers finished; it will not count.")
    return battle, status, run, boxes


def render() -> None:
    cfg = get_config()
    path = cfg.arena
    st.title("Battle")
    if not path:
        st.info("No arena roster: start the app with `preflab app --arena roster.toml`.")
        return
    voter = voter_gate(cfg)
    if not voter:
        return
    _roster(path)  # a bad roster fails here, before any prompt
    engine = open_battles(get_engine())
    st.caption("Type a prompt: two anonymous models answer it side by side. Vote once both have finished; "
               "the names are shown after your vote.")
    _notices(engine)
    battle, status, run, boxes = _current_battle(engine)
    following = status == "answered" or (run is not None and battle["turns"] > 0)
    if (prompt_set := cfg.arena_prompts) and not following and run is None:
        st.button("Draw a prompt", on_click=_draw_prompt, args=(prompt_set,), key="battle_draw",
                  icon=":material/casino:")
    with st.form("battle_prompt", clear_on_submit=True, border=False):
        st.text_area("Ask a follow-up (the same two models answer)" if following else "Your prompt",
                     key="battle_text", height=100, disabled=run is not None)
        st.form_submit_button("Send", type="primary", on_click=_send, args=(path, voter), disabled=run is not None)
    if run is not None:
        _follow(run, boxes)


if __name__ == "__main__":
    render()
