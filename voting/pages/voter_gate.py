"""Who is voting: an invite link or code (``?invite=TOKEN``), or open voting (an anonymous ``guest-`` id
the server issues). The identity's token stays in the page's URL, so a reload keeps the voter."""

from __future__ import annotations

import time

import streamlit as st

from voting.access import GuestLimit, invite_voter, issue_guest, issued_guest
from voting.limits import address_key
from voting.pages.common import AppConfig, client_address, get_engine, passcode_ok

#: Session keys that belong to a signed-in person (admin unlock included): "Sign out" clears them all.
SESSION_KEYS = ("voter", "voter_kind", "round", "last_vote", "admin", "reason")
OPEN_LABEL = ("**Open voting**: anyone with this link can vote under an anonymous id; votes are marked as "
              "open (`guest-...`) and limited to {rate} a minute per guest.")


def open_rate_checks(cfg: AppConfig) -> tuple[tuple[str, int], ...]:
    """For open voting, the store's rate limits of this vote (:class:`voting.store.VoteChecks`): the guest id
    and the client address (all guests behind it together); invited voters are not limited."""
    if st.session_state.get("voter_kind") != "guest":
        return ()
    return (("guest:" + st.session_state["voter"], cfg.open_rate),
            (address_key("votes", client_address(cfg)), cfg.open_rate_per_address))


def sign_out() -> None:
    """Forget the voter and any admin unlock, and drop the identity from the URL."""
    for key in SESSION_KEYS:
        st.session_state.pop(key, None)
    st.query_params.clear()


def _sign_in(voter: str, kind: str, param: str, token: str) -> None:
    st.session_state["voter"], st.session_state["voter_kind"] = voter, kind
    st.query_params[param] = token  # a reload keeps the identity


def voter_gate(cfg: AppConfig) -> str | None:
    """The signed-in voter's id, or None after drawing the sign-in form."""
    state = st.session_state
    if not state.get("voter"):
        _from_url(cfg)
    if state.get("voter"):
        st.sidebar.text(f"Voting as {state['voter']}")  # plain text: a name is never Markdown
        if state.get("voter_kind") == "guest":
            st.sidebar.caption(OPEN_LABEL.format(rate=cfg.open_rate))
        if st.sidebar.button("Sign out", key="sign_out"):
            sign_out()
            st.rerun()
        return state["voter"]
    st.title("Which answer is better?")
    st.write("You will see a prompt and two anonymous answers, A and B. Pick the better one; model names are "
             "shown only after you vote.")
    if cfg.access == "open":
        st.info(OPEN_LABEL.format(rate=cfg.open_rate) + " Have an invite code? Enter it to vote under your name.")
    with st.form("voter_login"):
        code = st.text_input("Invite code" + (" (optional)" if cfg.access == "open" else ""), max_chars=200,
                             type="password", key="invite_code")
        secret = st.text_input("Passcode", type="password") if cfg.passcode else ""
        if st.form_submit_button("Start voting", type="primary"):
            _submit(cfg, code.strip(), secret)
    return None


def _from_url(cfg: AppConfig) -> None:
    """Sign in from ``?invite=`` or ``?guest=`` (a reload, or an invite link) when no passcode is needed."""
    params = st.query_params
    if cfg.passcode:
        return  # the passcode is asked again after a reload; the invite code is kept in the URL for it
    if token := params.get("invite"):
        voter = invite_voter(get_engine(), token)
        if voter:
            _sign_in(voter, "invite", "invite", token)
        else:
            st.error("This invite link is not valid (mistyped, or replaced by a newer one). Ask the study's "
                     "organiser for a new link.")
            st.query_params.clear()
    elif (token := params.get("guest")) and cfg.access == "open":
        if voter := issued_guest(get_engine(), token):  # only ids this server issued
            st.session_state["guest_token"] = token
            _sign_in(voter, "guest", "guest", token)


def _submit(cfg: AppConfig, code: str, secret: str) -> None:
    state = st.session_state
    if not passcode_ok(secret, cfg.passcode):
        st.error("Wrong passcode. Ask the study's organiser for it.")
        return
    code = code or st.query_params.get("invite", "")
    if code:
        voter = invite_voter(get_engine(), code)
        if voter is None:
            time.sleep(0.5)  # slows guessing; the tokens are 144 random bits anyway
            st.error("Unknown invite code. Check it, or ask the study's organiser for your link.")
            return
        _sign_in(voter, "invite", "invite", code)
    elif cfg.access == "invite":
        st.error("Voting here is by invitation: enter the code from your invite link, or ask the study's "
                 "organiser for one.")
        return
    else:  # one open identity per browser session: signing out and in again gives the same id back
        token = state.get("guest_token")
        voter = issued_guest(get_engine(), token) if token else None
        if voter is None:
            try:
                token = issue_guest(get_engine(), client_address(cfg), cfg.guests_per_address)
            except GuestLimit:
                st.error("Many anonymous voters have started from your network in the last hour; try again later, "
                         "or ask the study's organiser for an invite code.")
                return
            state["guest_token"] = token
            voter = issued_guest(get_engine(), token)
        _sign_in(voter, "guest", "guest", token)
    st.rerun()
