"""Budgets before anything is sent: ``generate --dry-run`` and ``compare --dry-run`` count exactly the requests
a real run then sends (against the paid-API contract fake), price them or say the price is unknown, and
``compare`` refuses a verdict file of mixed judges unless ``--allow-mixed``."""

from __future__ import annotations

import json
import re

import pytest

from preflab_cli import main
from tests.judge.api_fakes import ApiFake
from tests.judge.compare_files import counts_specs, items_file, verdict_rows, write_jsonl
from tests.judge.compare_files import preflab as run_cli

KEYS = {"OPENAI_API_KEY": "sk-proj-Dry9Zq8Yw7Xv6Uu5Tt4Ss", "PREFLAB_LOCAL_API_KEY": "sk-local-Dry4f9a2b7c1d0e8f"}


@pytest.fixture
def keys(monkeypatch):
    for k, v in KEYS.items():
        monkeypatch.setenv(k, v)


def preflab(capsys, *args: str) -> tuple[int, str]:
    """(exit status, stdout and stderr together)."""
    code, out, err = run_cli(capsys, *args)
    return code, out + err


def total_calls(text: str) -> tuple[int, int]:
    m = re.search(r"total: (\d+) calls to send, (\d+) answered by the cache", text)
    assert m, text
    return int(m.group(1)), int(m.group(2))


def test_generate_dry_run_counts_what_the_run_sends(keys, tmp_path, capsys):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("".join(json.dumps({"item_id": f"p{i}", "prompt": f"Question {i}?" * (i + 1)}) + "\n"
                               for i in range(7)))
    cache, out = tmp_path / "c.sqlite", tmp_path / "out.jsonl"
    with ApiFake() as api:
        models = ["--model", f"openai:{api.url}#gpt-4.1-mini;max_tokens=16", "--model", f"local:{api.url}#m",
                  "--model", f"local:{api.url}#m;name=same-as-m"]  # the same request as m: sent once
        args = ["generate", str(prompts), *models, "--output", str(out), "--cache", str(cache), "--quiet"]
        code, text = preflab(capsys, *args, "--dry-run")
        assert code == 0, text
        assert api.log == [] and not out.exists() and not cache.exists()  # nothing sent, nothing written
        assert total_calls(text) == (14, 0)
        assert "gpt-4.1-mini" in text and "$0 (local server)" in text and "unknown" not in text
        assert "at most 112 out" in text  # 7 calls x max_tokens 16
        code, text = preflab(capsys, *args)
        assert code == 0, text
        assert len(api.log) == 14 == sum(api.answered.values())
        code, text = preflab(capsys, *args, "--dry-run")
        assert total_calls(text) == (0, 14) and len(api.log) == 14


def test_every_dry_run_prints_the_one_dry_run_lines(keys, tmp_path, capsys):
    """``generate --dry-run`` prints exactly :func:`llm.calls.estimate.dry_run_lines` of the library's estimates
    (the printer ``judge run`` and ``compare`` use too)."""
    from answering.generate import estimate_generate
    from answering.model_specs import load_prompts, parse_model_spec
    from llm.calls.estimate import dry_run_lines

    prompts = tmp_path / "p.jsonl"
    prompts.write_text("".join(json.dumps({"item_id": f"p{i}", "prompt": f"Question {i}?"}) + "\n" for i in range(3)))
    with ApiFake() as api:
        specs = [f"openai:{api.url}#gpt-4.1-mini;max_tokens=16", f"local:{api.url}#m"]
        code, out, _ = run_cli(capsys, "generate", str(prompts), *[a for s in specs for a in ("--model", s)],
                               "--output", str(tmp_path / "o.jsonl"), "--no-cache", "--dry-run")
        models = [parse_model_spec(s) for s in specs]
        lines = dry_run_lines(estimate_generate(load_prompts(str(prompts)), models), per_model=True,
                              header="dry run: 3 prompts x 2 models")
    assert code == 0 and out.splitlines() == lines


def test_generate_dry_run_says_an_unknown_price_is_unknown(keys, tmp_path, capsys):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"item_id": "a", "prompt": "Hello there?"}) + "\n")
    code, text = preflab(capsys, "generate", str(prompts), "--model", "openai:gpt-imaginary-9", "--output",
                         str(tmp_path / "o.jsonl"), "--no-cache", "--dry-run")
    assert code == 0, text
    assert "cost unknown (no price in the table)" in text
    assert "estimated cost unknown: no price for gpt-imaginary-9" in text and "estimated cost $" not in text


def test_compare_dry_run_counts_what_the_run_sends(keys, tmp_path, capsys):
    items = items_file(tmp_path / "items.jsonl", {f"q{i:03d}": (f"GOOD answer {i}", f"answer {i}") for i in range(5)})
    cache = tmp_path / "judge.sqlite"
    with ApiFake() as api:
        args = ["compare", str(items), "--base", "old", "--candidate", "new", "--judge",
                f"openai:{api.url}#gpt-4.1-mini", "--rubric", "abt", "--rubric", "ab", "--cache", str(cache)]
        code, text = preflab(capsys, *args, "--dry-run")
        assert code == 0, text
        assert api.log == [] and total_calls(text) == (20, 0)  # 5 prompts x 2 orders x 2 rubrics
        assert "unknown" not in text and "estimated cost $" in text
        code, text = preflab(capsys, *args)
        assert code == 0, text
        assert len(api.log) == 20
        code, text = preflab(capsys, *args, "--dry-run")
        assert total_calls(text) == (0, 20) and len(api.log) == 20


