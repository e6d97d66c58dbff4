"""The app's settings in one place: every PREFLAB_* variable the app reads is on AppConfig (the Battle page's
included), the default store URL is written once, and --access / PREFLAB_ACCESS go through one check."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from voting.config import DEFAULT_STORE_URL, ArenaLimits, check_access, config_from_env

ROOT = Path(__file__).resolve().parents[2]


def test_the_battle_pages_settings_are_on_the_app_config():
    cfg = config_from_env({"PREFLAB_ARENA": "/r/roster.toml", "PREFLAB_ARENA_PROMPTS": "/r/prompts.jsonl",
                           "PREFLAB_ARENA_MAX_PROMPT": "100", "PREFLAB_ARENA_PER_MINUTE": "2",
                           "PREFLAB_ARENA_MAX_TOKENS": "64"})
    assert (cfg.arena, cfg.arena_prompts) == ("/r/roster.toml", "/r/prompts.jsonl")
    assert cfg.arena_limits == ArenaLimits(max_prompt_chars=100, battles_per_minute=2, max_tokens=64)
    assert config_from_env({}).arena == "" and config_from_env({}).arena_limits == ArenaLimits()


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
