"""What every page shares: configuration from the environment, the cached store, gates."""

from __future__ import annotations

import hmac
import os
from dataclasses import dataclass

import streamlit as st
from sqlalchemy.engine import Engine

from voting.store import open_store

DEFAULT_DB = "sqlite:///data/preflab.db"


@dataclass(frozen=True)
class AppConfig:
    """App settings, read from ``PREFLAB_*`` environment variables (see :func:`config_from_env`)."""

    db_url: str = DEFAULT_DB
    passcode: str = ""  # voters must enter it when set
    admin_passcode: str = ""  # gates leaderboard, data and calibration pages when set
    reveal: bool = True  # show model names after each vote
    strategy: str = "balanced"  # uniform | balanced | active
    overlap: int = 0  # votes wanted per item (0 = no limit)
    undo_seconds: float = 30.0
    round: int = 1


def config_from_env(env: dict[str, str] | None = None) -> AppConfig:
    """Read ``PREFLAB_DB``, ``PREFLAB_PASSCODE``, ``PREFLAB_ADMIN_PASSCODE``, ``PREFLAB_REVEAL`` (1/0),
    ``PREFLAB_STRATEGY``, ``PREFLAB_OVERLAP``, ``PREFLAB_UNDO_SECONDS`` and ``PREFLAB_ROUND``."""
    env = dict(os.environ if env is None else env)
    strategy = env.get("PREFLAB_STRATEGY", "balanced")
    if strategy not in ("uniform", "balanced", "active"):
        raise ValueError(f"PREFLAB_STRATEGY={strategy!r}: use uniform, balanced or active")
    return AppConfig(
        db_url=env.get("PREFLAB_DB", DEFAULT_DB),
        passcode=env.get("PREFLAB_PASSCODE", ""),
        admin_passcode=env.get("PREFLAB_ADMIN_PASSCODE", ""),
        reveal=env.get("PREFLAB_REVEAL", "1").lower() not in ("0", "false", "no"),
        strategy=strategy,
        overlap=int(env.get("PREFLAB_OVERLAP", "0")),
        undo_seconds=float(env.get("PREFLAB_UNDO_SECONDS", "30")),
        round=int(env.get("PREFLAB_ROUND", "1")),
    )


@st.cache_resource(show_spinner=False)
def _engine(url: str) -> Engine:
    return open_store(url)


def get_config() -> AppConfig:
    return config_from_env()


def get_engine() -> Engine:
    """The store for the configured URL, opened once per server process."""
    return _engine(get_config().db_url)


def passcode_ok(given: str, expected: str) -> bool:
    """Constant-time comparison; an unset passcode accepts anything."""
    return not expected or hmac.compare_digest(given.encode(), expected.encode())


def require_admin() -> bool:
    """Gate a page behind the admin passcode when one is configured; True when the page may render."""
    cfg = get_config()
    if passcode_ok("", cfg.admin_passcode) or st.session_state.get("admin"):
        return True
    st.info("This page is for the study's organisers (it could bias voters). Enter the admin passcode.")
    with st.form("admin_gate"):
        given = st.text_input("Admin passcode", type="password")
        if st.form_submit_button("Unlock"):
            if passcode_ok(given, cfg.admin_passcode):
                st.session_state["admin"] = True
                st.rerun()
            st.error("Wrong passcode.")
    return False


def pick_dataset(engine: Engine, key: str = "dataset") -> str | None:
    """Sidebar choice of dataset (remembered in the session); None when the store has no items."""
    from voting.store import list_datasets

    names = list_datasets(engine)
    if not names:
        return None
    current = st.session_state.get(key)
    index = names.index(current) if current in names else 0
    return st.sidebar.selectbox("Dataset", names, index=index, key=key)


@st.cache_resource(show_spinner=False, max_entries=64)
def _items(url: str, dataset: str, version: tuple) -> tuple:
    from voting.store import load_items_frame

    items = load_items_frame(get_engine(), dataset)
    return items, dict(zip(items["item_id"], items["prompt"], strict=True))


def cached_items(dataset: str) -> tuple:
    """``(items frame, {item_id: prompt})`` of a dataset, read once per process and dataset version
    (:func:`voting.store.dataset_version`: votes never change them). Shared: do not modify."""
    from voting.store import dataset_version

    return _items(get_config().db_url, dataset, dataset_version(get_engine(), dataset))


@st.cache_data(show_spinner=False, max_entries=4096)
def _answers(url: str, dataset: str, item_id: str, version: tuple) -> dict[str, str]:
    from voting.store import load_answers

    return load_answers(get_engine(), dataset, item_id)


def cached_answers(dataset: str, item_id: str) -> dict[str, str]:
    """``{model: answer}`` of one item, cached per dataset version like :func:`cached_items`."""
    from voting.store import dataset_version

    return _answers(get_config().db_url, dataset, item_id, dataset_version(get_engine(), dataset))
