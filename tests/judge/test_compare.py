"""``preflab compare`` over judged rubrics: the course's numbers, the three checks, guards, JSON, bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from judge.gate.compare import GateSettings, compare_dimensions
from judge.gate.compare_inputs import candidate_codes
from judge.metrics.adapters import load_verdicts_jsonl
from judge.stats import holm_adjust
from tests.judge.compare_files import counts_specs, items_file, preflab, verdict_file, write_jsonl


def report_of(tmp_path, specs_by_dim: dict, **kw) -> dict:
    codes = {}
    for dim, specs in specs_by_dim.items():
        path = verdict_file(tmp_path / f"{dim}.jsonl", specs, dim)
        codes[dim] = candidate_codes(load_verdicts_jsonl(path), path, "old", "new")
    return compare_dimensions(codes, "old", "new", GateSettings(**kw))


@pytest.mark.parametrize(("wins", "losses", "p"), [(28, 12, 0.0166), (14, 6, 0.1153), (56, 24, 0.0005),
                                                   (24, 16, 0.2682)])
def test_the_course_sign_tests(tmp_path, wins, losses, p) -> None:
    row = report_of(tmp_path, {"overall": counts_specs(wins, losses)})["dimensions"][0]
    assert (row["wins"], row["losses"], row["decisive"]) == (wins, losses, wins + losses)
    assert row["p_value"] == pytest.approx(p, abs=5e-5)
    assert row["verdict"] == ("better" if p < 0.05 else "no evidence")
    if (wins, losses) == (28, 12):
        assert row["win_rate"]["value"] == pytest.approx(0.70)
        assert (round(row["win_rate"]["lower"], 2), round(row["win_rate"]["upper"], 2)) == (0.55, 0.82)


def test_the_course_capstone_through_the_cli_with_the_candidate_as_y(tmp_path, capsys) -> None:
    # 40 prompts: 31 wins, 3 losses, 6 ties of which 4 are position flips -> 0.91 over 34 decisive
    path = verdict_file(tmp_path / "v.jsonl", counts_specs(31, 3, ties=2, flips=4), "abt", candidate_is_x=False)
    code, out, err = preflab(capsys, "compare", "--base", "old", "--candidate", "new", "--verdicts", str(path),
                             "--json", "-")
    assert code == 0, err
    report = json.loads(out)
    row = report["dimensions"][0]
    assert {k: row[k] for k in ("dimension", "wins", "losses", "ties", "inconsistent", "decisive")} == {
        "dimension": "abt", "wins": 31, "losses": 3, "ties": 6, "inconsistent": 4, "decisive": 34}
    assert round(row["win_rate"]["value"], 2) == 0.91 and row["flip_rate"] == pytest.approx(0.1)
    assert set(row) >= {"dimension", "wins", "losses", "ties", "inconsistent", "decisive", "win_rate", "p_value",
                        "p_holm", "verdict", "flip_rate"}
    assert set(report) >= {"dimensions", "tasks", "checks", "settings"}
    assert "0.912 [0.770, 0.970]" in err  # the console table went to stderr, the JSON to stdout


def test_holm_matches_statsmodels_and_decides_the_verdicts(tmp_path) -> None:
    multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
    p = np.array([0.01, 0.04, 0.03, 0.005, 0.5])
    assert holm_adjust(p) == pytest.approx(multipletests(p, method="holm")[1])
    # 28-12 alone is significant (p 0.0166); beside two more dimensions Holm makes it p 0.0166 * 3 = 0.0499
    # and with 24-16 beside it, only at most 0.05: the verdicts follow the adjusted values
    rep = report_of(tmp_path, {"a": counts_specs(28, 12), "b": counts_specs(24, 16), "c": counts_specs(20, 20)})
    rows = {r["dimension"]: r for r in rep["dimensions"]}
    assert rows["a"]["p_holm"] == pytest.approx(3 * rows["a"]["p_value"])
    assert rows["a"]["verdict"] == "better" and rows["b"]["verdict"] == "no evidence"
    rep4 = report_of(tmp_path, {"a": counts_specs(28, 12), "b": counts_specs(24, 16), "c": counts_specs(20, 20),
                                "d": counts_specs(21, 19)})
    assert rep4["dimensions"][0]["verdict"] == "no evidence"  # 4 x 0.0166 > 0.05


def test_a_guard_that_is_significantly_worse_exits_1_and_says_which(tmp_path, capsys) -> None:
    better = verdict_file(tmp_path / "concise.jsonl", counts_specs(28, 12), "concise")
    worse = verdict_file(tmp_path / "correct.jsonl", counts_specs(12, 28), "correctness")
    args = ["compare", "--base", "old", "--candidate", "new", "--verdicts", str(better), "--verdicts", str(worse)]
    code, out, _ = preflab(capsys, *args, "--guard", "correctness")
    assert code == 1 and "FAILED" in out and "correctness" in out.split("FAILED")[1]
    assert preflab(capsys, *args, "--guard", "concise")[0] == 0
    assert preflab(capsys, *args)[0] == 0  # without guards the command reports and passes
    code, _, err = preflab(capsys, *args, "--guard", "safety")
    assert code == 2 and "'safety' is not a dimension" in err


def test_a_guard_whose_judge_flips_on_every_pair_has_no_verdict_and_exits_3(tmp_path, capsys) -> None:
    """The judge's two orders disagree on all 40 pairs: the gate can neither pass nor fail on its verdicts."""
    path = verdict_file(tmp_path / "abt.jsonl", counts_specs(0, 0, flips=40), "abt")
    html = tmp_path / "gate.html"
    code, out, _ = preflab(capsys, "compare", "--base", "old", "--candidate", "new", "--verdicts", str(path),
                           "--guard", "abt", "--report", str(html))
    assert code == 3
    assert "gate: no verdict: the judge is not usable on guard abt" in out and "passed" not in out
    page = html.read_text()
    assert "<p class='noverdict'>No verdict: the judge is not usable on guard abt" in page
    assert "Gate passed" not in page and "class='pass'" not in page
    ok = verdict_file(tmp_path / "ok.jsonl", counts_specs(28, 12, flips=2), "abt")  # 5% flips: a usable judge
    assert preflab(capsys, "compare", "--base", "old", "--candidate", "new", "--verdicts", str(ok),
                   "--guard", "abt")[0] == 0


