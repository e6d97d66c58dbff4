"""The Battle page: the voter types a prompt, two roster models answer it side by side as they stream,
labelled only A and B; after both finished the voter votes (keys 1-4), then the names are shown.

Follow-up prompts go to the same two models in the same sides until the vote. Nothing that names a model
reaches the browser before the vote: not its name, provider, endpoint, token counts or its error text; a
failed answer shows one neutral line, and that battle is stored as failed and never counted. Streaming speed
is visible (as in Chatbot Arena). The roster comes from ``PREFLAB_ARENA`` (``preflab app --arena FILE``), an
optional prompt set to draw from from ``PREFLAB_ARENA_PROMPTS`` (``--arena-prompts FILE``).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time

import numpy as np
import streamlit as st

from judge.model_specs import ModelSpec
from voting.battles import (
    ArenaLimits,
    abandon,
    battle_outcomes,
    begin_turn,
    draw_pair,
    load_arena,
    load_battle,
    open_battles,
    pair_counts,
    recent_battles,
    save_turn,
    start_battle,
    stream_pair,
    vote_battle,
)
from voting.pages.common import code_span, get_config, get_engine, guarded
from voting.pages.pair_html import markdown_html
from voting.pages.voter_gate import voter_gate
from voting.store import DuplicateVote

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
    from judge.model_specs import load_prompts

    return load_prompts(path)["prompt"].tolist()


def _draw_prompt(path: str) -> None:
    """Button callback: put a prompt drawn from the prompt set (``PREFLAB_ARENA_PROMPTS``) in the box."""
    rng = st.session_state.setdefault("rng", np.random.default_rng(secrets.randbits(64)))
    prompts = _prompt_set(path)
    st.session_state["battle_text"] = prompts[int(rng.integers(len(prompts)))]


def limits_from_env() -> ArenaLimits:
    """``PREFLAB_ARENA_MAX_PROMPT``, ``PREFLAB_ARENA_PER_MINUTE``, ``PREFLAB_ARENA_MAX_TOKENS``."""
    env = os.environ
    return ArenaLimits(int(env.get("PREFLAB_ARENA_MAX_PROMPT", "4000")), int(env.get("PREFLAB_ARENA_PER_MINUTE", "6")),
                       int(env.get("PREFLAB_ARENA_MAX_TOKENS", "1024")))


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


def _ask(roster: list[ModelSpec], voter: str, prompt: str) -> None:
    """Start a battle (or continue the current one) with ``prompt`` and stream both answers into the page."""
    state, engine, limits = st.session_state, open_battles(get_engine()), limits_from_env()
    if len(prompt) > limits.max_prompt_chars:
        st.warning(f"That prompt is {len(prompt):,} characters; the limit is {limits.max_prompt_chars:,}.")
        return
    current = state.get("battle")
    battle = load_battle(engine, current["id"]) if current else None
    if battle is None or battle["status"] != "answered":
        if recent_battles(engine, voter) >= limits.battles_per_minute:
            st.warning(f"You can start {limits.battles_per_minute} battles a minute; wait a moment, then send again.")
            return
        rng = state.setdefault("rng", np.random.default_rng(secrets.randbits(64)))
        strategy = get_config().strategy
        outcomes = battle_outcomes(engine, [m.name for m in roster]) if strategy == "active" else None
        a, b = draw_pair(roster, pair_counts(engine), rng, strategy, outcomes)
        bid = start_battle(engine, voter, a.name, b.name)
        battle = load_battle(engine, bid)
    elif not begin_turn(engine, battle["id"]):  # voted or left meanwhile (another tab)
        state.pop("battle", None)
        st.rerun()
    state["battle"] = {"id": battle["id"], "token": secrets.token_hex(6)}  # earlier vote buttons are void now
    by_name = {m.name: m for m in roster}
    specs = {"a": by_name[battle["model_a"]], "b": by_name[battle["model_b"]]}
    convs = {"a": battle["conversation_a"] + [{"role": "user", "content": prompt}],
             "b": battle["conversation_b"] + [{"role": "user", "content": prompt}]}
    _conversation(battle)
    st.markdown(f"**You:** {code_span(prompt)}" if "\n" not in prompt else "**You:**")
    left, right = st.columns(2)
    boxes = {"a": left.empty(), "b": right.empty()}
    texts, drawn = {"a": "", "b": ""}, {"a": 0.0, "b": 0.0}
    for side in "ab":
        boxes[side].html(_box(side.upper(), "", False))

    def on_text(side: str, text: str) -> None:
        texts[side] = text
        now = time.monotonic()
        if now - drawn[side] >= REDRAW_S:
            drawn[side] = now
            boxes[side].html(_box(side.upper(), text, False))

    results = asyncio.run(stream_pair(specs, convs, limits, on_text))
    for side, res in results.items():
        final = getattr(res, "text", texts[side])
        convs[side].append({"role": "assistant", "content": final})
        boxes[side].html(_box(side.upper(), final, True))
    if not save_turn(engine, battle["id"], convs["a"], convs["b"], results):
        state.pop("battle", None)
        state["flash"] = FAILED
    st.rerun()


@guarded
def _vote(choice: str, token: str) -> None:
    """Button callback: vote on the battle these buttons were drawn for (a click for an earlier battle is
    not applied)."""
    state = st.session_state
    current = state.get("battle")
    if not current or current["token"] != token:
        state["flash"] = "That battle is over; here is the current one."
        return
    try:
        vote_battle(open_battles(get_engine()), current["id"], state["voter"], choice)
    except DuplicateVote:
        state["flash"] = "You already voted on that battle."
    except ValueError:
        state["flash"] = "That battle cannot be voted on."
        state.pop("battle", None)
        return
    state["revealed"] = {"id": current["id"], "choice": choice}
    state.pop("battle", None)


def _revealed(engine, revealed: dict) -> None:  # noqa: ANN001
    battle = load_battle(engine, revealed["id"])
    if battle is None:
        return
    _conversation(battle)
    st.success(f"Vote saved: {SAID[revealed['choice']]}. **A** was {code_span(battle['model_a'])}, "
               f"**B** was {code_span(battle['model_b'])}.")


def render() -> None:
    cfg = get_config()
    path = os.environ.get("PREFLAB_ARENA")
    st.title("Battle")
    if not path:
        st.info("No arena roster: start the app with `preflab app --arena roster.toml`.")
        return
    voter = voter_gate(cfg)
    if not voter:
        return
    roster, engine = _roster(path), open_battles(get_engine())
    state = st.session_state
    st.caption("Type a prompt: two anonymous models answer it side by side. Vote once both have finished; "
               "the names are shown after your vote.")
    if msg := state.pop("flash", None):
        st.info(msg)
    if revealed := state.pop("revealed", None):
        _revealed(engine, revealed)
    current = state.get("battle")
    battle = load_battle(engine, current["id"]) if current else None
    if battle is not None and battle["status"] == "answered":
        _conversation(battle)
        with st.container(horizontal=True, key="battle_vote_bar"):
            for choice, label, key in BUTTONS:
                st.button(label, on_click=_vote, args=(choice, current["token"]), shortcut=key,
                          key=f"battle_{choice}", width="stretch", type="primary" if choice in "AB" else "secondary")
    elif current is not None:  # left mid-answer (a click or reload stopped the stream): it never counts
        abandon(engine, current["id"])
        state.pop("battle", None)
        state["flash"] = "That battle was interrupted before both answers finished; it will not count."
        st.rerun()
    following = battle is not None and battle["status"] == "answered"
    if (prompt_set := os.environ.get("PREFLAB_ARENA_PROMPTS")) and not following:
        st.button("Draw a prompt", on_click=_draw_prompt, args=(prompt_set,), key="battle_draw",
                  icon=":material/casino:")
    with st.form("battle_prompt", clear_on_submit=True, border=False):
        prompt = st.text_area("Ask a follow-up (the same two models answer)" if following else "Your prompt",
                              key="battle_text", height=100)
        sent = st.form_submit_button("Send", type="primary")
    if sent and prompt.strip():
        _ask(roster, voter, prompt.strip())


if __name__ == "__main__":
    render()
