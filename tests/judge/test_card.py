"""The judge card and `preflab judge calibrate`: stable JSON keys, real numbers, escaped text."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest
from typer.testing import CliRunner

from judge.cards.card import render_card, summary_rows
from judge.metrics.adapters import load_judge_labels
from judge.metrics.calibrate import calibrate
from judge.report_text import format_interval
from preflab_cli.judge_cmds import app
from tests.judge.test_adapters import _write_labels

STABLE_KEYS = {"n_pairs", "consistency", "first_position_rate", "conservative", "agreement", "kappa", "tpr",
               "tnr", "length_bias", "self_preference", "calibration"}
EVIL = "<script>alert(1)</script><img src=x onerror=alert(2)>"


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)


def _tags(html: str) -> list[str]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


def test_cli_json_has_stable_keys_and_seed_numbers(tmp_path):
    labels = _write_labels(tmp_path / "judge_labels.csv")
    out = tmp_path / "m.json"
    card = tmp_path / "card.html"
    res = CliRunner().invoke(app, ["calibrate", str(labels), "--json", str(out), "--report", str(card),
                                   "--bootstrap", "200", "--judge-model", "seed judge"])
    assert res.exit_code == 0, res.output
    assert "position consistency" in res.output and "0.700" in res.output
    data = json.loads(out.read_text())
    assert STABLE_KEYS <= set(data)
    assert data["n_pairs"] == 20 and data["consistency"]["value"] == pytest.approx(0.7)
    assert data["first_position_rate"]["value"] == pytest.approx(0.65)
    assert data["conservative"] == {"a": 9, "b": 5, "tie": 6, "unparsable": 0}
    assert set(data["agreement"]) >= {"value", "lower", "upper"} and set(data["kappa"]) == {"value", "lower", "upper",
                                                                          "single_class_resamples"}
    assert data["agreement"]["value"] == pytest.approx(1.0)  # the fixture's human equals the conservative rule
    assert data["length_bias"] is None and data["calibration"] is None  # not in the data: null, not invented
    html = card.read_text()
    assert "seed judge" in html and "0.700 [" in html and "script" not in _tags(html)


def test_cli_reports_bad_input_with_line_and_field(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("item_id,verdict_ab,verdict_ba,human\nq1,A,B,A\nq2,A,B,nobody\n")
    res = CliRunner().invoke(app, ["calibrate", str(bad)])
    assert res.exit_code == 2
    assert "line 3" in res.output and "human" in res.output


def test_card_escapes_every_text(tmp_path):
    pairs = load_judge_labels(_write_labels(tmp_path / "judge_labels.csv"))
    pairs.attrs.update(source=EVIL, notes=[EVIL])
    report = calibrate(pairs, n_bootstrap=100)
    html = render_card(report, pairs, settings={"judge model": EVIL, "rubric": EVIL}, title=EVIL)
    assert "<script>" not in html and "&lt;script&gt;" in html
    tags = _tags(html)
    assert "script" not in tags
    assert tags.count("img") == sum(1 for _ in range(html.count("data:image/png;base64,")))  # only our charts


def test_an_interval_without_bounds_is_written_as_its_value_alone(tmp_path):
    """The card writes intervals as every report does (judge.report_text.format_interval): a value whose bounds
    are unknown (a bootstrap with no usable resample) is the value alone, never ``[nan, nan]``."""
    report = calibrate(load_judge_labels(_write_labels(tmp_path / "labels.csv")), n_bootstrap=50)
    report["kappa"] = {**report["kappa"], "lower": float("nan"), "upper": float("nan")}
    rows = dict(summary_rows(report))
    assert rows["Cohen's kappa (bootstrap CI)"] == format_interval(report["kappa"]) == f"{report['kappa']['value']:.3f}"
    assert "nan" not in render_card(report)


def test_pandalm_card_via_cli(shared_data, tmp_path):
    card, out = tmp_path / "pandalm.html", tmp_path / "pandalm.json"
    res = CliRunner().invoke(app, ["calibrate", str(shared_data / "pandalm"), "--report", str(card), "--json",
                                   str(out), "--bootstrap", "200"])
    assert res.exit_code == 0, res.output
    html = card.read_text()
    assert "0.698 [0.669, 0.725]" in html and "1-2: 0.852" in html
    assert html.count("data:image/png;base64,") == 3  # position, length, confusion (no probabilities: no reliability)
    assert json.loads(out.read_text())["humans"]["pairwise_kappa"]["2-3"] == pytest.approx(0.8617, abs=1e-4)


def test_llmfao_card_renders_real_numbers(shared_data, tmp_path):
    card = tmp_path / "llmfao.html"
    res = CliRunner().invoke(app, ["calibrate", str(shared_data / "llmfao"), "--report", str(card),
                                   "--length-threshold", "100", "--bootstrap", "200", "--judge", "gpt4"])
    assert res.exit_code == 0, res.output
    html = card.read_text()
    assert f"{943 / 2073:.3f}" in html and "favours second" in html
    assert "Krippendorff" in html and "Do not use for" in html


@pytest.mark.slow
def test_alpaca_card_renders_position_bias_by_model(shared_data, tmp_path):
    card = tmp_path / "alpaca.html"
    res = CliRunner().invoke(app, ["calibrate", str(shared_data / "alpaca_eval"), "--layout", "alpaca",
                                   "--report", str(card), "--bootstrap", "100"])
    assert res.exit_code == 0, res.output
    html = card.read_text()
    assert "favours second" in html and "prefers the longer answer" in html
    assert html.count("data:image/png;base64,") == 2  # by-model position chart and length chart


@pytest.mark.browser
def test_card_in_chromium_runs_no_injected_markup(tmp_path):
    from playwright.sync_api import sync_playwright

    pairs = load_judge_labels(_write_labels(tmp_path / "judge_labels.csv"))
    pairs.attrs.update(source=EVIL)
    path = tmp_path / "card.html"
    path.write_text(render_card(calibrate(pairs, n_bootstrap=100), pairs, title=EVIL))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium")
        page = browser.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(path.as_uri())
        assert page.locator("h1").inner_text() == EVIL  # shown as text
        assert page.evaluate("document.scripts.length") == 0 and dialogs == []
        browser.close()


def test_cli_on_judge_run_jsonl_with_human_lengths_and_family(tmp_path):
    """A logprob judge's `preflab judge run` output, calibrated with separate human labels and lengths."""
    import numpy as np

    rng = np.random.default_rng(0)
    verdict_rows, human_rows, pair_rows = [], [], []
    for i in range(120):
        mx, my = ("gpt-4o", "llama-3") if i % 2 else ("llama-3", "gpt-4o-mini")
        truth = rng.random() < 0.5  # x better
        ax, ay = "word " * int(rng.integers(5, 60)), "word " * int(rng.integers(5, 60))
        pair_rows.append({"item_id": f"q{i}", "prompt": "p", "model_x": mx, "answer_x": ax, "model_y": my,
                          "answer_y": ay})
        human_rows.append(f"q{i},{'A' if truth else 'B'}")
        for order in ("xy", "yx"):
            # A judge that adds 0.3 to whichever answer it sees first.
            p_first = (0.8 if truth == (order == "xy") else 0.2) + rng.normal(0, 0.1) + 0.3
            p_a = float(np.clip(p_first, 0.01, 0.99))
            verdict_rows.append({"item_id": f"q{i}", "model_x": mx, "model_y": my, "order": order, "p_a": p_a,
                                 "p_b": 1 - p_a, "p_tie": 0.0, "verdict": "A" if p_a > 0.5 else "B",
                                 "label_mass": 0.98, "raw": "A", "tokens": 100, "cost": 0.0, "latency": 0.2})
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text("\n".join(json.dumps(r) for r in verdict_rows) + "\n")
    human = tmp_path / "human.csv"
    human.write_text("item_id,human\n" + "\n".join(human_rows) + "\n")
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("\n".join(json.dumps(r) for r in pair_rows) + "\n")
    family = tmp_path / "family.csv"
    family.write_text("model,family\ngpt-4o,openai\ngpt-4o-mini,openai\nllama-3,meta\n")
    out, card = tmp_path / "m.json", tmp_path / "card.html"
    res = CliRunner().invoke(app, ["calibrate", str(verdicts), "--human", str(human), "--lengths", str(pairs),
                                   "--family", str(family), "--judge-family", "openai", "--json", str(out),
                                   "--report", str(card), "--bootstrap", "200"])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["n_pairs"] == 120 and data["orders"] == "both"
    # The first-slot push makes about half the pairs inconsistent: conservative ties, while averaging
    # the two orders' probabilities cancels the push.
    assert data["consistency"]["upper"] < 0.8 and data["first_position_rate"]["lower"] > 0.6
    assert data["conservative"]["tie"] > 20 and data["agreement_averaged"]["value"] > 0.9
    assert data["agreement"]["value"] < data["agreement_averaged"]["value"]
    assert data["calibration"]["n"] == 120 and 0 <= data["calibration"]["ece"] < 0.3
    assert data["length_bias"]["judge_prefers_longer"]["n"] > 0 and data["length_bias"]["human_prefers_longer"]
    assert data["self_preference"]["n"] == 120 and data["self_preference"]["judge_family"] == "openai"
    assert card.read_text().count("data:image/png;base64,") == 4  # all four charts


def test_an_undefined_pairwise_kappa_is_a_dash_not_nan():
    """Two voters who share no decided pair have no kappa: the row said ``1-8: nan`` (the app's calibration page)."""
    from judge.cards.card import summary_rows

    humans = {"fleiss_kappa": 0.011, "krippendorff_alpha": 0.019, "pairwise_kappa": {"1-2": 0.045, "1-8": float("nan")},
              "leave_one_out": {"judge": None, "human": None}}
    report = {"n_pairs": 3, "orders": "both", "conservative": {"a": 1, "b": 1, "tie": 1, "unparsable": 0},
              "humans": humans}
    row = dict(summary_rows(report))["humans among themselves"]
    assert "1-2: 0.045, 1-8: —" in row and "nan" not in row
