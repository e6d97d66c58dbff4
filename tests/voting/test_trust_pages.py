"""The app's Calibration page refuses a verdict file that mixes judges, as the CLI does."""

from __future__ import annotations

import pytest

from preflab.errors import InputError
from tests.judge.verdict_files import write_verdicts
from voting.pages.calibration import judged_pairs
from voting.store import open_store


def test_calibration_page_loader_refuses_mixed_judges(seeded_url, tmp_path):
    a = write_verdicts(tmp_path / "a.jsonl", [0.9, 0.2], [0.1, 0.7], judge="openai:gpt-4.1")
    b = write_verdicts(tmp_path / "b.jsonl", [0.9, 0.2], [0.1, 0.7], judge="openai:gpt-5")
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(a.read_text() + b.read_text())
    engine = open_store(seeded_url)
    with pytest.raises(InputError, match="mixed judges: openai:gpt-4.1 .4 rows., openai:gpt-5"):
        judged_pairs(engine, "tiny", mixed)
    judged_pairs(engine, "tiny", a)  # one judge: fine
