"""What every page shares: configuration from the environment, the cached store, gates."""

from __future__ import annotations

import functools
import hmac
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import streamlit as st
from sqlalchemy.engine import Engine

from voting.store import open_store

DEFAULT_DB = "sqlite:///data/preflab.db"
log = logging.getLogger("preflab.app")
F = TypeVar("F", bound=Callable)
OOPS = "Something went wrong on our side and nothing was changed. Please try again; the organisers can see " \
       "the details in the server log."


def guarded(fn: F) -> F:
    """Run a page or a button callback so that an unexpected error shows the voter one short line (no
    traceback, no SQL, no internal names) and the full traceback goes to the server log."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        try:
            return fn(*args, **kwargs)
        except Exception:  # noqa: BLE001  (Streamlit's rerun/stop are BaseExceptions and pass through)
            log.exception("error in %s", getattr(fn, "__qualname__", fn))
            st.error(OOPS)
            return None
    return wrapper  # type: ignore[return-value]


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
    access: str = "open"  # open (anonymous ids, labelled, rate-limited) | invite (admin-issued links only)
    open_rate: int = 30  # most votes per minute one open-voting browser session may cast
    data_dir: str = "data"  # the only folder admin pages (calibration, leaderboard) may open files from


def config_from_env(env: dict[str, str] | None = None) -> AppConfig:
    """Read ``PREFLAB_DB``, ``PREFLAB_PASSCODE``, ``PREFLAB_ADMIN_PASSCODE``, ``PREFLAB_REVEAL`` (1/0),
    ``PREFLAB_STRATEGY``, ``PREFLAB_OVERLAP``, ``PREFLAB_UNDO_SECONDS``, ``PREFLAB_ROUND``, ``PREFLAB_ACCESS``
    (open/invite), ``PREFLAB_OPEN_RATE`` (votes per minute) and ``PREFLAB_DATA_DIR``."""
    env = dict(os.environ if env is None else env)
    strategy = env.get("PREFLAB_STRATEGY", "balanced")
    if strategy not in ("uniform", "balanced", "active"):
        raise ValueError(f"PREFLAB_STRATEGY={strategy!r}: use uniform, balanced or active")
    access = env.get("PREFLAB_ACCESS", "open")
    if access not in ("open", "invite"):
        raise ValueError(f"PREFLAB_ACCESS={access!r}: use open or invite")
    return AppConfig(
        db_url=env.get("PREFLAB_DB", DEFAULT_DB),
        passcode=env.get("PREFLAB_PASSCODE", ""),
        admin_passcode=env.get("PREFLAB_ADMIN_PASSCODE", ""),
        reveal=env.get("PREFLAB_REVEAL", "1").lower() not in ("0", "false", "no"),
        strategy=strategy,
        overlap=int(env.get("PREFLAB_OVERLAP", "0")),
        undo_seconds=float(env.get("PREFLAB_UNDO_SECONDS", "30")),
        round=int(env.get("PREFLAB_ROUND", "1")),
        access=access,
        open_rate=int(env.get("PREFLAB_OPEN_RATE", "30")),
        data_dir=env.get("PREFLAB_DATA_DIR", "data"),
    )


@st.cache_resource(show_spinner=False)
def _engine(url: str) -> Engine:
    return open_store(url)


def get_config() -> AppConfig:
    return config_from_env()


def get_engine() -> Engine:
    """The store for the configured URL, opened once per server process."""
    return _engine(get_config().db_url)


def code_span(text: str) -> str:
    """``text`` as a Markdown code span that no backtick in it can close (CommonMark: fence with one
    backtick more than its longest run, padded with spaces)."""
    import re

    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}" if longest else f"`{text}`"


def passcode_ok(given: str, expected: str) -> bool:
    """Constant-time comparison; an unset passcode accepts anything."""
    return not expected or hmac.compare_digest(given.encode(), expected.encode())


#: Wrong admin passcodes allowed (server-wide, all sessions together) before the gate locks.
ADMIN_TRIES, ADMIN_LOCK_S = 5, 300.0
NO_ADMIN_PASSCODE = ("Open admin pages: no `PREFLAB_ADMIN_PASSCODE` is set, so anyone who can reach this server "
                     "can see the leaderboard and import or export data. Set one before sharing the link.")


@st.cache_resource(show_spinner=False)
def _admin_failures() -> list[float]:
    """Times of recent wrong admin passcodes, shared by every session of this server process."""
    return []


def admin_locked(now: float | None = None) -> float:
    """Seconds until the admin gate opens again (0 when it is not locked)."""
    now = time.time() if now is None else now
    fails = _admin_failures()
    fails[:] = [t for t in fails if now - t < ADMIN_LOCK_S]
    return ADMIN_LOCK_S - (now - fails[-ADMIN_TRIES]) if len(fails) >= ADMIN_TRIES else 0.0


def require_admin() -> bool:
    """Gate a page behind the admin passcode when one is configured; True when the page may render.

    Without a passcode the page renders under a warning banner. ``ADMIN_TRIES`` wrong passcodes lock the
    gate for every session for ``ADMIN_LOCK_S`` seconds (guessing from many tabs gains nothing)."""
    cfg = get_config()
    if not cfg.admin_passcode:
        st.warning(NO_ADMIN_PASSCODE, icon=":material/lock_open:")
        return True
    if st.session_state.get("admin"):
        return True
    st.info("This page is for the study's organisers (it could bias voters). Enter the admin passcode.")
    with st.form("admin_gate"):
        given = st.text_input("Admin passcode", type="password")
        if st.form_submit_button("Unlock"):
            wait = admin_locked()
            if wait > 0:
                st.error(f"Too many wrong passcodes: the admin pages are locked for {wait / 60:.0f} more minutes.")
            elif passcode_ok(given, cfg.admin_passcode):
                st.session_state["admin"] = True
                st.rerun()
            else:
                _admin_failures().append(time.time())
                log.warning("wrong admin passcode (%d recent)", len(_admin_failures()))
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


# ------------------------------------------------------------ files from the data folder (calibration, leaderboard)


def verdict_files(data_dir: str | Path = "data") -> list[str]:
    """JSONL files under the data folder whose name mentions verdicts."""
    return sorted(str(p) for p in Path(data_dir).glob("**/*verdict*.jsonl"))


def judge_files(data_dir: str | Path = "data") -> list[str]:
    """Files a judge-assisted leaderboard can read: verdict files and battle files (name mentions battles)."""
    found = set(verdict_files(data_dir))
    for ext in ("json", "jsonl", "csv", "parquet"):
        found |= {str(p) for p in Path(data_dir).glob(f"**/*battle*.{ext}")}
    return sorted(found)


def inside_data_dir(typed: str, data_dir: str | Path) -> Path:
    """The typed path if it lies inside the data folder (after resolving ``..`` and links); else
    :class:`InputError` (a page must not open ``/etc/shadow`` for whoever holds the admin passcode)."""
    from preflab.errors import InputError

    root = Path(data_dir).resolve()
    path = Path(typed).expanduser()
    candidates = [path] if path.is_absolute() else [Path.cwd() / path, root / path]  # cwd- or folder-relative
    inside = [c.resolve() for c in candidates if c.resolve().is_relative_to(root)]
    for found in inside:
        if found.is_file():
            return found
    if inside:
        raise InputError(typed, None, None, f"no such file in the data folder {root}", "check the path")
    raise InputError(typed, None, None, f"outside the data folder {root}",
                     "put the file in the data folder (PREFLAB_DATA_DIR), or upload it")


def choose_data_file(key: str, upload_label: str, lister: Callable[[str], list[str]] = verdict_files,
                     types: tuple[str, ...] = ("jsonl",)) -> str | None:
    """An upload, a file found in the data folder (``lister``), or a typed path that must lie inside it
    (:func:`inside_data_dir`); None until one is given. Widget keys: ``{key}_upload``, ``{key}_pick``,
    ``{key}_path``. The one rule for every admin page that opens files on the server."""
    import tempfile

    from preflab.errors import InputError

    data_dir = get_config().data_dir
    upload = st.file_uploader(upload_label, type=list(types), key=f"{key}_upload")
    if upload is not None:
        path = Path(tempfile.mkdtemp()) / Path(upload.name).name
        path.write_bytes(upload.getvalue())
        return str(path)
    options = ["(type a path)", *lister(data_dir)]
    picked = st.selectbox("... or pick one found on the server", options, key=f"{key}_pick")
    if picked != options[0]:
        return picked
    typed = st.text_input(f"Path on the server (inside {data_dir}/)", key=f"{key}_path")
    if not typed:
        return None
    try:
        return str(inside_data_dir(typed, data_dir))
    except InputError as e:
        st.error(f"Cannot open that file: {e}")
        return None
