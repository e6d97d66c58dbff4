"""``preflab compare --lm-eval``: real lm-eval 0.4.13 output (tests/judge/data/lm_eval, made by its script) and
hand-built folders in the same layout for the course's numbers and the edge cases."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from judge.gate.lm_eval_logs import compare_lm_eval, metric_for
from tests.judge.compare_files import lm_eval_folder
from tests.judge.test_compare import preflab

REAL = Path(__file__).parent / "data" / "lm_eval"


def test_real_lm_eval_runs_are_joined_and_the_prompt_change_is_refused_unless_allowed(capsys) -> None:
    args = ["compare", "--lm-eval", str(REAL / "base"), str(REAL / "candidate")]
    code, _, err = preflab(capsys, *args)
    assert code == 2 and "field 'prompt_hash': document 0 differs" in err and "--allow-prompt-change" in err
    code, out, err = preflab(capsys, *args, "--allow-prompt-change", "--json", "-")
    assert code == 0, err
    report = json.loads(out)
    (task,) = report["tasks"]
    # what lm-eval itself reported for the two runs (results_*.json): acc 0.700 and 0.675 over 40 documents
    results = {v: json.loads(next((REAL / v).rglob("results_*.json")).read_text())["results"]["preflab_capitals"]
               for v in ("base", "candidate")}
    assert task["n"] == 40 and task["metric"] == "acc" and task["filter"] == "none"
    assert task["base"]["value"] == pytest.approx(results["base"]["acc,none"])
    assert task["candidate"]["value"] == pytest.approx(results["candidate"]["acc,none"])
    assert task["delta"]["value"] == pytest.approx(results["candidate"]["acc,none"] - results["base"]["acc,none"])
    assert set(task) >= {"task", "metric", "n", "base", "candidate", "delta", "mcnemar_p"}
    differs = {s["setting"] for s in report["settings"] if s["differs"]}
    assert differs == {"system instruction"}  # the one change made between the two runs
    assert "setting differs: system instruction" in err


def test_the_course_mcnemar_and_bootstrap_numbers(tmp_path) -> None:
    # 200 items: both right 140, base only 8, candidate only 20 -> McNemar 0.036, delta +0.06 [0.010, 0.115]
    base = [1.0] * 140 + [1.0] * 8 + [0.0] * 20 + [0.0] * 32
    cand = [1.0] * 140 + [0.0] * 8 + [1.0] * 20 + [0.0] * 32
    filters = ("strict-match", "flexible-extract")
    res = compare_lm_eval(lm_eval_folder(tmp_path / "a", "gsm8k", base, "exact_match", filters),
                          lm_eval_folder(tmp_path / "b", "gsm8k", cand, "exact_match", filters))
    (row,) = res["tasks"]
    assert (row["metric"], row["filter"]) == ("exact_match", "strict-match")  # lm-eval's gsm8k default
    assert row["mcnemar_p"] == pytest.approx(0.036, abs=5e-4)
    assert row["discordant"] == {"base_only": 8, "candidate_only": 20}
    assert row["delta"]["value"] == pytest.approx(0.06)
    assert (row["delta"]["lower"], row["delta"]["upper"]) == pytest.approx((0.010, 0.115), abs=1e-9)
    base2 = [1.0] * 140 + [1.0] * 13 + [0.0] * 15 + [0.0] * 32
    cand2 = [1.0] * 140 + [0.0] * 13 + [1.0] * 15 + [0.0] * 32
    row2 = compare_lm_eval(lm_eval_folder(tmp_path / "c", "t", base2),
                           lm_eval_folder(tmp_path / "d", "t", cand2))["tasks"][0]
    assert (row2["delta"]["lower"], row2["delta"]["upper"]) == pytest.approx((-0.04, 0.06), abs=1e-9)
    # Wilson 40/50 [0.670, 0.888] on a score
    row3 = compare_lm_eval(lm_eval_folder(tmp_path / "e", "t", [1.0] * 40 + [0.0] * 10),
                           lm_eval_folder(tmp_path / "f", "t", [1.0] * 40 + [0.0] * 10))["tasks"][0]
    assert (round(row3["base"]["lower"], 3), round(row3["base"]["upper"], 3)) == (0.670, 0.888)


def test_default_metrics_follow_lm_evals_task_yamls() -> None:
    assert metric_for("gsm8k", {}, None, None) == ("exact_match", "strict-match")
    assert metric_for("ifeval", {}, None, None) == ("prompt_level_strict_acc", "none")
    reported = {"results": {"mine": {"f1,none": 0.3, "f1_stderr,none": 0.1}}}
    assert metric_for("mine", reported, None, None) == ("f1", "none")
    assert metric_for("gsm8k", {}, "exact_match", "flexible-extract") == ("exact_match", "flexible-extract")


def test_a_different_document_is_refused_with_file_line_and_field(tmp_path, capsys) -> None:
    a = lm_eval_folder(tmp_path / "a", "t", [1.0, 0.0, 1.0])
    b = lm_eval_folder(tmp_path / "b", "t", [1.0, 1.0, 1.0], doc="other doc {}")
    code, _, err = preflab(capsys, "compare", "--lm-eval", str(a), str(b), "--allow-prompt-change")
    assert code == 2 and "samples_t_" in err and "line 1: field 'doc_hash': document 0 differs" in err


def test_harness_settings_that_differ_are_flagged(tmp_path) -> None:
    a = lm_eval_folder(tmp_path / "a", "t", [1.0, 0.0], settings={"chat_template_sha": "aaa"})
    b = lm_eval_folder(tmp_path / "b", "t", [1.0, 1.0], settings={"chat_template_sha": "bbb"})
    settings = {s["setting"]: s for s in compare_lm_eval(a, b)["settings"]}
    assert settings["chat template"]["differs"] and not settings["lm-eval version"]["differs"]


@pytest.mark.parametrize(("case", "message"), [
    ("no samples", "field 'samples_*.jsonl': no per-item samples in this folder. rerun lm-eval with --log_samples"),
    ("no results", "field 'results_*.json': no lm-eval results file"),
    ("missing task", "field 'task': no samples for task 'gsm8k'"),
    ("bad metric", "field 'acc': metric missing from this sample"),
])
def test_bad_lm_eval_folders_exit_2(tmp_path, capsys, case, message) -> None:
    a = lm_eval_folder(tmp_path / "a", "t", [1.0, 0.0])
    b = lm_eval_folder(tmp_path / "b", "t", [1.0, 1.0])
    extra: list[str] = []
    if case == "no samples":
        next(b.rglob("samples_*")).unlink()
    elif case == "no results":
        next(b.rglob("results_*")).unlink()
    elif case == "missing task":
        extra = ["--tasks", "gsm8k"]
    elif case == "bad metric":
        shutil.rmtree(b)
        b = lm_eval_folder(tmp_path / "b", "t", [1.0, 1.0], metric="f1")
    code, _, err = preflab(capsys, "compare", "--lm-eval", str(a), str(b), *extra)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_a_folder_of_two_runs_names_both_subfolders(capsys) -> None:
    # base/smollm2 and candidate/smollm2: both runs' model folders have one name, so name them by path
    code, _, err = preflab(capsys, "compare", "--lm-eval", str(REAL), str(REAL / "candidate"))
    assert code == 2, err
    assert "results of 2 models (base/smollm2, candidate/smollm2). pass one model's folder" in err


def test_documents_in_one_run_only_are_counted_and_reported(tmp_path, capsys) -> None:
    a = lm_eval_folder(tmp_path / "a", "t", [1.0, 0.0, 1.0, 1.0])  # the base ran 4 documents, the candidate 3
    b = lm_eval_folder(tmp_path / "b", "t", [1.0, 1.0, 1.0])
    code, out, err = preflab(capsys, "compare", "--lm-eval", str(a), str(b))
    assert code == 0, err
    assert "note: t: documents in one run only, left out: 1 of the base run, 0 of the candidate's" in out
    rep = compare_lm_eval(a, b)
    assert rep["tasks"][0]["n"] == 3 and rep["tasks"][0]["unpaired"] == {"base": 1, "candidate": 0}
