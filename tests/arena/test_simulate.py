"""The simulator: its probabilities agree with :mod:`arena.bt.likelihood`'s likelihoods, its draws with its
probabilities, fits of its output recover the truth, and its files load back losslessly."""

from __future__ import annotations

import json
import math

import jax.numpy as jnp
import numpy as np
import pytest

from arena.bt import likelihood as bt
from arena.bt.ties import tie_parameter_for_rate
from arena.io.battles import STYLE_COLUMNS, aggregate, load_battles
from arena.simulation.files import parse_voter_noise, simulate, simulate_to_files, truth_path_for
from arena.simulation.simulate import (
    SEED_STRENGTHS,
    ArenaSpec,
    default_model_names,
    length_feature,
    outcome_probabilities,
    simulate_codes,
    spread_strengths,
    voter_kinds,
)
from preflab.outcomes import Outcome

pytestmark = pytest.mark.usefixtures("jax_float64")  # these tests build JAX arrays themselves


@pytest.mark.parametrize("ties", ["rao-kupper", "davidson"])
def test_tie_rate_between_equal_models(ties):
    for rate in (0.05, 0.2, 0.5):
        pa, pb = outcome_probabilities(np.array([0.0]), ties, tie_parameter_for_rate(ties, rate))
        assert 1 - pa[0] - pb[0] == pytest.approx(rate, abs=1e-12)
        assert pa[0] == pytest.approx(pb[0])


@pytest.mark.parametrize("ties", ["rao-kupper", "davidson", "none"])
def test_probabilities_match_the_fits_likelihood(ties):
    """Same strengths, same scale: our outcome probabilities equal exp(bt.outcome_log_probs)."""
    d = np.linspace(-4, 4, 17)
    theta = tie_parameter_for_rate(ties, 0.25)
    pa, pb = outcome_probabilities(d, ties, theta)
    if ties == "none":
        logp = bt.outcome_log_probs(jnp.asarray(d), jnp.asarray(0.0), "half")
    else:  # bt parameterises Rao-Kupper by eta = log(theta) = exp(psi), Davidson by nu = exp(psi)
        psi = math.log(math.log(theta)) if ties == "rao-kupper" else math.log(theta)
        logp = bt.outcome_log_probs(jnp.asarray(d), jnp.asarray(psi), ties)
    p = np.exp(np.asarray(logp))
    np.testing.assert_allclose(pa, p[:, 0], rtol=1e-10)
    np.testing.assert_allclose(pb, p[:, 1], rtol=1e-10)
    if ties != "none":
        np.testing.assert_allclose(1 - pa - pb, p[:, 2], rtol=1e-9, atol=1e-15)


def test_draws_follow_the_probabilities_with_position_bias():
    spec = ArenaSpec((0.7, 0.0), ties="rao-kupper", tie_rate=0.2, position_bias=0.3)
    n = 200_000
    c = simulate_codes(spec, n, np.random.default_rng(1))
    for left in (0, 1):
        rows = c.a == left
        d = (0.7 if left == 0 else -0.7) + 0.3
        pa, pb = outcome_probabilities(np.array([d]), "rao-kupper", spec.tie_param)
        for code, p in ((Outcome.FIRST, pa[0]), (Outcome.SECOND, pb[0]), (Outcome.TIE, 1 - pa[0] - pb[0])):
            freq = np.mean(c.outcome[rows] == code)
            se = math.sqrt(p * (1 - p) / rows.sum())
            assert abs(freq - p) < 4 * se, (left, code, freq, p)
    assert abs(np.mean(c.a == 0) - 0.5) < 0.01  # left/right is random


@pytest.mark.parametrize("ties, fit_ties", [("none", "half"), ("rao-kupper", "rao-kupper"), ("davidson", "davidson")])
def test_fit_recovers_the_true_strengths_and_tie_parameter(ties, fit_ties):
    rate = 0.0 if ties == "none" else 0.25
    spec = ArenaSpec(SEED_STRENGTHS, ties=ties, tie_rate=rate)
    battles, truth = simulate(spec, 200_000, seed=3)
    theta, result = bt.fit_ratings(aggregate(battles), ties=fit_ties)
    assert bool(result.converged)
    fitted = theta - theta[-1]  # anchor the last model at 0, like the truth table
    np.testing.assert_allclose(fitted, truth["strength"].to_numpy(), atol=0.04)
    if ties != "none":
        assert bt.tie_parameter(result.x, fit_ties) == pytest.approx(spec.tie_param, rel=0.05)


