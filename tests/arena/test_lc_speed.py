"""Issue 37 item 3 (``preflab lc`` on AlpacaEval's 58 results files): the faster paths give the old numbers, and
the bootstrap's program count does not grow with the data (counted in compiled programs, not seconds)."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from arena.lc.bootstrap import (
    LCStart,
    _bootstrap_chunks,
    _run_chunks,
    bootstrap_counts,
    cold_start,
    fit_lc_jit,
    hyper_from_penalty,
    refit_each,
    resampled_width,
)
from arena.lc.data import _annotation_rows, _sources_sharing_nothing, load_alpaca_table
from arena.lc.fit import LCData, LCPenalty, Prior, fit_model_glm, no_gamed_rows, solve3
from preflab.alpaca import load_annotations

pytestmark = pytest.mark.usefixtures("jax_float64")


def test_solve3_equals_a_linear_solve():
    rng = np.random.default_rng(0)
    for _ in range(20):
        a = rng.normal(size=(3, 3))
        h, g = a @ a.T + 0.1 * np.eye(3), rng.normal(size=3)
        np.testing.assert_allclose(np.asarray(solve3(jnp.asarray(h), jnp.asarray(g))), np.linalg.solve(h, g),
                                   rtol=1e-9, atol=1e-12)


def test_sources_sharing_nothing_equal_the_set_definition():
    """The files none of whose instructions another file has (before: one set per file against all the others)."""
    table = pd.DataFrame({"source": ["a", "a", "b", "b", "c", "c", "d", "a"],
                          "instruction": ["q1", "q2", "q2", "q3", "q8", "q9", "q7", "q1"]})
    expected = [s for s in pd.unique(table["source"])
                if not set(table.loc[table["source"] == s, "instruction"])
                & set(table.loc[table["source"] != s, "instruction"])]
    assert expected == ["c", "d"]
    assert _sources_sharing_nothing(table) == expected
    assert _sources_sharing_nothing(table[table["source"] == "a"]) == []


def test_annotations_read_with_the_lc_fields_give_the_table_of_the_whole_records(tmp_path):
    """Only the fields LC needs are copied into the frame (not the judge's raw completions); same rows."""
    recs = [{"instruction": f"q{i}", "output_1": "b" * (10 + i), "generator_1": "base", "output_2": "m" * (3 + i),
             "generator_2": "alpha", "preference": 1.0 + (i % 3) / 2, "raw_completion": "x" * 500,
             "annotator": "weighted_alpaca_eval_gpt4_turbo"} for i in range(6)]
    path = tmp_path / "alpha.json"
    path.write_text(json.dumps(recs))
    table = load_alpaca_table([path])
    whole = load_annotations(path)
    assert "raw_completion" in whole
    old = _annotation_rows(whole, "alpha", whole["generator_1"].astype(str), str(path))
    pd.testing.assert_frame_equal(table.drop(columns="source"), old.drop(columns="source"), check_dtype=False)


def _small_problem(n_models: int = 3, n_instr: int = 40, seed: int = 1):
    rng = np.random.default_rng(seed)
    shape = (n_models, n_instr)
    base = rng.lognormal(6, 0.3, n_instr)
    data = LCData(jnp.asarray(rng.uniform(size=shape)), jnp.asarray(base * rng.lognormal(0, 0.4, shape)),
                  jnp.asarray(np.broadcast_to(base, shape).copy()), jnp.ones(shape))
    gamed = LCData(*(jnp.zeros((0, n_instr)),) * 4)
    hyper = hyper_from_penalty(LCPenalty())
    full = fit_lc_jit(data, gamed, jnp.ones(n_instr), hyper, cold_start(n_models, n_instr, hyper))
    return data, gamed, hyper, LCStart(full["joint"], full["gamma"], full["params"])


def test_fallback_refits_compile_one_program_whatever_their_number():
    """Before, the damped-Newton refits ran in one chunk of exactly the number sent to the fallback: a new XLA
    program (seconds) for every count of failed resamples. Now each is refitted alone by one program."""
    data, gamed, hyper, start = _small_problem()
    counts = bootstrap_counts(jax.random.PRNGKey(0), 13, data.y.shape[1])
    before = _bootstrap_chunks._cache_size()
    width = resampled_width(counts)
    outs = {k: refit_each(data, gamed, hyper, start, counts[:k], False, width) for k in (3, 7, 13)}
    assert _bootstrap_chunks._cache_size() - before <= 1
    together = _run_chunks(data, gamed, hyper, start, counts, 13, False, 25, False)  # the old way: same numbers
    for k, out in outs.items():
        assert out["lc"].shape == (k, data.y.shape[0]) and out["converged"].all()
        np.testing.assert_allclose(out["lc"], together["lc"][:k], rtol=0, atol=1e-10)


def test_replicates_fitted_on_their_drawn_instructions_only_equal_the_full_width_fits():
    """A resample holds about 63% of the instructions; the warm path fits those columns only (exact)."""
    data, gamed, hyper, start = _small_problem(n_models=4, n_instr=200, seed=3)
    counts = bootstrap_counts(jax.random.PRNGKey(5), 10, 200).reshape(1, 10, 200)
    width = resampled_width(counts[0])
    assert width < 200
    narrow = _bootstrap_chunks(data, gamed, hyper, start, counts, False, 4, True, width)
    full = _bootstrap_chunks(data, gamed, hyper, start, counts, False, 4, True, 200)
    assert np.asarray(full["converged"]).all() and np.asarray(narrow["converged"]).all()
    np.testing.assert_allclose(np.asarray(narrow["lc"]), np.asarray(full["lc"]), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(narrow["raw"]), np.asarray(full["raw"]), rtol=0, atol=1e-12)


def test_undamped_warm_newton_reaches_the_damped_fit():
    """Bootstrap warm starts take full Newton steps without the loss (the line search's extra pass); from near
    the optimum they reach the damped fit, and the gradient they report is the one the fallback check reads."""
    rng = np.random.default_rng(4)
    n = 300
    t, g = np.tanh(rng.normal(size=n)), rng.normal(size=n)
    y = jnp.asarray(1 / (1 + np.exp(-(-0.5 + 1.4 * t + 0.7 * g + rng.normal(0, 0.4, n)))))
    prior = Prior(jnp.array([0.0, 1.61, 0.76]), jnp.array([0.0, 10.0, 10.0]))
    args = (y, jnp.asarray(t), jnp.asarray(rng.integers(0, 3, n).astype(float)), jnp.asarray(g), no_gamed_rows(n),
            0.0, prior)
    exact, _ = fit_model_glm(*args, jnp.zeros(3))
    warm_start = exact + jnp.array([0.2, -0.3, 0.25])
    damped, g_damped = fit_model_glm(*args, warm_start, 4)
    undamped, g_undamped = fit_model_glm(*args, warm_start, 4, damped=False)
    assert float(g_undamped) < 1e-8 and float(g_damped) < 1e-8
    np.testing.assert_allclose(np.asarray(undamped), np.asarray(exact), rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.asarray(undamped), np.asarray(damped), rtol=0, atol=1e-10)
