"""The Battle page: the voter types a prompt, two roster models answer it side by side as they stream,
labelled only A and B; after both finished the voter votes (keys 1-4), then the names are shown.

Follow-up prompts go to the same two models in the same sides until the vote. Nothing that names a model
reaches the browser before the vote: not its name, provider, endpoint, token counts or its error text; a
failed answer shows one neutral line and keeps the prompt in the box, and that battle is stored as failed and
never counted (its cause goes to the server log and the Data page's failed battles). Streaming speed is
visible (as in Chatbot Arena): a fragment redraws the answers every :data:`REDRAW_S` while they stream, so
Streamlit's Stop (or a dropped run) freezes nothing; the next redraw picks the answers up. Answers are drawn
as on the Vote page (:func:`voting.pages.pair_html.turn_html`). Before the vote, Regenerate asks the same two
models the last prompt again as a new battle (the old one is abandoned, never counted) and New round leaves
the battle; after the vote, New round clears the page. The roster comes from ``PREFLAB_ARENA`` (``preflab app
--arena FILE``), an optional prompt set to draw from from ``PREFLAB_ARENA_PROMPTS`` (``--arena-prompts FILE``).
"""

from __future__ import annotations

import secrets

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
from voting.pages.pair_html import turn_html
from voting.pages.voter_gate import open_rate_checks, voter_gate
from voting.store import DuplicateVote, VoteChecks, VoteRefused

BUTTONS = (("A", "A is better", "1"), ("B", "B is better", "2"), ("tie", "Tie", "3"), ("bothbad", "Both are bad", "4"))
SAID = {"A": "A is better", "B": "B is better", "tie": "a tie", "bothbad": "both are bad"}
FAILED = "One answer failed; this battle will not count. Send a prompt to start a new battle."
REDRAW_S = 0.2  # the streaming answers are redrawn this often (a fragment's run_every)
ANSWER_HEIGHT = 420  # px at most: equal boxes that scroll, as on the Vote page


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


def _you(prompt: str) -> None:
    """The voter's prompt: in a code span on one line, as plain text when it has several (never Markdown)."""
    several = "\n" in prompt or "\r" in prompt
    st.markdown("**You:**" if several else f"**You:** {code_span(prompt)}")
    if several:
        st.text(prompt)


def _conversation(battle: dict) -> None:
    """Earlier turns: each prompt, then A and B side by side."""
    conv_a, conv_b = battle["conversation_a"], battle["conversation_b"]
    for i in range(0, len(conv_a) - 1, 2):
        _you(conv_a[i]["content"])
        st.html(turn_html(conv_a[i + 1]["content"], conv_b[i + 1]["content"], done=True,
                          answer_height=ANSWER_HEIGHT))


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
    state["restore_prompt"] = prompt  # a refusal leaves the prompt in the box (the form cleared it)
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
    _start(path, voter, prompt, {"a": a, "b": b}, battle)


def _start(path: str, voter: str, prompt: str, specs: dict[str, ModelSpec], battle: dict | None,
           earlier: dict | None = None) -> None:
    """Claim the turn (a new battle when ``battle`` is None, with the ``earlier`` turns as context) and start
    answering ``prompt`` in the background; a refusal is a warning and keeps the prompt."""
    state, engine, cfg, arena = st.session_state, open_battles(get_engine()), get_config(), settings(path)
    try:
        claimed = claim_turn(engine, voter, client_address(cfg), prompt, specs, arena, battle,
                             {s: (earlier or {}).get(f"conversation_{s}", []) for s in "ab"})
    except ArenaRefused as e:
        state["warn"] = REFUSED[e.reason].format(l=arena.limits)
        if e.reason == "state":
            state.pop("battle", None)
        return
    state.pop("restore_prompt", None)
    state["battle"] = {"id": claimed["id"]}
    start_run(engine, claimed | (earlier or {}), specs, prompt, arena,
              identity_words(_roster(path), arena.identity_words))


def _regenerate(path: str, voter: str) -> None:
    """Regenerate (before the vote, as in Chatbot Arena): the same two models, same sides, answer the last
    prompt again as a new battle (earlier turns carried as context) under every limit a new battle meets; the
    old battle is abandoned, never counted."""
    state, engine = st.session_state, open_battles(get_engine())
    current = state.get("battle")
    battle = load_battle(engine, current["id"]) if current else None
    if battle is None or battle["status"] != "answered":
        return
    by_name = {m.name: m for m in _roster(path)}
    conv_a, conv_b = battle["conversation_a"], battle["conversation_b"]
    _start(path, voter, conv_a[-2]["content"], {"a": by_name[battle["model_a"]], "b": by_name[battle["model_b"]]},
           None, {"conversation_a": conv_a[:-2], "conversation_b": conv_b[:-2]})
    if state.get("battle", {}).get("id") != battle["id"]:  # the new battle started: the old one never counts
        abandon(engine, battle["id"])