def test_bothbad_share_relabels_ties_only_and_leaves_the_fit_alone():
    spec = ArenaSpec(SEED_STRENGTHS, ties="davidson", tie_rate=0.3)
    plain, _ = simulate(spec, 50_000, seed=4)
    mixed, _ = simulate(ArenaSpec(SEED_STRENGTHS, ties="davidson", tie_rate=0.3, bothbad_share=0.25), 50_000, seed=4)
    ties = plain.outcome == Outcome.TIE
    assert np.array_equal(mixed.outcome >= Outcome.TIE, ties)  # same draws; only the tie label differs
    share = (mixed.outcome == Outcome.TIE_BOTHBAD).sum() / ties.sum()
    assert share == pytest.approx(0.25, abs=0.02)
    theta_plain, _ = bt.fit_ratings(aggregate(plain), ties="davidson")
    theta_mixed, _ = bt.fit_ratings(aggregate(mixed), ties="davidson")
    np.testing.assert_allclose(theta_mixed, theta_plain, atol=1e-9)
    with pytest.raises(ValueError, match="bothbad_share"):
        ArenaSpec((1.0, 0.0), bothbad_share=1.5)


def test_length_bias_uses_per_model_lengths():
    spec = ArenaSpec((0.0, 0.0), mean_tokens=(900.0, 300.0), length_bias=1.5, length_sigma=0.3)
    c = simulate_codes(spec, 100_000, np.random.default_rng(2))
    tokens0 = np.concatenate([c.tokens_a[c.a == 0], c.tokens_b[c.b == 0]])
    assert tokens0.mean() == pytest.approx(900, rel=0.02)  # log-normal mean is preserved
    f = length_feature(c.tokens_a, c.tokens_b)
    expected = np.mean(0.5 * (1 + np.tanh(0.5 * 1.5 * f)))
    assert np.mean(c.outcome == Outcome.FIRST) == pytest.approx(expected, abs=0.006)
    verbose_wins = np.mean(np.where(c.a == 0, c.outcome == Outcome.FIRST, c.outcome == Outcome.SECOND))
    assert verbose_wins > 0.6  # equal strength, yet the verbose model wins


def test_random_and_adversarial_voters():
    spec = ArenaSpec((2.0, 0.0), n_voters=10, random_voters=0.5, adversarial_voters=0.5)
    assert voter_kinds(spec).tolist() == [1] * 5 + [2] * 5
    c = simulate_codes(spec, 100_000, np.random.default_rng(4))
    strong_wins = np.where(c.a == 0, c.outcome == Outcome.FIRST, c.outcome == Outcome.SECOND)
    random = voter_kinds(spec)[c.voter] == 1
    p = 1 / (1 + math.exp(-2.0))
    assert np.mean(strong_wins[random]) == pytest.approx(0.5, abs=0.01)
    assert np.mean(strong_wins[~random]) == pytest.approx(1 - p, abs=0.01)  # adversaries flip the winner


def test_written_files_load_back_with_tokens_and_truth(tmp_path):
    spec = ArenaSpec(spread_strengths(12, 2.0), ties="davidson", tie_rate=0.1, n_voters=5)
    out, truth_path, battles = simulate_to_files(spec, 3000, tmp_path / "sim.jsonl", seed=5)
    assert truth_path == tmp_path / "sim.truth.json" == truth_path_for(out)
    loaded = load_battles(out)
    assert len(loaded) == 3000 and loaded.models == list(default_model_names(12))
    assert loaded.models[10] == "model-10"  # zero padding keeps sorted order = index order
    np.testing.assert_array_equal(loaded.outcome, battles.outcome)
    np.testing.assert_array_equal(loaded.df["sum_assistant_a_tokens"], battles.df["sum_assistant_a_tokens"])
    first = json.loads(out.read_text().splitlines()[0])
    assert set(first["conv_metadata"]) == set(STYLE_COLUMNS)
    assert first["judge"].startswith("voter-")
    truth = json.loads(truth_path.read_text())
    assert truth["strengths"][-1] == 0.0 and truth["strengths"][0] == pytest.approx(2.0)
    assert truth["spec"]["ties"] == "davidson" and truth["seed"] == 5


