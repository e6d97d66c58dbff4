"""Sequential mode: the anytime-valid test by simulation (Monte Carlo error stated in each bound), the
confidence sequence, the replay of a verdict file, and ``--plan``."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.special import betaln

from arena.simulation.power import exact_pairs_needed, sign_test_power
from judge.gate.sequential import (
    anytime_p_values,
    confidence_sequence,
    log_e_value,
    naive_stopping_index,
    simulate,
)
from judge.stats import sign_test
from tests.judge.compare_files import counts_specs, items_file, preflab, verdict_file


def test_the_e_value_is_the_beta_binomial_mixture_likelihood_ratio() -> None:
    # E = ∫ p^W (1-p)^L Beta(p; a, a) dp / (1/2)^n, by quadrature
    p = np.linspace(1e-6, 1 - 1e-6, 200_001)
    for w, lo, a in [(7, 3, 1.0), (30, 10, 5.0), (0, 4, 2.0)]:
        dens = np.exp((a - 1) * np.log(p * (1 - p)) - betaln(a, a))
        numeric = np.trapezoid(p**w * (1 - p) ** lo * dens, p) * 2.0 ** (w + lo)
        assert math.exp(log_e_value(w, lo, a)) == pytest.approx(numeric, rel=1e-4)
    assert anytime_p_values(np.array([0, 0, 0]))[-1] == 1.0  # ties carry no evidence


# savvi 0.3.1 (PyPI; Lindon & Malek 2022), in its own venv: Multinomial(0.05, np.array([.5, .5]), k=2 * a) fed the
# wins and losses one at a time, then np.log(m.odds) and m.calculate_conf_int()[0] (cvxpy)
SAVVI = [((30, 10, 5.0), 3.37791182037488, 0.5097431526195844, 0.915325888440666),
         ((26, 14, 5.0), 0.6595446523017362, 0.4231793168658676, 0.8377230891775279),
         ((8, 2, 1.0), 0.7269140430307632, 0.35304219285092425, 0.9895168968093853),
         ((60, 40, 5.0), 0.6236123462332405, 0.4522805742144106, 0.7363292324853571)]


@pytest.mark.parametrize(("counts", "log_odds", "lower", "upper"), SAVVI)
def test_e_value_and_confidence_sequence_match_savvi(counts, log_odds, lower, upper) -> None:
    w, lo, a = counts
    assert float(log_e_value(w, lo, a)) == pytest.approx(log_odds, rel=1e-9)
    ci = confidence_sequence(w, lo, 0.05, a)
    assert (ci.lower, ci.upper) == pytest.approx((lower, upper), abs=1e-6)


def test_type_one_error_holds_with_a_look_after_every_pair_and_the_naive_look_inflates_it() -> None:
    reps, n = 4000, 300
    r = simulate(0.5, n, reps, alpha=0.05, seed=1)
    # Ville: P(reject) <= 0.05; allow 3 Monte Carlo standard errors (se <= 0.0035 at 4000 reps)
    assert r["rejection_rate"] <= 0.05 + 3 * r["rejection_se"]
    # the sign test repeated after every pair rejects far more often than 5% (about 0.3 at 300 looks)
    assert r["naive_rejection_rate"] > 0.2 and r["naive_rejection_rate"] - 3 * r["naive_rejection_se"] > 0.05


def test_naive_thresholds_are_the_exact_sign_test() -> None:
    for m in range(1, 80):
        steps = np.array([[1] * m])
        _, hit = naive_stopping_index(steps, 0.05)
        assert bool(hit[0]) == any(sign_test(k, 0).p_value <= 0.05 for k in range(1, m + 1))
    # 28-12 in that order: the naive look rejects at some pair; the exact test at 40 gives p 0.0166
    steps = np.array([[1] * 28 + [-1] * 12])
    stop, hit = naive_stopping_index(steps, 0.05)
    assert hit[0] and stop[0] <= 40


@pytest.mark.parametrize("p", [0.70, 0.80])
def test_stopping_early_at_a_real_difference(p) -> None:
    fixed, _ = exact_pairs_needed(p)
    r = simulate(p, 6 * fixed, 400, seed=2)
    assert r["rejection_rate"] > 0.95
    # the mean stopping time is within a small factor of the fixed-n design (which has only 80% power)
    assert r["mean_pairs"] < 2 * fixed


def test_the_confidence_sequence_is_the_e_process_inverted() -> None:
    ci = confidence_sequence(30, 10, alpha=0.05)
    assert ci.lower < 0.75 < ci.upper
    # 0.5 is outside exactly when the e-value against 1/2 reaches 1/alpha
    for w, lo in [(30, 10), (26, 14), (60, 40), (8, 2)]:
        outside = not (confidence_sequence(w, lo, 0.05).lower < 0.5 < confidence_sequence(w, lo, 0.05).upper)
        assert outside == (log_e_value(w, lo) >= math.log(20))
    # wider than the fixed-n Wilson interval: the price of looking at any time
    wilson = sign_test(30, 10).win_rate
    assert ci.lower < wilson.lower and ci.upper > wilson.upper


def test_confidence_sequence_covers_the_truth_at_every_look() -> None:
    rng = np.random.default_rng(3)
    misses, reps = 0, 300
    for _ in range(reps):
        wins = np.cumsum(rng.random(120) < 0.62)
        for n in range(10, 121, 10):  # a look every 10 pairs
            ci = confidence_sequence(int(wins[n - 1]), n - int(wins[n - 1]), 0.05)
            if not ci.lower <= 0.62 <= ci.upper:
                misses += 1
                break
    # P(ever miss) <= 0.05; 3 standard errors at 300 reps is 0.038
    assert misses / reps <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)


def test_sequential_replay_stops_early_and_caps_items(tmp_path, capsys) -> None:
    strong = verdict_file(tmp_path / "concise.jsonl", counts_specs(180, 20), "concise")
    null = verdict_file(tmp_path / "abt.jsonl", counts_specs(100, 100), "abt")
    args = ["compare", "--base", "old", "--candidate", "new", "--verdicts", str(strong), "--verdicts", str(null),
            "--sequential", "--json", "-"]
    code, out, err = preflab(capsys, *args)
    assert code == 0, err
    report = json.loads(out)
    rows = {r["dimension"]: r for r in report["dimensions"]}
    seq = report["sequential"]
    assert seq["stopped_at"]["concise"] is not None and seq["stopped_at"]["concise"] < 60
    assert rows["concise"]["verdict"] == "better" and rows["concise"]["decisive"] < 60
    assert seq["stopped_at"]["abt"] is None and rows["abt"]["verdict"] == "no evidence"
    assert "anytime-valid" in report["test"]
    code, out, _ = preflab(capsys, *args, "--max-items", "30")
    report = json.loads(out)
    assert report["sequential"]["pairs_judged"] <= 30 and report["sequential"]["stopped_because"] == "max items reached"
    code, out, _ = preflab(capsys, *args, "--max-cost", "0.02")  # 0.002 a pair (two orders): 10 pairs
    report = json.loads(out)
    assert report["sequential"]["cost"] <= 0.02 + 1e-12
    assert max(r["wins"] + r["losses"] + r["ties"] for r in report["dimensions"]) <= 10


def test_plan_gives_the_smallest_detectable_win_rate_calls_and_cost(tmp_path, capsys) -> None:
    items = items_file(tmp_path / "items.jsonl", {f"q{i:03d}": ("an answer", "another answer") for i in range(100)})
    code, out, err = preflab(capsys, "compare", str(items), "--plan", "--rubric", "concise", "--rubric", "abt",
                             "--judge", "openai:gpt-4.1-mini", "--json", "-")
    assert code == 0, err
    plan = json.loads(out)["plan"]
    mdw = plan["min_detectable_win_rate"]
    assert sign_test_power(100, mdw) >= 0.8 > sign_test_power(100, mdw - 0.005)
    assert plan["judge_calls"] == 100 * 2 * 2 and plan["price_known"] and plan["cost"] > 0
    code, out, _ = preflab(capsys, "compare", str(items), "--plan", "--judge", "openai:some-unknown-model",
                           "--json", "-")
    assert json.loads(out)["plan"]["cost"] is None
    code, _, err = preflab(capsys, "compare", str(items), "--plan", "--judge", "openai:some-unknown-model")
    assert "unknown (no price for this judge)" in err + _


def test_live_sequential_judges_in_chunks_and_stops_at_max_items(tmp_path, capsys) -> None:
    from tests.judge.fault_server import Faults, FaultServer

    items = items_file(tmp_path / "items.jsonl", {f"q{i:03d}": (f"new answer {i}", f"old answer {i}")
                                                  for i in range(40)})
    with FaultServer(Faults()) as srv:
        code, out, err = preflab(capsys, "compare", str(items), "--base", "old", "--candidate", "new", "--judge",
                                 f"local:{srv.url}#fault", "--rubric", "abt", "--rubric", "concise", "--sequential",
                                 "--max-items", "20", "--concurrency", "8", "--no-cache", "--json", "-")
        requests = sum(srv.requests.values())
    assert code == 0, err
    report = json.loads(out)
    seq = report["sequential"]
    undecided = [d for d, s in seq["stopped_at"].items() if s is None]
    # chunks of 8, 8 and the 4 left: 20 prompts, both orders, for each dimension still running
    assert seq["pairs_judged"] == 20 or not undecided
    judged = {r["dimension"]: r["wins"] + r["losses"] + r["ties"] + r["unjudged"] for r in report["dimensions"]}
    # a dimension that stopped inside a chunk had that whole chunk judged: its tail is not counted
    assert requests == sum(2 * n for n in judged.values()) if not seq["pairs_judged"] < 20 and not (
        set(seq["stopped_at"]) - set(undecided)) else requests >= sum(2 * n for n in judged.values())
    for d in undecided:
        assert judged[d] == 20
    assert report["judge_runs"]["abt"]["calls"] == 2 * judged["abt"]


def test_plan_with_too_few_decisive_pairs_says_none(tmp_path, capsys) -> None:
    items = items_file(tmp_path / "items.jsonl", {f"q{i}": ("a", "b") for i in range(10)})
    code, out, err = preflab(capsys, "compare", str(items), "--plan", "--tie-rate", "0.5", "--judge",
                             "local:http://127.0.0.1:9/v1#m")
    # 5 decisive pairs: even 5-0 gives p = 0.0625 > 0.05, so no win rate is detectable
    assert code == 0 and "none (too few prompts)" in out and "cost: $0.0000" in out
