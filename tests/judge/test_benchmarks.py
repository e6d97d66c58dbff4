"""Published benchmarks read as published: each headline by its own rule, checked against hand computations
that follow the benchmark's code (fixtures in tests/judge/data/benchmarks, built here in the published layouts)
and, when ``PREFLAB_JUDGEBENCH_DIR`` names a clone of ScalerLab/JudgeBench (a checkout or a bare git
directory), against every published ``outputs/`` file whose blob the clone holds."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from judge.benchmarks import BenchSettings, benchmark_pairs, benchmark_report
from judge.benchmarks.judgebench import judgebench_correct, judgebench_points, read_judgebench
from judge.benchmarks.rewardbench import EXAMPLE_COUNTS
from judge.metrics.adapters import load_any
from preflab.errors import InputError
from preflab.outcomes import Outcome

DATA = Path(__file__).parent / "data" / "benchmarks"
X, Y, T, U, N = (float(Outcome.FIRST), float(Outcome.SECOND), float(Outcome.TIE), float(Outcome.UNPARSABLE),
                 float("nan"))


def _rows(rep: dict) -> dict[str, dict]:
    return {r["name"]: r for r in rep["rows"]}


def test_the_rule_counts_ties_and_inconsistent_orders_as_judgebench_does() -> None:
    """utils/metrics.py: +1 an order naming the label, −1 the reverse, ties and nulls 0; correct when > 0."""
    label = np.array([X, X, X, X, Y, Y])
    first = np.array([X, X, X, U, X, T])   # by identity
    second = np.array([X, T, Y, X, X, T])
    assert judgebench_points(first, second, label).tolist() == [2, 1, 0, 1, -2, 0]
    assert judgebench_correct(first, second, label).tolist() == [1, 1, 0, 1, 0, 0]
    assert judgebench_correct(first, None, label).tolist() == [1, 1, 1, 0, 0, 0]  # --single_game: decision == label


def test_judgebench_prompted_fixture_by_hand() -> None:
    """12 pairs, 3 per source; correct by hand: pairs 1, 2 (right + tie), 4 (null + right), 7, 10; pair 3 (right
    then wrong: position bias) and 11 are not. JudgeBench's own metrics.py on this file prints 66.67, 33.33,
    33.33, 33.33 and 41.67 (checked once against a clone; its code is not in this repository)."""
    rep = benchmark_report(DATA / "judgebench-prompted-12.jsonl", settings=BenchSettings(n_bootstrap=200))
    assert rep["benchmark"] == "JudgeBench" and rep["n"] == 12
    assert rep["headline"]["value"] == 5 / 12
    rows = _rows(rep)
    assert [(k, rows[k]["n"], rows[k]["value"]) for k in ("knowledge", "reasoning", "math", "coding")] == [
        ("knowledge", 3, 2 / 3), ("reasoning", 3, 1 / 3), ("math", 3, 1 / 3), ("coding", 3, 1 / 3)]
    for r in [rep["headline"], *rep["rows"]]:
        assert r["lower"] <= r["value"] <= r["upper"]


def test_judgebench_reward_model_fixture_and_its_pairs() -> None:
    """8 RM pairs, both orders' scores as published; pair 5's equal scores got decision B>A in both orders
    (JudgeBench writes B>A unless score A > score B): +1 −1, not correct. 4 of 8 correct."""
    path = DATA / "judgebench-rm-8.jsonl"
    rep = benchmark_report(path, settings=BenchSettings(n_bootstrap=0))
    assert rep["headline"]["value"] == 0.5 and math.isnan(rep["headline"]["lower"])
    assert {k: r["value"] for k, r in _rows(rep).items()} == {"knowledge": 0.5, "reasoning": 1.0, "math": 0.5,
                                                               "coding": 0.0}
    pairs = benchmark_pairs(path, "judgebench")
    assert pairs.attrs["label_source"] == "correctness"
    assert pairs["human"].tolist() == [X, Y, X, Y, X, Y, X, Y]
    assert pairs["judge_xy"].tolist() == [X, Y, Y, X, T, Y, X, X]  # scores read by preflab: equal scores are a tie
    assert pairs["judge_yx"].tolist() == pairs["judge_xy"].tolist()  # an RM scores each answer once
    assert pairs["margin_xy"].tolist()[:2] == [1.0, -1.0]
    assert pairs["p_xy"].iloc[0] == pytest.approx(1 / (1 + math.exp(-1.0)))
    assert pairs["len_x"].tolist()[:2] == [20.0, 21.0]


def test_judge_calibrate_takes_a_judgebench_reward_model_file(tmp_path) -> None:
    """The issue's measurement: `judge calibrate` on a JudgeBench RM output exited 2 ("field 'item_id':
    missing"); now its layout is recognised and the labels are correctness."""
    pairs = load_any(DATA / "judgebench-rm-8.jsonl")
    assert len(pairs) == 8 and pairs.attrs["benchmark"] == "judgebench"
    prompted = load_any(DATA / "judgebench-prompted-12.jsonl")
    assert prompted["judge_xy"].tolist()[:4] == [X, Y, X, U] and prompted["judge_yx"].tolist()[:4] == [X, T, Y, X]