def test_active_sampling_concentrates_on_close_pairs():
    spec = ArenaSpec(spread_strengths(8, 4.0))
    uniform, _ = simulate(spec, 4000, seed=6)
    active, _ = simulate(spec, 4000, seed=6, sampling="active")

    def far_share(b):
        gap = np.abs(b.df["model_a"].cat.codes.to_numpy() - b.df["model_b"].cat.codes.to_numpy())
        return np.mean(gap >= 4)

    assert far_share(uniform) > 0.25
    assert far_share(active) < 0.5 * far_share(uniform)


def test_bad_specs_and_voter_noise_are_explained():
    with pytest.raises(ValueError, match="tie_rate"):
        ArenaSpec((1.0, 0.0), ties="none", tie_rate=0.1)
    with pytest.raises(ValueError, match="at least 2 models"):
        ArenaSpec((1.0,))
    with pytest.raises(ValueError, match="one entry per strength"):
        ArenaSpec((1.0, 0.0), mean_tokens=(1.0,))
    assert parse_voter_noise("random=0.1, adversarial=0.05") == (0.1, 0.05)
    assert parse_voter_noise(None) == (0.0, 0.0)
    with pytest.raises(ValueError, match="random=0.1"):
        parse_voter_noise("lazy=0.3")


def test_simulate_cli_writes_battles_and_truth(tmp_path):
    from typer.testing import CliRunner

    from preflab_cli import app

    out = tmp_path / "arena.jsonl"
    result = CliRunner().invoke(app, [
        "simulate", "--strengths", "1.6,1.2,0.9,0.4,0", "--battles", "2000", "--ties", "rao-kupper",
        "--tie-rate", "0.2", "--position-bias", "0.2", "--length-bias", "1.0", "--voters", "20",
        "--voter-noise", "random=0.1,adversarial=0.05", "--sampling", "active", "--seed", "3",
        "--bothbad-share", "0.3", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "wrote 2000 battles between 5 models" in result.output
    battles = load_battles(out)
    assert len(battles) == 2000 and (battles.outcome == Outcome.TIE).mean() > 0.05
    assert "tie (bothbad)" in result.output and (battles.outcome == Outcome.TIE_BOTHBAD).sum() > 0
    assert battles.df["judge"].nunique() == 20
    truth = json.loads((tmp_path / "arena.truth.json").read_text())
    assert truth["strengths"] == pytest.approx([1.6, 1.2, 0.9, 0.4, 0.0])
    assert truth["sampling"] == "active" and truth["spec"]["adversarial_voters"] == 0.05

    bad = CliRunner().invoke(app, ["simulate", "--ties", "half", "--tie-rate", "0.2", "-o", str(out)])
    assert bad.exit_code == 0  # tie rate is ignored without a ties model ...
    bad = CliRunner().invoke(app, ["simulate", "--voter-noise", "lazy=1", "-o", str(out)])
    assert bad.exit_code == 2 and "random=0.1" in bad.output  # ... but a bad option is explained
    bad = CliRunner().invoke(app, ["simulate", "--models", "3", "--strengths", "1,0", "-o", str(out)])
    assert bad.exit_code == 2 and "disagrees" in bad.output
    ok = CliRunner().invoke(app, ["simulate", "--strengths", "1,0", "--battles", "10", "-o", str(out)])
    assert ok.exit_code == 0 and "between 2 models" in ok.output


def test_custom_unsorted_model_names_keep_their_strengths():
    battles, truth = simulate(ArenaSpec((1.0, 0.0), models=("zeta", "alpha")), 20_000, seed=8)
    assert battles.models == ["alpha", "zeta"] and truth["model"].tolist() == ["zeta", "alpha"]
    df = battles.df
    zeta_wins = (((df.model_a == "zeta") & (df.winner == "model_a"))
                 | ((df.model_b == "zeta") & (df.winner == "model_b")))
    assert zeta_wins.mean() == pytest.approx(1 / (1 + math.exp(-1.0)), abs=0.012)
