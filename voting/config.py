"""The app's settings in one place: the default store URL, the access modes and
:class:`AppConfig` (every ``PREFLAB_*`` variable the app reads, :func:`config_from_env`). Light on purpose
(no Streamlit, no SQLAlchemy): the command line reads its defaults and checks here before starting the app.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

#: The store every command and the app open when no ``--db`` / ``PREFLAB_DB`` is given.
DEFAULT_STORE_URL = "sqlite:///data/preflab.db"
#: Who may vote: open (anonymous guest ids, labelled, rate-limited) or invite (admin-issued links only).
ACCESS_MODES = ("open", "invite")


def check_access(access: str, shown: str) -> str:
    """``access`` when it is an access mode; else a ValueError naming it as the interface does (``shown`` is a
    format such as ``"--access {!r}"`` or ``"PREFLAB_ACCESS={!r}"``)."""
    if access not in ACCESS_MODES:
        raise ValueError(f"{shown.format(access)}: use {' or '.join(ACCESS_MODES)}")
    return access


@dataclass(frozen=True)
class AppConfig:
    """App settings, read from ``PREFLAB_*`` environment variables (see :func:`config_from_env`)."""

    db_url: str = DEFAULT_STORE_URL
    passcode: str = ""  # voters must enter it when set
    admin_passcode: str = ""  # gates leaderboard, data and calibration pages when set
    reveal: bool = True  # show model names after each vote
    strategy: str = "balanced"  # uniform | balanced | active
    overlap: int = 0  # votes wanted per item (0 = no limit)
    undo_seconds: float = 30.0
    round: int = 1
    access: str = "open"  # open (anonymous ids, labelled, rate-limited) | invite (admin-issued links only)
    open_rate: int = 30  # most votes per minute one open-voting guest id may cast
    open_rate_per_address: int = 120  # most open-voting votes per minute from one client address, all guests
    min_seconds: float = 1.0  # least time from drawing a pair to a vote on it (server clocks)
    guests_per_address: int = 20  # most open-voting ids issued to one client address an hour
    trust_proxy: bool = False  # the client address is the last X-Forwarded-For entry (behind your own proxy)
    data_dir: str = "data"  # the only folder admin pages (calibration, leaderboard) may open files from
    arena: str = ""  # the live Battle page's roster (``preflab app --arena FILE``); "" = no Battle page
    arena_prompts: str = ""  # prompts a Battle voter may draw from (``--arena-prompts FILE``)
    arena_prompt_cap: int | None = None  # battle votes kept per repeated prompt on the anonymous board


def config_from_env(env: dict[str, str] | None = None) -> AppConfig:
    """Read ``PREFLAB_DB``, ``PREFLAB_PASSCODE``, ``PREFLAB_ADMIN_PASSCODE``, ``PREFLAB_REVEAL`` (1/0),
    ``PREFLAB_STRATEGY``, ``PREFLAB_OVERLAP``, ``PREFLAB_UNDO_SECONDS``, ``PREFLAB_ROUND``, ``PREFLAB_ACCESS``
    (open/invite), ``PREFLAB_OPEN_RATE`` (votes per minute per guest), ``PREFLAB_OPEN_RATE_PER_ADDRESS``,
    ``PREFLAB_MIN_SECONDS`` (on a pair before its vote), ``PREFLAB_GUESTS_PER_ADDRESS`` (open-voting ids issued
    to one client address an hour), ``PREFLAB_TRUST_PROXY`` (1/0), ``PREFLAB_DATA_DIR``, and the Battle page's
    roster, prompt set and repeated-prompt cap, ``PREFLAB_ARENA``, ``PREFLAB_ARENA_PROMPTS`` and
    ``PREFLAB_ARENA_PROMPT_CAP`` (its limits and caps are the roster's
    ``[arena]`` table with the ``PREFLAB_ARENA_*`` overrides: :func:`voting.arena_guard.arena_settings`)."""
    env = dict(os.environ if env is None else env)
    strategy = env.get("PREFLAB_STRATEGY", "balanced")
    if strategy not in ("uniform", "balanced", "active"):
        raise ValueError(f"PREFLAB_STRATEGY={strategy!r}: use uniform, balanced or active")
    access = check_access(env.get("PREFLAB_ACCESS", "open"), "PREFLAB_ACCESS={!r}")
    return AppConfig(
        db_url=env.get("PREFLAB_DB", DEFAULT_STORE_URL),
        passcode=env.get("PREFLAB_PASSCODE", ""),
        admin_passcode=env.get("PREFLAB_ADMIN_PASSCODE", ""),
        reveal=env.get("PREFLAB_REVEAL", "1").lower() not in ("0", "false", "no"),
        strategy=strategy,
        overlap=int(env.get("PREFLAB_OVERLAP", "0")),
        undo_seconds=float(env.get("PREFLAB_UNDO_SECONDS", "30")),
        round=int(env.get("PREFLAB_ROUND", "1")),
        access=access,
        open_rate=int(env.get("PREFLAB_OPEN_RATE", "30")),
        open_rate_per_address=int(env.get("PREFLAB_OPEN_RATE_PER_ADDRESS", "120")),
        min_seconds=float(env.get("PREFLAB_MIN_SECONDS", "1")),
        guests_per_address=int(env.get("PREFLAB_GUESTS_PER_ADDRESS", "20")),
        trust_proxy=env.get("PREFLAB_TRUST_PROXY", "0").lower() in ("1", "true", "yes"),
        data_dir=env.get("PREFLAB_DATA_DIR", "data"),
        arena=env.get("PREFLAB_ARENA", ""),
        arena_prompts=env.get("PREFLAB_ARENA_PROMPTS", ""),
        arena_prompt_cap=int(env["PREFLAB_ARENA_PROMPT_CAP"]) if env.get("PREFLAB_ARENA_PROMPT_CAP") else None,
    )