def test_compare_prints_no_note_about_brier_or_ece_it_never_computes(tmp_path, capsys) -> None:
    """The demo's SmolLM2 file has low-label-mass rows: calibrate leaves them out of Brier/ECE; compare has none."""
    from pathlib import Path

    demo = Path(__file__).resolve().parents[2] / "data" / "demo"
    rows = [line for line in (demo / "verdicts-smollm2.jsonl").read_text().splitlines()
            if '"model_x":"atlas-terse","model_y":"beacon-verbose"' in line]
    path = tmp_path / "tvv.jsonl"
    path.write_text("\n".join(rows) + "\n")
    assert load_verdicts_jsonl(path).attrs["probability_notes"]  # the file does have such rows
    code, out, err = preflab(capsys, "compare", str(demo / "items.jsonl"), "--base", "beacon-verbose",
                             "--candidate", "atlas-terse", "--verdicts", str(path))
    assert code == 0, err
    assert "Brier" not in out + err and "ECE" not in out + err


def test_the_three_checks(tmp_path) -> None:
    # 10 pairs: the candidate's answers are longer and win every decisive pair; 2 pairs are identical answers
    answers = {f"q{i:03d}": ("a much longer answer with many words" if i >= 2 else "Same answer.",
                             "short" if i >= 2 else "same  ANSWER") for i in range(10)}
    items = items_file(tmp_path / "items.jsonl", answers)
    specs = [("c", "c")] * 2 + [("c", "c")] * 5 + [("c", "b")] * 3  # identical pairs won, 3 flips of 10
    path = verdict_file(tmp_path / "concise.jsonl", specs, "concise")
    from judge.gate.compare_run import CompareRequest, run_compare

    rep = run_compare(CompareRequest("old", "new", items=items, verdicts=(path,)))
    length = rep["checks"]["length"]
    assert length["mean_words"]["candidate"] > length["mean_words"]["base"]
    assert length["dimensions"]["concise"]["to_longer"] == 5  # the 5 decisive wins with a length difference
    assert rep["checks"]["flip_rate"]["concise"] == pytest.approx(0.3)
    assert rep["checks"]["identical"]["identical_pairs"] == 2
    assert rep["checks"]["identical"]["dimensions"]["concise"]["not_tied"] == 2
    warnings = " | ".join(rep["checks"]["warnings"])
    assert "30% of pairs (> 20%): not a usable judge" in warnings
    assert "2 of 2 pairs of identical answers did not tie" in warnings
    assert "not shorter" in warnings and "went to the longer answer" in warnings


