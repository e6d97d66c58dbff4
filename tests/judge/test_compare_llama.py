"""``preflab compare`` end to end with the real llama.cpp judge (SmolLM2-135M) on the demo's terse and verbose
models: both orders through the runner, two rubrics, the checks, a guard, and a rerun served from the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.judge.test_compare import preflab

pytestmark = pytest.mark.llama
DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"
PROMPTS = 6


def test_compare_with_the_real_judge_and_a_cached_rerun(tmp_path, capsys, llama_url) -> None:
    rows = [json.loads(line) for line in (DEMO / "items.jsonl").read_text().splitlines()]
    keep = sorted({r["item_id"] for r in rows})[:PROMPTS]
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(r) + "\n" for r in rows
                             if r["item_id"] in keep and r["model"] in ("atlas-terse", "beacon-verbose")))
    args = ["compare", str(items), "--base", "beacon-verbose", "--candidate", "atlas-terse", "--judge",
            f"local:{llama_url}#smollm2", "--rubric", "concise", "--rubric", "abt", "--guard", "abt",
            "--concurrency", "2", "--cache", str(tmp_path / "cache.sqlite"), "--json", "-"]
    code, out, err = preflab(capsys, *args)
    assert code in (0, 1, 3), err  # 3: no verdict, a guard's judge flips with the order (docs/compare.md)
    report = json.loads(out)
    rows_by_dim = {r["dimension"]: r for r in report["dimensions"]}
    assert set(rows_by_dim) == {"concise", "abt"}
    for r in rows_by_dim.values():
        assert r["wins"] + r["losses"] + r["ties"] + r["unjudged"] == PROMPTS
        assert r["flip_rate"] is not None
    assert report["judge_runs"]["concise"]["summary"].startswith(f"{2 * PROMPTS} calls, 0 cached")
    # the terse model's answers are shorter: the length check sees it
    mw = report["checks"]["length"]["mean_words"]
    assert mw["candidate"] < mw["base"]
    # SmolLM2 says "A" whatever it sees: every pair flips with the order, and the check says so
    if rows_by_dim["abt"]["flip_rate"] > 0.2:
        assert any("abt: the judge flips" in w for w in report["checks"]["warnings"])
    gate = report["gate"]
    assert (code == 3) == bool(gate.get("no_verdict"))  # the exit follows the gate, whatever the model wrote
    if not gate.get("no_verdict"):
        assert (code == 1) == (rows_by_dim["abt"]["verdict"] == "worse")
    code2, out2, _ = preflab(capsys, *args)
    again = json.loads(out2)
    assert again["judge_runs"]["concise"]["summary"].startswith(f"0 calls, {2 * PROMPTS} cached")
    assert again["dimensions"] == report["dimensions"] and code2 == code
