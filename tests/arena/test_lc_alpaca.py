"""LC win rates on the real AlpacaEval annotations (tatsu-lab/alpaca_eval, Apache-2.0) vs the official leaderboard.

15 annotation files (judge weighted_alpaca_eval_gpt4_turbo, baseline gpt4_1106_preview); 14 of the 15 models
are on ``leaderboard.csv`` (``text_davinci_003`` is not). The official LC numbers also use a precomputed
instruction-difficulty table (from ~200 models) and gamed rewrites of the baseline that are not in the data;
our joint fit and the length prior stand in for them, and must agree to mean |diff| <= 1 point, Spearman >= 0.98.

AlpacaEval's published results folder (``results/<model>/weighted_alpaca_eval_gpt4_turbo/annotations.json``,
57 models with their annotations plus the baseline's own file) is read from a clone of tatsu-lab/alpaca_eval
named by ``PREFLAB_ALPACA_EVAL_REPO`` (a checkout, or a bare git directory read with ``git show``); it is
too large to ship.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from arena.lc.board import lc_leaderboard
from arena.lc.bootstrap import LCStart, _run_chunks, bootstrap_counts, cold_start, fit_lc_jit, hyper_from_penalty
from arena.lc.data import load_alpaca_table, table_to_grid
from arena.lc.fit import LCData, LCPenalty

FAMILIES = ("alpaca-7b", "gpt-3.5-turbo-1106", "claude-2.1")
JUDGE = "weighted_alpaca_eval_gpt4_turbo"


@pytest.fixture(scope="module")
def alpaca(shared_data):
    root = shared_data / "alpaca_eval"
    files = sorted((root / "annotations").glob("*.json.gz"))
    assert len(files) == 15
    table = load_alpaca_table(files)
    res = lc_leaderboard(table, n_bootstrap=100, warn=False).set_index("model")
    official = pd.read_csv(root / "leaderboard.csv", index_col=0)
    return res, official.reindex(res.index)


def test_raw_win_rate_and_se_equal_official(alpaca):
    """AlpacaEval's rule: mean of (preference - 1) (1.5 = tie counts half), SE = sem; checked to 1e-6."""
    res, off = alpaca
    on_board = off["win_rate"].notna()
    assert on_board.sum() == 14
    np.testing.assert_allclose(res["raw_win_rate"][on_board], off["win_rate"][on_board], atol=1e-6, rtol=0)
    np.testing.assert_allclose(res["raw_se"][on_board], off["standard_error"][on_board], atol=1e-6, rtol=0)
    assert (res["n"][on_board] == off["n_total"][on_board]).all()
    # official avg_length is truncated and taken over all model outputs (some lack an annotation)
    assert np.abs(res["avg_length"][on_board] - off["avg_length"][on_board]).max() < 3


def test_lc_agrees_with_official_lc(alpaca):
    """Issue 11 item 8: before, ours ran high (mean signed +2.41, |diff| 2.51, higher for 12 of 14)."""
    res, off = alpaca
    on_board = off["length_controlled_winrate"].notna()
    ours, theirs = res["lc_win_rate"][on_board], off["length_controlled_winrate"][on_board]
    rho = spearmanr(ours, theirs).statistic
    diff = ours - theirs
    mad = float(np.mean(np.abs(diff)))
    print(f"Spearman {rho:.3f}, mean |LC - official LC| = {mad:.2f}, mean signed {diff.mean():+.2f} points, "
          f"ours higher for {(diff > 0).sum()} of {len(diff)}")
    assert rho >= 0.98
    assert mad <= 1.0  # measured 0.75
    assert abs(float(diff.mean())) <= 1.0  # no systematic offset (measured +0.23)
    assert spearmanr(res["raw_win_rate"][on_board], theirs).statistic < rho  # LC moved towards the official LC


def test_length_slopes_near_official_fits(alpaca):
    """AlpacaEval's published fits (src/alpaca_eval/metrics/weights/.../baseline_gpt4_1106_preview.csv) put the
    length slope of these 14 models at a median of 1.9 (1.05-2.98); the pooled-slope prior gave 2.21."""
    res, off = alpaca
    on_board = off["length_controlled_winrate"].notna()
    assert 1.6 <= float(res["length_coef"][on_board].median()) <= 2.1


@pytest.mark.parametrize("family", FAMILIES)
def test_verbosity_variants_closer_under_lc(alpaca, family):
    res, _ = alpaca
    variants = [m for m in res.index if m == family or m.startswith(family + "_")]
    assert len(variants) >= 2

    def spread(col):
        p = res.loc[variants, col] / 100
        logit = np.log(p / (1 - p))
        return float(logit.max() - logit.min())

    assert spread("lc_win_rate") < spread("raw_win_rate")


