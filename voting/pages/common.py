"""What every page shares: configuration from the environment, the cached store, gates."""

from __future__ import annotations

import functools
import hmac
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import streamlit as st
from sqlalchemy.engine import Engine

from voting.config import AppConfig, config_from_env
from voting.store import open_store

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


@st.cache_resource(show_spinner=False)
def _engine(url: str) -> Engine:
    return open_store(url)


def get_config() -> AppConfig:
    return config_from_env()


def get_engine() -> Engine:
    """The store for the configured URL, opened once per server process."""
    return _engine(get_config().db_url)


_LINE_ENDS = re.compile(r"\r\n|\r|\n")
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character (CommonMark 2.4)


def code_span(text: str) -> str:
    """``text`` (a name: dataset, model, voter, item) as a Markdown code span that no backtick in it can close
    (CommonMark: fence with one backtick more than its longest run, padded with spaces) and no line ending can
    end (a blank line would close the paragraph and the span with it): line endings become spaces."""
    text = _LINE_ENDS.sub(" ", str(text))
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}" if longest else f"`{text}`"


def plain(text: str) -> str:
    """``text`` (an error message, a banner, anything that may quote a name) for ``st.markdown``, captions,
    alerts and widget labels as plain text: every ASCII punctuation character backslash-escaped (so no image,
    link, emphasis, HTML or math), line endings made spaces."""
    return _PUNCTUATION.sub(r"\\\1", _LINE_ENDS.sub(" ", str(text)))


def passcode_ok(given: str, expected: str) -> bool:
    """Constant-time comparison; an unset passcode accepts anything."""
    return not expected or hmac.compare_digest(given.encode(), expected.encode())


NO_ADMIN_PASSCODE = ("Open admin pages: no `PREFLAB_ADMIN_PASSCODE` is set, so anyone who can reach this server "
                     "can see the leaderboard and import or export data. Set one before sharing the link.")


def client_address(cfg: AppConfig) -> str:
    """The voter's address: the last ``X-Forwarded-For`` entry (the one your proxy added) when
    ``trust_proxy`` is set, else the connection's; "local" for this machine."""
    forwarded = st.context.headers.get("X-Forwarded-For") if cfg.trust_proxy else None
    if isinstance(forwarded, str) and forwarded.strip():
        return forwarded.split(",")[-1].strip() or "local"
    address = st.context.ip_address
    return address if isinstance(address, str) and address else "local"


def require_admin() -> bool:
    """Gate a page behind the admin passcode when one is configured; True when the page may render.

    Without a passcode the page renders under a warning banner. Wrong passcodes are counted in the store per
    client address (every app process sees them): after :data:`voting.limits.ADMIN_TRIES` the address waits,
    longer after each further miss; other addresses are not locked out."""
    from voting.limits import admin_failed, admin_lock, admin_succeeded

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
            engine, address = get_engine(), client_address(cfg)
            wait, _ = admin_lock(engine, address)
            if wait > 0:
                st.error(f"Too many wrong passcodes from your address: try again in {max(wait / 60, 1):.0f} "
                         "minutes.")
            elif passcode_ok(given, cfg.admin_passcode):
                admin_succeeded(engine, address)
                st.session_state["admin"] = True
                st.rerun()
            else:
                admin_failed(engine, address)
                wait, left = admin_lock(engine, address)
                log.warning("wrong admin passcode from %s", address)
                st.error("Wrong passcode. " + (
                    f"{left} {'try' if left == 1 else 'tries'} left before a lockout." if wait <= 0 else
                    f"Too many wrong passcodes: locked for {max(wait / 60, 1):.0f} minutes."))
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


def _files_inside(data_dir: str | Path, pattern: str) -> set[str]:
    """Files under the data folder matching ``pattern`` that really lie inside it: a link that points out of
    the folder (``data/evil-verdicts.jsonl -> /etc/passwd``) is not listed, as a typed path would be refused
    (:func:`inside_data_dir`)."""
    root = Path(data_dir).resolve()
    return {str(p) for p in Path(data_dir).glob(pattern) if p.resolve().is_relative_to(root) and p.is_file()}


def verdict_files(data_dir: str | Path = "data") -> list[str]:
    """JSONL files under the data folder whose name mentions verdicts."""
    return sorted(_files_inside(data_dir, "**/*verdict*.jsonl"))


def judge_files(data_dir: str | Path = "data") -> list[str]:
    """Files a judge-assisted leaderboard can read: verdict files and battle files (name mentions battles)."""
    found = set(verdict_files(data_dir))
    for ext in ("json", "jsonl", "csv", "parquet"):
        found |= _files_inside(data_dir, f"**/*battle*.{ext}")
    return sorted(found)


UPLOAD_PREFIX = "preflab-upload-"


def public_message(error: object) -> str:
    """An error's text for the page, with the server's temporary upload folder taken out (a message names
    the uploaded file as the admin knows it, not ``/tmp/tmpab12/...``)."""
    import re
    import tempfile

    folder = re.escape(str(Path(tempfile.gettempdir()).resolve())) + "|" + re.escape(tempfile.gettempdir())
    return re.sub(rf"(?:{folder})/{UPLOAD_PREFIX}[^/\s]*/", "", str(error))


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
    if upload is not None:  # errors about it go through public_message (no temp folder on the page)
        path = Path(tempfile.mkdtemp(prefix=UPLOAD_PREFIX)) / Path(upload.name).name
        path.write_bytes(upload.getvalue())
        return str(path)
    options = ["(type a path)", *lister(data_dir)]
    picked = st.selectbox("... or pick one found on the server", options, key=f"{key}_pick")
    if picked != options[0]:
        try:  # checked again when opened: the link may have changed since it was listed
            return str(inside_data_dir(picked, data_dir))
        except InputError as e:
            st.error(f"Cannot open that file: {plain(e)}")
            return None
    typed = st.text_input(f"Path on the server (inside {data_dir}/)", key=f"{key}_path")
    if not typed:
        return None
    try:
        return str(inside_data_dir(typed, data_dir))
    except InputError as e:
        st.error(f"Cannot open that file: {plain(e)}")
        return None