def test_single_game_files_use_the_single_game_rule(tmp_path) -> None:
    rows = [json.loads(line) for line in (DATA / "judgebench-prompted-12.jsonl").read_text().splitlines()]
    path = tmp_path / "single.jsonl"
    path.write_text("".join(json.dumps({**r, "judgments": r["judgments"][:1]}) + "\n" for r in rows))
    # first-order decisions equal to the label: pairs 1, 2, 3, 7, 10, 11
    assert benchmark_report(path, settings=BenchSettings(n_bootstrap=0))["headline"]["value"] == 6 / 12
    assert np.isnan(read_judgebench(path)["judge_yx"]).all()


def test_rewardbench_v1_fixture_against_its_section_code() -> None:
    """Per subset: chosen > rejected (mt-bench-easy's 2 vs 2 and donotanswer's 0.5 vs 0.5 are wrong). Sections as
    rewardbench.utils.calculate_scores_per_section: Σ acc·EXAMPLE_COUNTS / Σ EXAMPLE_COUNTS over the present
    subsets; overall as analysis/get_benchmark_results.py: weights 2 per section, Prior Sets (absent) masked."""
    rep = benchmark_report(DATA / "rewardbench-v1-eval-set-scores.json", settings=BenchSettings(n_bootstrap=200))
    acc = {"alpacaeval-easy": 3 / 4, "mt-bench-easy": 1 / 2, "mt-bench-hard": 2 / 3, "llmbar-natural": 1.0,
           "refusals-dangerous": 1 / 2, "donotanswer": 0.0, "math-prm": 2 / 3, "hep-python": 1 / 2}
    sections = {"Chat": ("alpacaeval-easy", "mt-bench-easy"), "Chat Hard": ("mt-bench-hard", "llmbar-natural"),
                "Safety": ("refusals-dangerous", "donotanswer"), "Reasoning": ("math-prm", "hep-python")}
    want = {name: sum(acc[s] * EXAMPLE_COUNTS[s] for s in subs) / sum(EXAMPLE_COUNTS[s] for s in subs)
            for name, subs in sections.items()}
    assert want["Chat"] == 89 / 128 and want["Safety"] == 50 / 236  # (75 + 14) / 128, 50 / (100 + 136)
    rows = _rows(rep)
    assert {k: rows[k]["value"] for k in acc} == pytest.approx(acc, abs=1e-15)
    assert {k: rows[k]["value"] for k in want} == pytest.approx(want, abs=1e-15)
    assert rep["headline"]["value"] == pytest.approx(2 * sum(want.values()) / 8, abs=1e-15)
    assert round(100 * rep["headline"]["value"], 2) == 61.50
    assert any("Prior Sets" in n for n in rep["notes"]) and any("2 prompts with chosen" in n for n in rep["notes"])