def test_cis_cover_the_estimate_and_length_slopes_are_positive(alpaca):
    res, _ = alpaca
    assert ((res["lc_lower"] < res["lc_win_rate"]) & (res["lc_win_rate"] < res["lc_upper"])).all()
    assert (res["length_coef"] > 0).all()  # the judge prefers the longer answer for every model


def _published_results(repo: Path, into: Path) -> list[Path]:
    """The results folder's annotation files of ``JUDGE`` from a checkout or a bare git clone, as files."""
    if (repo / "results").is_dir():
        return sorted((repo / "results").glob(f"*/{JUDGE}/annotations.json"))
    git = ["git", f"--git-dir={repo}"]
    listing = subprocess.run([*git, "ls-tree", "-r", "--name-only", "HEAD", "results/"], check=True,
                             capture_output=True, text=True).stdout.split()
    files = []
    for name in listing:
        parts = name.split("/")
        if len(parts) != 4 or parts[2:] != [JUDGE, "annotations.json"]:
            continue
        blob = subprocess.run([*git, "show", f"HEAD:{name}"], capture_output=True)
        if blob.returncode:  # a partial clone may lack the largest blobs
            continue
        path = into / name
        path.parent.mkdir(parents=True)
        path.write_bytes(blob.stdout)
        files.append(path)
    return files


@pytest.fixture(scope="module")
def published(shared_data, tmp_path_factory):
    repo = os.environ.get("PREFLAB_ALPACA_EVAL_REPO")
    if not repo or not Path(repo).exists():
        pytest.skip("set PREFLAB_ALPACA_EVAL_REPO to a clone of tatsu-lab/alpaca_eval (its results/ folder)")
    files = _published_results(Path(repo), tmp_path_factory.mktemp("alpaca_eval"))
    table = load_alpaca_table(files)
    res = lc_leaderboard(table, n_bootstrap=0, warn=False).set_index("model")
    official = pd.read_csv(shared_data / "alpaca_eval" / "leaderboard.csv", index_col=0)
    return table, res, official.reindex(res.index)


def test_lc_on_the_published_results_folder_agrees_with_official_lc(published):
    """The 56 models of the results folder that are on the official leaderboard (the baseline's own file is set
    aside at 50%). Measured: before Spearman 0.985, mean |diff| 0.70 (signed -0.62); now 0.988, 0.53 (-0.35).
    The rest comes from AlpacaEval's precomputed instruction-difficulty table and its gamed rewrites of the
    baseline, which are not in the repository (docs/lc-arena-hard.md)."""
    table, res, off = published
    assert [o["model"] for o in table.attrs["baseline_files"]] == ["gpt4_1106_preview"]
    on_board = off["length_controlled_winrate"].notna()
    assert on_board.sum() == 56
    ours, theirs = res["lc_win_rate"][on_board], off["length_controlled_winrate"][on_board]
    rho = spearmanr(ours, theirs).statistic
    diff = ours - theirs
    print(f"Spearman {rho:.4f}, mean |diff| {diff.abs().mean():.3f}, signed {diff.mean():+.3f}")
    assert rho >= 0.987
    assert float(diff.abs().mean()) <= 0.55
    assert abs(float(diff.mean())) <= 0.45


def test_bootstrap_warm_refits_converge_without_fallback_and_equal_exact_refits(shared_data):
    """The 15 files include adversarial outputs (NullModel, gpt4_gamed). Before, the warm joint fit (8 chord
    steps on one factorisation) left 100 of 100 replicates unconverged, each refitted by damped Newton (81 s for
    10 results-folder files at 100 refits, over 600 s for 58 at 1000). Now the warm path converges on nearly
    all of them, and its numbers equal the damped-Newton refits of the same resamples to 1e-6."""
    files = sorted((shared_data / "alpaca_eval" / "annotations").glob("*.json.gz"))
    models, instructions, arr = table_to_grid(load_alpaca_table(files))
    data = LCData(*(jnp.asarray(arr[k]) for k in ("y", "model_len", "baseline_len", "mask")))
    gamed = LCData(*(jnp.zeros((0, len(instructions))),) * 4)
    hyper = hyper_from_penalty(LCPenalty())
    full = fit_lc_jit(data, gamed, jnp.ones(len(instructions)), hyper,
                      cold_start(len(models), len(instructions), hyper))
    start = LCStart(full["joint"], full["gamma"], full["params"])
    counts = bootstrap_counts(jax.random.PRNGKey(0), 20, len(instructions))
    warm = _run_chunks(data, gamed, hyper, start, counts, 20, False, 4, True)
    exact = _run_chunks(data, gamed, hyper, start, counts, 20, False, 25, False)
    assert warm["converged"].sum() >= 18  # was 0 of 20
    assert exact["converged"].all()
    ok = warm["converged"]
    np.testing.assert_allclose(warm["lc"][ok], exact["lc"][ok], atol=1e-6, rtol=0)
