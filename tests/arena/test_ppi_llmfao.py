"""PPI++ on real data: LLMFAO crowd votes (a share of the pairs) with GPT-4 / GPT-3 verdicts as the judge.

Source: LLMFAO, Dmitry Ustalov (CC BY 4.0), in ../shared/data/llmfao; skipped when absent. The full
table (10/25/50%, 5 subsamples each) is in docs/ppi.md.
"""

from __future__ import annotations

import pytest

from arena.ppi_studies import llmfao_study


@pytest.fixture(scope="module")
def study(shared_data):
    return llmfao_study(shared_data / "llmfao", shares=(0.5,), repeats=2, seed=3).set_index("judge")


@pytest.mark.slow
def test_judges_never_widen_and_cover(study):
    print(study.round(3).to_string())
    assert (study["ess_gain"] >= 1.0).all()
    assert (study["coverage_ppi"] >= 0.85).all()
    assert (study["width_ppi"] <= study["width_human"] * 1.0001).all()


@pytest.mark.slow
@pytest.mark.xfail(reason="measured (docs/ppi.md): on LLMFAO's sparse design (59 models, ~4 votes per pair) the "
                          "GPT-4 and GPT-3 gains are both ~1.0-1.04 and their order flips between subsamples",
                   strict=False)
def test_gpt4_helps_more_than_gpt3(study):
    assert study.loc["gpt4", "ess_gain"] > study.loc["gpt3", "ess_gain"]