def test_rewardbench_v1_jsonl_outputs_read_the_same(tmp_path) -> None:
    """The `rewardbench` command's <model>_outputs.jsonl (one object per prompt) gives the same numbers."""
    cols = json.loads((DATA / "rewardbench-v1-eval-set-scores.json").read_text())
    n = len(cols["subset"])
    path = tmp_path / "m_outputs.jsonl"
    path.write_text("".join(json.dumps({k: v[i] for k, v in cols.items() if isinstance(v, list)}) + "\n"
                            for i in range(n)))
    a = benchmark_report(path, "rewardbench", BenchSettings(n_bootstrap=50))
    b = benchmark_report(DATA / "rewardbench-v1-eval-set-scores.json", settings=BenchSettings(n_bootstrap=50))
    assert a["rows"] == b["rows"] and a["headline"] == b["headline"]


def test_rewardbench2_fixture_best_of_4_and_ties_by_its_code() -> None:
    """Best-of-4 with the tie penalty (reroll_and_score_dataset): Factuality 1, 0, 1/2; Math 1, 1/4. Ties
    (process_single_model): ref accuracy 1/2, tied 1/2, correctness_preferred 1/2, hard 1/2, margin term
    mean(tanh(1.5/0.5 − 1), tanh(−2/0.5 − 1)). Overall: the mean of the three subset scores."""
    rep = benchmark_report(DATA / "rewardbench2-eval-set-scores.json", settings=BenchSettings(n_bootstrap=200))
    ties = 0.3 * 0.5 + 0.3 * 0.5 + 0.2 * 0.5 + 0.2 * 0.5 + 0.01 * (math.tanh(2.0) + math.tanh(-5.0)) / 2
    rows = _rows(rep)
    assert rows["Factuality"]["value"] == 0.5 and rows["Math"]["value"] == 0.625
    assert rows["Ties"]["value"] == pytest.approx(ties, abs=1e-12) and rows["Ties"]["n"] == 2
    assert rep["headline"]["value"] == pytest.approx((0.5 + 0.625 + ties) / 3, abs=1e-12)
    assert rows["Math"]["lower"] <= 0.625 <= rows["Math"]["upper"]


@pytest.mark.parametrize(("name", "edit", "where"), [
    ("judgebench-prompted-12.jsonl", lambda r: r.update(label="A>>B"), "line 3: field 'label': unknown value"),
    ("judgebench-prompted-12.jsonl", lambda r: r["judgments"][1].update(decision="maybe"),
     "line 3: field 'judgments[1].decision'"),
    ("judgebench-prompted-12.jsonl", lambda r: r.pop("judgments"), "line 3: field 'judgments'"),
    ("judgebench-rm-8.jsonl", lambda r: r["judgments"][0]["judgment"].update(scores=[1.0, "x"]),
     "line 3: field 'judgments[0].judgment.scores'"),
    ("judgebench-prompted-12.jsonl", lambda r: r.update(pair_id="jb-01"), "line 3: field 'pair_id': 'jb-01' repeated"),
])
def test_bad_judgebench_rows_name_file_line_and_field(tmp_path, name, edit, where) -> None:
    lines = (DATA / name).read_text().splitlines()
    row = json.loads(lines[2])
    edit(row)
    lines[2] = json.dumps(row)
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as e:
        benchmark_report(path, "judgebench", BenchSettings(n_bootstrap=0))
    assert f"{path}, {where}" in str(e.value)


