"""Every screenshot the README shows is one the browser suite takes (``tests/voting/test_browser_screens.py``),
committed under docs/img/ and small."""

from __future__ import annotations

import re
from pathlib import Path

from tests.voting.test_browser_screens import MAX_BYTES, README_SHOTS

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_shows_only_screenshots_the_suite_takes():
    shown = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", (ROOT / "README.md").read_text())
    assert shown, "the README's app section shows no screenshot"
    taken = {f"docs/img/{name}.png" for name in README_SHOTS}
    assert set(shown) <= taken, f"not taken by tests/voting/test_browser_screens.py: {sorted(set(shown) - taken)}"
    for path in shown:
        size = (ROOT / path).stat().st_size
        assert 0 < size <= MAX_BYTES, (path, size)


def test_the_readme_states_the_integrity_rules():
    text = (ROOT / "README.md").read_text()
    assert "docs/vote.md#integrity-rules" in text and "## Integrity rules" in (ROOT / "docs" / "vote.md").read_text()
    for rule in ("Undo", "invited", "PREFLAB_ADMIN_PASSCODE", "tracebacks", "CSV exports"):
        assert rule in text, rule
