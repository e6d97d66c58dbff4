"""Judge calibration page: a judge's verdict file (from ``preflab judge run``) against the votes collected
here, with the judge module's metrics (:func:`judge.metrics.calibrate.calibrate`) and its judge card."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from preflab.errors import InputError
from voting.pages.common import (
    choose_data_file,
    get_engine,
    inside_data_dir,
    plain,
    public_message,
    require_admin,
    verdict_files,
)
from voting.store import list_datasets, load_answers, load_votes
from voting.votes import vote_labels

__all__ = ["inside_data_dir", "judged_pairs", "render", "verdict_files"]  # the data-folder rule: common


def judged_pairs(engine: Engine, dataset: str, verdicts_path: str | Path) -> pd.DataFrame:
    """Verdicts joined with this dataset's votes (``human``, ``human_k``) and answer lengths (characters): the
    store's votes and answers through the library's join (:func:`judge.metrics.human_join.join_votes`)."""
    from judge import join_votes, load_verdicts_jsonl

    verdicts = load_verdicts_jsonl(verdicts_path)
    answers = {(item, model): text for item in verdicts["item_id"].astype(str).unique()
               for model, text in load_answers(engine, dataset, item).items()}
    return join_votes(verdicts, vote_labels(load_votes(engine, dataset)), answers)


def lead(lines: list[tuple[str, str]]) -> None:
    """The page's headline: what the judge is usable for (green, or a warning when nothing), then what not
    (:func:`judge.card.verdict_lines`, the CLI's and the card's lines)."""
    from judge.cards.card import NOTHING_USABLE

    use = [text for kind, text in lines if kind == "usable for"]
    avoid = [text for kind, text in lines if kind == "do not use for"]
    if use == [NOTHING_USABLE]:
        st.warning(f"**Usable for:** {NOTHING_USABLE}.")
    else:
        st.success("**Usable for:**\n" + "\n".join(f"- {u}" for u in use))
    if avoid:
        st.error("**Do not use for:**\n" + "\n".join(f"- {a}" for a in avoid))


def render() -> None:
    """The page."""
    st.title("Judge calibration")
    if not require_admin():
        return
    engine = get_engine()
    datasets = list_datasets(engine)
    if not datasets:
        st.info("No datasets yet: import one on the Data page, or run `preflab demo-seed`.")
        return
    dataset = st.selectbox("Human votes from dataset", datasets, key="cal_dataset")
    path = choose_data_file("cal", "Upload a verdict file (JSONL from `preflab judge run`)", verdict_files)
    if not path:
        st.caption("Run a judge on the dataset's pairs first, e.g. `preflab judge run data/demo/pairs.jsonl ...`, "
                   "then pick its verdict file here.")
        return
    try:
        pairs = judged_pairs(engine, dataset, path)
    except (InputError, OSError, ValueError) as e:
        st.error(f"Could not read the verdicts: {plain(public_message(e))}")
        return
    from judge import render_card, summary_rows, verdict_lines
    from judge_arena.assist import calibration_report

    report = calibration_report(pairs, n_bootstrap=500)
    report["source"] = public_message(report.get("source", ""))  # an upload by its own name, not the temp copy
    lead(verdict_lines(report))
    st.markdown("**Numbers** (95% intervals; the same rows as `preflab judge calibrate`)")
    st.table(pd.DataFrame(summary_rows(report), columns=["metric", "value"]).set_index("metric"))
    for note in report.get("notes", []):
        st.caption(public_message(note))
    settings = {**pairs.attrs.get("settings", {}), "dataset": dataset, "verdicts": Path(path).name}
    card = public_message(render_card(report, pairs, settings, title=f"Judge card: {Path(path).stem} vs votes on "
                                      f"{dataset}"))
    st.download_button("Download the judge card (HTML)", card, "judge-card.html", "text/html", key="cal_card")
    with st.container(border=True, height=900):
        st.html(card)  # sanitised (DOMPurify): the card holds model output excerpts and no scripts


if __name__ == "__main__":
    render()