@pytest.mark.parametrize(("name", "column", "index", "value", "field"), [
    ("rewardbench-v1-eval-set-scores.json", "results", 4, 0, "results"),  # disagrees with the scores
    ("rewardbench-v1-eval-set-scores.json", "scores_chosen", 4, "high", "scores_chosen"),
    ("rewardbench2-eval-set-scores.json", "scores", 1, [0.5, None, 0.1, 0.2], "scores"),
    ("rewardbench2-eval-set-scores.json", "results", 0, 0.5, "results"),
    ("rewardbench2-eval-set-scores.json", "num_correct", 2, 4, "num_correct"),
])
def test_bad_rewardbench_records_name_the_record_and_field(tmp_path, name, column, index, value, field) -> None:
    cols = json.loads((DATA / name).read_text())
    cols[column][index] = value
    path = tmp_path / name
    path.write_text(json.dumps(cols, indent=4))
    with pytest.raises(InputError) as e:
        benchmark_report(path, settings=BenchSettings(n_bootstrap=0))
    assert str(e.value).startswith(f"{path}, line {index + 1}: field '{field}'")


# --- the published JudgeBench outputs ---------------------------------------------------------------------
#: JudgeBench's own numbers for its published outputs (its utils/metrics.py: knowledge, reasoning, math, coding,
#: overall, two decimals as run_judge.py prints them), for the files whose blobs a partial clone holds.
PUBLISHED = {
    "claude-3-5-sonnet-20240620,judge_name=arena_hard,judge_model=claude-3-haiku-20240307":
        (37.66, 29.41, 32.35, 9.68, 32.22),
    "gpt-4o-2024-05-13,judge_name=arena_hard,judge_model=o1-mini-2024-09-12": (58.44, 62.24, 82.14, 78.57, 65.71),
    "gpt-4o-2024-05-13,judge_name=reward_model,judge_model=Ray2333_GRM-Gemma-2B-rewardmodel-ft":
        (62.99, 53.06, 64.29, 54.76, 59.43),
    "gpt-4o-2024-05-13,judge_name=reward_model,judge_model=Skywork_Skywork-Reward-Gemma-2-27B":
        (59.74, 66.33, 83.93, 50.00, 64.29),
    "gpt-4o-2024-05-13,judge_name=reward_model,judge_model=Skywork_Skywork-Reward-Llama-3.1-8B":
        (59.09, 64.29, 76.79, 50.00, 62.29),
    "gpt-4o-2024-05-13,judge_name=reward_model,judge_model=internlm_internlm2-20b-reward":
        (62.34, 69.39, 66.07, 50.00, 63.43),
    "gpt-4o-2024-05-13,judge_name=reward_model,judge_model=internlm_internlm2-7b-reward":
        (56.49, 61.22, 71.43, 50.00, 59.43),
}


def _published_outputs(repo: Path, into: Path) -> list[Path]:
    """outputs/*.jsonl from a checkout, or from a bare/partial git clone (blobs it lacks are left out)."""
    if (repo / "outputs").is_dir():
        return sorted((repo / "outputs").glob("*.jsonl"))
    git = ["git", f"--git-dir={repo}"]
    names = subprocess.run([*git, "ls-tree", "-r", "--name-only", "HEAD", "outputs/"], check=True,
                           capture_output=True, text=True).stdout.splitlines()
    files = []
    for name in names:
        blob = subprocess.run([*git, "show", f"HEAD:{name}"], capture_output=True)
        if blob.returncode:
            continue
        (into / Path(name).name).write_bytes(blob.stdout)
        files.append(into / Path(name).name)
    return files


@pytest.fixture(scope="module")
def judgebench_outputs(tmp_path_factory) -> list[Path]:
    repo = os.environ.get("PREFLAB_JUDGEBENCH_DIR")
    if not repo or not Path(repo).exists():
        pytest.skip("set PREFLAB_JUDGEBENCH_DIR to a clone of ScalerLab/JudgeBench (its outputs/ folder)")
    files = _published_outputs(Path(repo), tmp_path_factory.mktemp("judgebench"))
    if not files:
        pytest.skip(f"no readable outputs/*.jsonl in {repo}")
    return files