def test_flip_rate_at_20_percent_is_not_a_warning(tmp_path) -> None:
    rep = report_of(tmp_path, {"abt": [("c", "c")] * 8 + [("c", "b")] * 2})
    assert rep["dimensions"][0]["flip_rate"] == pytest.approx(0.2) and not rep["checks"]["warnings"]


def test_unparsable_orders_are_left_out_and_counted(tmp_path) -> None:
    rep = report_of(tmp_path, {"abt": [("c", "c")] * 5 + [("c", None), (None, None)]})
    row = rep["dimensions"][0]
    assert row["wins"] == 5 and row["unjudged"] == 2
    assert any("2 pairs left out" in w for w in rep["checks"]["warnings"])


@pytest.mark.parametrize(("case", "where"), [
    ("base missing", "field 'model': --base 'gone' is not in the file"),
    ("one version only", "line 3: field 'item_id': item 'q001' was answered by 'new' but not by 'old'"),
    ("verdict pairs", "line 1: field 'model_y': a pair that is not 'new' vs 'old'"),
    ("unknown item", "line 7: field 'item_id': item 'q003' is not among the items"),
    ("no prompt", "line 2: field 'prompt': missing"),
])
def test_bad_input_exits_2_naming_file_line_and_field(tmp_path, capsys, case, where) -> None:
    items = items_file(tmp_path / "items.jsonl", {f"q{i:03d}": ("a", "b") for i in range(3)})
    verdicts = verdict_file(tmp_path / "v.jsonl", counts_specs(2, 1), "abt")
    args = ["--base", "old", "--candidate", "new"]
    if case == "base missing":
        args = ["--base", "gone", "--candidate", "new"]
    elif case == "one version only":
        write_jsonl(items, [{"item_id": "q000", "prompt": "p", "model": "new", "answer": "a"},
                            {"item_id": "q000", "prompt": "p", "model": "old", "answer": "b"},
                            {"item_id": "q001", "prompt": "p1", "model": "new", "answer": "a"}])
    elif case == "verdict pairs":
        verdicts = verdict_file(tmp_path / "v.jsonl", counts_specs(2, 1), "abt", base="other")
    elif case == "unknown item":
        verdicts = verdict_file(tmp_path / "v.jsonl", counts_specs(10, 0), "abt")
    elif case == "no prompt":
        write_jsonl(items, [{"item_id": "q000", "prompt": "p", "model": "new", "answer": "a"},
                            {"item_id": "q000", "model": "old", "answer": "b"}])
    code, _, err = preflab(capsys, "compare", str(items), *args, "--verdicts", str(verdicts))
    assert code == 2, err
    assert where in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_model_missing_from_a_verdict_only_run_and_nothing_to_compare(tmp_path, capsys) -> None:
    verdicts = verdict_file(tmp_path / "v.jsonl", counts_specs(2, 1), "abt")
    code, _, err = preflab(capsys, "compare", "--base", "old", "--candidate", "newer", "--verdicts", str(verdicts))
    assert code == 2 and "v.jsonl, line 1: field 'model_" in err
    items = items_file(tmp_path / "items.jsonl", {"q000": ("a", "b")})
    code, _, err = preflab(capsys, "compare", str(items), "--base", "old", "--candidate", "new")
    assert code == 2 and "nothing to compare on" in err


