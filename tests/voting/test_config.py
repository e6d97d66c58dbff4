"""The app's settings in one place: every PREFLAB_* variable the app reads is on AppConfig (the Battle page's
included), the default store URL is written once, and --access / PREFLAB_ACCESS go through one check."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from voting.config import DEFAULT_STORE_URL, check_access, config_from_env

ROOT = Path(__file__).resolve().parents[2]


def test_the_battle_pages_settings_are_on_the_app_config():
    """The roster and the prompt set (read in the app's navigation and on the Battle page) come from AppConfig;
    the arena's limits and caps from the roster's [arena] table and PREFLAB_ARENA_* (voting.arena_guard)."""
    cfg = config_from_env({"PREFLAB_ARENA": "/r/roster.toml", "PREFLAB_ARENA_PROMPTS": "/r/prompts.jsonl"})
    assert (cfg.arena, cfg.arena_prompts) == ("/r/roster.toml", "/r/prompts.jsonl")
    assert (config_from_env({}).arena, config_from_env({}).arena_prompts) == ("", "")
    pages = [p for p in (ROOT / "voting").rglob("*.py") if p.name not in ("config.py", "arena_guard.py")]
    assert [str(p.relative_to(ROOT)) for p in pages if "os.environ" in p.read_text(encoding="utf-8")] == []


def test_the_default_store_url_is_written_once():
    from preflab_cli import voting_cmds
    from voting.engine import open_store

    assert inspect.signature(open_store).parameters["url"].default == DEFAULT_STORE_URL == config_from_env({}).db_url
    assert inspect.signature(voting_cmds.app_cmd).parameters["db"].default == DEFAULT_STORE_URL
    written = [str(p.relative_to(ROOT)) for top in ("voting", "preflab_cli") for p in (ROOT / top).rglob("*.py")
               if DEFAULT_STORE_URL in p.read_text(encoding="utf-8")]
    assert written == ["voting/config.py"]


def test_access_is_checked_once_in_the_words_of_each_interface():
    assert check_access("invite", "--access {!r}") == "invite"
    with pytest.raises(ValueError, match=r"^--access 'closed': use open or invite$"):
        check_access("closed", "--access {!r}")
    with pytest.raises(ValueError, match=r"^PREFLAB_ACCESS='closed': use open or invite$"):
        config_from_env({"PREFLAB_ACCESS": "closed"})