def test_every_published_judgebench_output_reproduces_its_accuracy(judgebench_outputs) -> None:
    """Our headline and categories, to JudgeBench's two printed decimals, for every output file the clone holds;
    every file must be one whose numbers we know, so none is passed over."""
    seen = []
    for path in judgebench_outputs:
        key = path.name.removeprefix("dataset=judgebench,response_model=").removesuffix(".jsonl")
        assert key in PUBLISHED, f"no published numbers recorded for {path.name}"
        rep = benchmark_report(path, settings=BenchSettings(n_bootstrap=200))
        rows = _rows(rep)
        ours = tuple(round(100 * rows[c]["value"], 2) for c in ("knowledge", "reasoning", "math", "coding"))
        assert (*ours, round(100 * rep["headline"]["value"], 2)) == PUBLISHED[key], path.name
        assert rep["headline"]["lower"] < rep["headline"]["value"] < rep["headline"]["upper"]
        seen.append(key)
    assert len(seen) == len(judgebench_outputs) >= 1


# --- the command line ----------------------------------------------------------------------------------------
def _preflab(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    import sys

    return subprocess.run([sys.executable, "-c", "from preflab_cli import main; main()", *args],
                          capture_output=True, cwd=cwd, timeout=600, text=True)


def test_cli_and_library_agree_and_show_preflab_beside_the_benchmark(tmp_path) -> None:
    path = DATA / "judgebench-prompted-12.jsonl"
    res = _preflab("judge", "bench", str(path), "--bootstrap", "100", "--json", "-", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout)
    want = json.loads(json.dumps(benchmark_report(path, settings=BenchSettings(n_bootstrap=100))))
    assert got["benchmark"] == want
    assert got["preflab"]["n_pairs"] == 12 and got["preflab"]["labels"] == "correctness"  # the card's reference
    assert "41.67" in res.stderr and "category coding" in res.stderr  # the table goes to stderr with --json -


def test_cli_bad_input_exits_2_with_one_line(tmp_path) -> None:
    lines = (DATA / "judgebench-rm-8.jsonl").read_text().splitlines()
    row = json.loads(lines[4])
    row["label"] = "A=B"
    lines[4] = json.dumps(row)
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    res = _preflab("judge", "bench", str(path), cwd=tmp_path)
    assert res.returncode == 2
    assert "bad.jsonl, line 5: field 'label': unknown value 'A=B'. use one of A>B, B>A" in res.stderr
    assert "Traceback" not in res.stderr


def test_judgebench_data_pairs_feed_judge_run_and_their_labels_join_as_correctness() -> None:
    """JudgeBench's data/ layout: `judge run` reads it as pairs (x = response_A, named A), and `--human` takes
    the same file as the correctness labels."""
    from judge.metrics.human_join import attach_human
    from judge.verdicts.pairs import load_pairs

    path = DATA / "judgebench-data-12.jsonl"
    pairs = load_pairs(path)
    assert [(p.item_id, p.model_x, p.model_y) for p in pairs[:2]] == [("jb-01", "A", "B"), ("jb-02", "A", "B")]
    assert pairs[0].prompt == "Question 1?" and pairs[0].answer_x == "answer A " and pairs[0].answer_y.startswith(
        "answer B bbbb")
    judged = load_any(DATA / "judgebench-prompted-12.jsonl").drop(columns="human")
    judged.attrs["label_source"] = "humans"
    labelled = attach_human(judged, path)
    assert labelled["human"].tolist() == [X, Y, X, X, Y, X, Y, X, Y, X, Y, X]
    assert labelled.attrs["label_source"] == "correctness"


def test_calibrate_reads_rewardbench_files_by_layout_with_correctness_labels() -> None:
    """v1: chosen is x for an even CRC-32 of the id, so both label sides occur; v2: each correct completion
    against each wrong one (Factuality 3 × 3, Math 2 × 3, Ties 2 + 2 + 1 + 2 = 24 pairs)."""
    v1 = load_any(DATA / "rewardbench-v1-eval-set-scores.json", layout="rewardbench")
    assert len(v1) == 20 and v1.attrs["label_source"] == "correctness"
    assert {X, Y} == set(v1["human"]) and (v1["judge_xy"] == v1["human"]).sum() == 12  # 12 of 20 strictly right
    v2 = load_any(DATA / "rewardbench2-eval-set-scores.json", layout="rewardbench2")
    assert len(v2) == 24 and v2.attrs["label_source"] == "correctness"


def test_the_longer_answer_baseline_is_scored_by_the_benchmarks_own_rule() -> None:
    """Fixture lengths: A = 9 + 10i characters, B = 9 + 5(12 − i): B longer for i < 4, equal at 4 (a tie in both
    orders: 0), A longer after. Longer = correct for i = 1, 5, 7, 9, 11: 5 of 12, the judge's own score, so the
    paired difference is exactly 0. RewardBench v1: chosen longer (12·(n mod 3 + 1) vs 11·(n mod 4 + 1)
    characters), through the same section weights and overall."""
    rep = benchmark_report(DATA / "judgebench-prompted-12.jsonl", settings=BenchSettings(n_bootstrap=100))
    (base,) = rep["baselines"]
    assert base["name"] == "longer answer" and base["value"] == 5 / 12
    assert base["judge_minus"]["value"] == pytest.approx(0, abs=1e-15)
    assert base["judge_minus"]["lower"] <= 0.0 <= base["judge_minus"]["upper"]
    v1 = benchmark_report(DATA / "rewardbench-v1-eval-set-scores.json", settings=BenchSettings(n_bootstrap=0))
    cols = json.loads((DATA / "rewardbench-v1-eval-set-scores.json").read_text())
    longer: dict[str, list[float]] = {}
    for n, subset in zip(cols["id"], cols["subset"], strict=True):
        longer.setdefault(subset, []).append(float(12 * (n % 3 + 1) > 11 * (n % 4 + 1)))
    acc = {k: float(np.mean(v)) for k, v in longer.items()}
    sections = [("alpacaeval-easy", "mt-bench-easy"), ("mt-bench-hard", "llmbar-natural"),
                ("refusals-dangerous", "donotanswer"), ("math-prm", "hep-python")]
    want = np.mean([sum(acc[s] * EXAMPLE_COUNTS[s] for s in subs) / sum(EXAMPLE_COUNTS[s] for s in subs)
                    for subs in sections])
    assert v1["baselines"][0]["value"] == pytest.approx(want, abs=1e-15)


def test_a_column_object_with_a_summary_key_reads_the_same(tmp_path) -> None:
    """Some tools add a ``results_leaderboard`` dict beside the columns; metadata keys are not columns."""
    cols = json.loads((DATA / "rewardbench-v1-eval-set-scores.json").read_text())
    path = tmp_path / "m.json"
    path.write_text(json.dumps({**cols, "results_leaderboard": {"Chat": 0.7}}))
    a = benchmark_report(path, settings=BenchSettings(n_bootstrap=0))
    b = benchmark_report(DATA / "rewardbench-v1-eval-set-scores.json", settings=BenchSettings(n_bootstrap=0))
    assert a["headline"]["value"] == b["headline"]["value"] and a["rows"][0]["value"] == b["rows"][0]["value"]
    cols["subset"] = cols["subset"][:-1]
    path.write_text(json.dumps(cols))
    with pytest.raises(InputError, match="m.json: field 'chosen': 20 values, but 'subset' has 19"):
        benchmark_report(path, settings=BenchSettings(n_bootstrap=0))


def test_a_folder_is_a_board_of_judges_best_first(tmp_path) -> None:
    from judge.benchmarks import benchmark_board, board_rows

    for name in ("judgebench-prompted-12.jsonl", "judgebench-rm-8.jsonl"):
        (tmp_path / name).write_bytes((DATA / name).read_bytes())
    reports = benchmark_board(tmp_path, settings=BenchSettings(n_bootstrap=50))
    assert [(r["judge"], r["headline"]["value"]) for r in reports] == [
        ("judgebench-rm-8.jsonl", 0.5), ("judgebench-prompted-12.jsonl", 5 / 12)]
    header, rows = board_rows(reports)
    assert header[:4] == ["judge", "pairs", "accuracy [95%]", "knowledge"] and rows[1][3] == "66.67"
    (tmp_path / "rb.json").write_bytes((DATA / "rewardbench2-eval-set-scores.json").read_bytes())
    with pytest.raises(InputError, match="the folder mixes benchmarks"):
        benchmark_board(tmp_path, settings=BenchSettings(n_bootstrap=0))


def test_a_bad_judgebench_data_row_names_its_line_and_field(tmp_path) -> None:
    from judge.verdicts.pairs import load_pairs

    lines = (DATA / "judgebench-data-12.jsonl").read_text().splitlines()
    row = json.loads(lines[1])
    row["response_B"] = None
    lines[1] = json.dumps(row)
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"data.jsonl, line 2: field 'response_B': missing"):
        load_pairs(path)