def test_gate_report_html_has_the_forest_plot_and_escapes_names(tmp_path, capsys) -> None:
    path = verdict_file(tmp_path / "v.jsonl", counts_specs(28, 12), "abt", candidate="<b>new</b>")
    html = tmp_path / "gate.html"
    code, _, err = preflab(capsys, "compare", "--base", "old", "--candidate", "<b>new</b>", "--verdicts", str(path),
                           "--report", str(html))
    assert code == 0, err
    page = html.read_text()
    assert "data:image/png;base64," in page and "&lt;b&gt;new&lt;/b&gt;" in page and "<b>new</b>" not in page
    assert "0.700 [0.546, 0.819]" in page


def test_the_pairs_layout_is_read_as_items(tmp_path) -> None:
    from judge.gate.compare_inputs import load_answers, version_pairs

    pairs = write_jsonl(tmp_path / "pairs.jsonl", [
        {"item_id": "q000", "prompt": "p0", "model_x": "old", "answer_x": "long old answer", "model_y": "new",
         "answer_y": "new"},
        {"item_id": "q001", "prompt": "p1", "model_x": "new", "answer_x": "n1", "model_y": "old", "answer_y": "o1"}])
    got = version_pairs(load_answers(pairs), "old", "new")
    assert [(p.item_id, p.model_x, p.answer_x, p.model_y, p.answer_y) for p in got] == [
        ("q000", "new", "new", "old", "long old answer"), ("q001", "new", "n1", "old", "o1")]


@pytest.mark.parametrize(("options", "field"), [
    (["--alpha", "2"], "--alpha"),
    (["--alpha", "0"], "--alpha"),
    (["--sequential", "--max-items", "-3"], "--max-items"),
    (["--sequential", "--max-cost", "0"], "--max-cost"),
    (["--plan", "--tie-rate", "1.5"], "--tie-rate"),
])
def test_out_of_range_options_exit_2_naming_the_option(tmp_path, capsys, options, field) -> None:
    items = items_file(tmp_path / "items.jsonl", {f"q{i:03d}": ("a", "b") for i in range(3)})
    verdicts = verdict_file(tmp_path / "v.jsonl", counts_specs(2, 1), "abt")
    code, _, err = preflab(capsys, "compare", str(items), "--base", "old", "--candidate", "new",
                           "--verdicts", str(verdicts), *options)
    assert code == 2, err
    assert f"field '{field}'" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_console_and_gate_report_print_the_same_check_lines(tmp_path, capsys) -> None:
    from html import escape

    from judge.gate.compare import check_lines

    items = items_file(tmp_path / "items.jsonl", {f"q{i:03d}": ("short", "a longer answer here") for i in range(30)})
    verdicts = verdict_file(tmp_path / "v.jsonl", counts_specs(20, 6, 2, 2), "concise")
    html = tmp_path / "gate.html"
    code, out, err = preflab(capsys, "compare", str(items), "--base", "old", "--candidate", "new", "--verdicts",
                             str(verdicts), "--report", str(html), "--json", str(tmp_path / "r.json"))
    assert code == 0, err
    lines = check_lines(json.loads((tmp_path / "r.json").read_text())["checks"])
    # concise: 6 of 26
    assert lines[0].startswith("length: mean words base 4.0, candidate 1.0") and "concise 23.1% [" in lines[0]
    page = html.read_text()
    assert all(line in out and escape(line) in page for line in lines)


def test_the_length_check_counts_words_as_the_vote_page_does() -> None:
    """One rule for "words": the gate's length check and the vote page's length label count the same words
    (a Markdown table's bars and rules are not words)."""
    from judge.gate.compare import length_check
    from judge.gate.compare_inputs import Answers
    from voting.pages.reading import length_label

    table = "| Model | 50.0 |\n|---|---|\n| a | **bold** |"
    answers = Answers("items.jsonl", {"q": "?"}, {"q": {"old": table, "new": "one two three"}}, {}, {})
    words = length_check(answers, "old", "new", {})["mean_words"]
    assert words == {"base": 4.0, "candidate": 3.0} and length_label(table) == "4 words"