def test_compare_refuses_mixed_model_versions_unless_allow_mixed(tmp_path, capsys):
    rows = verdict_rows(counts_specs(8, 2), "abt")
    for i, r in enumerate(rows):
        r.update(judge="openai:gpt-4.1-mini", model_version="gpt-4.1-mini-2025-04-14" if i < 12 else
                 "gpt-4.1-mini-2026-01-01")
    path = write_jsonl(tmp_path / "v.jsonl", rows)
    args = ["compare", "--base", "old", "--candidate", "new", "--verdicts", str(path)]
    code, text = preflab(capsys, *args)
    assert code == 2 and "v.jsonl, line 13: field 'model_version'" in text and "mixed model versions" in text
    assert "Traceback" not in text
    with pytest.raises(SystemExit) as e:
        main([*args, "--allow-mixed", "--json", "-"])
    assert e.value.code == 0
    report = json.loads(capsys.readouterr().out)
    assert any("pooled with --allow-mixed" in n and "model versions" in n for n in report["notes"])
    assert report["dimensions"][0]["wins"] == 8


def test_generate_max_cost_stops_sending_and_a_rerun_continues(keys, tmp_path, capsys):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("".join(json.dumps({"item_id": f"p{i}", "prompt": f"Question {i}?"}) + "\n"
                               for i in range(20)))
    out, cache = tmp_path / "out.jsonl", tmp_path / "c.sqlite"
    with ApiFake() as api:
        args = ["generate", str(prompts), "--model", f"openai:{api.url}#gpt-4.1-mini;max_tokens=16", "--output",
                str(out), "--cache", str(cache), "--concurrency", "1", "--quiet"]
        code, text = preflab(capsys, *args, "--max-cost", "0.0001")
        assert code == 1 and "stopped at --max-cost $0.0001" in text, text
        costs = [json.loads(line)["cost"] for line in out.read_text().splitlines()]
        assert 0 < len(costs) < 20 and len(api.log) == len(costs)  # nothing sent past the cap
        assert sum(costs[:-1]) < 0.0001 <= sum(costs)  # the call that reached the cap was the last one sent
        code, text = preflab(capsys, *args, "--max-cost", "1")
        assert code == 0, text
        assert len(api.log) == 20 and sum(api.answered.values()) == 20  # the first run's answers came from the cache
        code, text = preflab(capsys, "generate", str(prompts), "--model", f"openai:{api.url}#gpt-imaginary-9",
                             "--output", str(tmp_path / "o.jsonl"), "--no-cache", "--max-cost", "1")
        assert code == 2 and "--max-cost needs a known price" in text and len(api.log) == 20


def test_sequential_compare_keeps_an_unknown_judge_price_unknown(keys, tmp_path, capsys):
    items = items_file(tmp_path / "items.jsonl", {f"q{i:03d}": (f"GOOD answer {i}", f"answer {i}") for i in range(12)})
    with ApiFake() as api:
        args = ["compare", str(items), "--base", "old", "--candidate", "new", "--judge",
                f"openai:{api.url}#ft:gpt-4.1-mini:acme", "--sequential", "--no-cache"]  # no list price
        code, text = preflab(capsys, *args, "--max-cost", "1")
        assert code == 2 and "--max-cost needs a known price" in text and api.log == []
        code, text = preflab(capsys, *args)
        assert code in (0, 1) and "Traceback" not in text, text
        assert "cost unknown (no price for this judge)" in text and len(api.log) > 0


def test_a_verdict_replay_under_max_cost_refuses_unknown_costs(tmp_path, capsys):
    rows = verdict_rows(counts_specs(8, 2), "abt")
    rows[5]["cost"] = None
    path = write_jsonl(tmp_path / "v.jsonl", rows)
    code, text = preflab(capsys, "compare", "--base", "old", "--candidate", "new", "--verdicts", str(path),
                         "--sequential", "--max-cost", "0.01")
    assert code == 2 and "v.jsonl, line 6: field 'cost'" in text and "Traceback" not in text


def test_a_jury_with_an_unpriced_member_runs_and_says_its_cost_is_unknown(keys, tmp_path):
    from judge.runner.jury_run import run_jury
    from judge.runner.run import RunConfig
    from judge.verdicts.pairs import Pair
    from judge.verdicts.rubrics import load_rubric

    pairs = [Pair(f"q{i}", f"prompt {i}", "new", f"GOOD {i}", "old", f"plain {i}", None) for i in range(3)]
    with ApiFake() as api:
        res = run_jury(pairs, [f"openai:{api.url}#gpt-4.1-mini", f"openai:{api.url}#ft:gpt-4.1-mini:acme"],
                       RunConfig(load_rubric("ab")), cache=tmp_path / "c.sqlite")
    assert res[0].stats.cost > 0 and res[1].stats.cost is None
    assert all(r.verdicts["error"].isna().all() for r in res) and len(api.log) == 12


def test_generate_with_an_unpriced_model_reports_its_cost_as_unknown(keys, tmp_path, capsys):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("".join(json.dumps({"item_id": f"p{i}", "prompt": f"Q{i}?"}) + "\n" for i in range(3)))
    out = tmp_path / "o.jsonl"
    with ApiFake() as api:
        code, text = preflab(capsys, "generate", str(prompts), "--model", f"openai:{api.url}#gpt-4.1-mini",
                             "--model", f"openai:{api.url}#ft:gpt-4.1-mini:acme", "--output", str(out),
                             "--no-cache", "--quiet")
    assert code == 0, text
    assert "cost unknown (no price for this model)" in text and "cost $" not in text
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["cost"] is None for r in rows] == [m == "ft:gpt-4.1-mini:acme" for m in (r["model"] for r in rows)]