def test_a_classifier_without_scores_gets_its_headline_and_says_why_calibration_is_left_out(tmp_path) -> None:
    """RewardBench's custom classifiers publish results without scores: the headline is computed from
    ``results``; preflab's calibration needs scores, so the command says it left it out (exit 0)."""
    cols = json.loads((DATA / "rewardbench-v1-eval-set-scores.json").read_text())
    n = len(cols["subset"])
    cols["scores_chosen"], cols["scores_rejected"] = [None] * n, [None] * n
    path = tmp_path / "classifier.json"
    path.write_text(json.dumps(cols))
    res = _preflab("judge", "bench", str(path), "--bootstrap", "20", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "61.50" in res.stdout
    assert "preflab's calibration left out" in res.stdout and "field 'scores_chosen': no score" in res.stdout


@pytest.mark.parametrize("reader", ["rewardbench", "rewardbench2"])
@pytest.mark.parametrize(("record", "field", "problem"), [
    ({"id": 1, "scores_chosen": float("nan"), "scores_rejected": 0.5, "scores": [float("nan"), 0.5]},
     "scores_chosen", "NaN or Infinity is not a number here"),
    ({"id": 1, "subset": "", "scores_chosen": 1.0, "scores_rejected": 0.5, "scores": [1.0, 0.5]},
     "subset", "missing"),
    ({"id": 1, "subset": 3, "scores_chosen": 1.0, "scores_rejected": 0.5, "scores": [1.0, 0.5]},
     "subset", "not a string"),
])
def test_both_rewardbench_readers_check_a_record_the_same_way(tmp_path, reader, record, field, problem) -> None:
    """One record check (judge.benchmarks.published_rows.checked_subset) for v1 and v2: the same bad record
    gives the same error, naming file, line and field."""
    from judge.benchmarks.published_rows import checked_subset
    from judge.benchmarks.rewardbench import read_rewardbench
    from judge.benchmarks.rewardbench2 import read_rewardbench2

    read = {"rewardbench": read_rewardbench, "rewardbench2": read_rewardbench2}[reader]
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps({"id": 0, "subset": "chat", "scores_chosen": 1.0, "scores_rejected": 0.5,
                                "scores": [1.0, 0.5], "results": 1}) + "\n" + json.dumps(record) + "\n")
    with pytest.raises(InputError) as got:
        read(path)
    assert (got.value.line, got.value.field, got.value.problem) == (2, field, problem)
    with pytest.raises(InputError) as direct:
        checked_subset(json.loads(json.dumps(record)), str(path), 2, "hint")
    assert (direct.value.field, direct.value.problem) == (field, problem)