def _new_round() -> None:
    """New round: leave the current battle (abandoned when not voted on: never counted) and clear the page."""
    state = st.session_state
    if current := state.pop("battle", None):
        abandon(open_battles(get_engine()), current["id"])
    state.pop("revealed", None)
    state["battle_text"] = ""


def _streaming(battle: dict, run: TurnRun) -> None:
    """Draw the turn being answered: earlier turns, the prompt, and the answers as they stream (:func:`_live`)."""
    _conversation(battle)
    _you(run.prompt)
    st.fragment(_live, run_every=REDRAW_S)(battle["id"])


def _live(battle_id: str) -> None:
    """The answers so far; once both finished (the run is gone), the whole page again: the vote bar or the
    failure. A fragment rerun every REDRAW_S: a stopped or interrupted run is picked up by the next one."""
    run = live_run(battle_id)
    if run is None or run.done:
        st.rerun()
    _, texts, _ = run.wait(-1, 0)  # a consistent snapshot of both sides
    st.html(turn_html(texts["a"], texts["b"], done=False, answer_height=ANSWER_HEIGHT))


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
    st.button("New round", on_click=_new_round, key="battle_new_after_vote", icon=":material/add:")


def _notices(engine) -> None:  # noqa: ANN001
    """What the last action left to say: a message, a warning, or the names behind the pair just voted on."""
    state = st.session_state
    if msg := state.pop("flash", None):
        st.info(msg)
    if msg := state.pop("warn", None):
        st.warning(msg)
    if revealed := state.pop("revealed", None):
        _revealed(engine, revealed)


def _vote_bar(path: str, voter: str, battle: dict) -> None:
    """The vote buttons (keys 1-4), then Regenerate and New round."""
    with st.container(horizontal=True, key="battle_vote_bar"):
        for choice, label, key in BUTTONS:
            st.button(label, on_click=_vote, args=(choice, battle["id"], battle["turns"]), shortcut=key,
                      key=vote_key(choice, battle), width="stretch", type="primary" if choice in "AB" else "secondary")
    with st.container(horizontal=True, key="battle_round_bar"):
        st.button("Regenerate", on_click=_regenerate, args=(path, voter), key="battle_regenerate",
                  icon=":material/refresh:")
        st.button("New round", on_click=_new_round, key="battle_new_round", icon=":material/add:")


def _current_battle(engine, path: str, voter: str) -> tuple[dict | None, str | None, TurnRun | None]:  # noqa: ANN001
    """Show the voter's battle as it stands: (battle, its status, its run in this process).

    An answered battle gets the vote bar; a failed or interrupted one is dropped with a message, and its
    prompt goes back in the box."""
    state = st.session_state
    current = state.get("battle")
    battle = load_battle(engine, current["id"]) if current else None
    status = battle["status"] if battle is not None else None
    run = live_run(current["id"]) if status == "answering" else None
    if status == "answered":
        _conversation(battle)
        _vote_bar(path, voter, battle)
    elif run is not None:
        _streaming(battle, run)
    elif current is not None:  # failed; answering with no run here (the process restarted); voted elsewhere
        state.pop("battle", None)
        conv = battle["conversation_a"] if battle is not None else []
        if status in ("failed", "answering") and conv:
            state["restore_prompt"] = conv[-2]["content"] if conv[-1]["role"] == "assistant" else conv[-1]["content"]
        if status == "failed":
            st.info(FAILED)
        elif status == "answering":
            abandon(engine, current["id"])
            st.info("That battle was interrupted before both answers finished; it will not count.")
    return battle, status, run


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
    battle, status, run = _current_battle(engine, path, voter)
    state = st.session_state
    if (kept := state.pop("restore_prompt", None)) is not None and run is None:
        state["battle_text"] = kept  # the form cleared it on Send; the prompt was not answered
    following = status == "answered" or (run is not None and battle["turns"] > 0)
    if (prompt_set := cfg.arena_prompts) and not following and run is None:
        st.button("Draw a prompt", on_click=_draw_prompt, args=(prompt_set,), key="battle_draw",
                  icon=":material/casino:")
    with st.form("battle_prompt", clear_on_submit=True, border=False):
        st.text_area("Ask a follow-up (the same two models answer)" if following else "Your prompt",
                     key="battle_text", height=100, disabled=run is not None)
        st.form_submit_button("Send", type="primary", on_click=_send, args=(path, voter), disabled=run is not None)


if __name__ == "__main__":
    render()
