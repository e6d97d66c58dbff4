"""The Data page's tools for running a round: the import preview, per-voter statistics, the vote browser and
deleting a dataset (its votes archived). The numbers come from :mod:`voting.voter_stats`; this draws them.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from voting.archive import archive_dataset, archived_votes
from voting.import_preview import SUFFIXES, nothing_imported, preview_upload, read_upload
from voting.items import ItemDataError
from voting.pages.common import code_span, plain
from voting.pages.numbers import for_people
from voting.pages.pair_html import pair_html
from voting.store import import_items, load_answers, load_items_frame, load_votes
from voting.voter_stats import FAST_SECONDS, filter_votes, load_skips, voter_stats

ANY = "(any)"


def show_flash() -> None:
    """The outcome of the last import or delete (the page reran after it to redraw every dataset list)."""
    if done := st.session_state.pop("data_flash", None):
        st.success(done)


def import_section(engine: Engine) -> None:
    """Upload, preview (first rows, counts, problems; nothing written), then import in one transaction.
    A success reruns the page, so every dataset list shows the new dataset."""
    st.subheader("Import a dataset")
    st.caption("JSONL, JSON, CSV or Parquet: one row per answer (`item_id, prompt, model, answer`, optional "
               "`category`) or one row per pair (`item_id, prompt, model_x, answer_x, model_y, answer_y`). "
               "The file is checked and previewed first; the import is one transaction: all or nothing.")
    upload = st.file_uploader("Dataset file", type=[s[1:] for s in SUFFIXES], key="import_file")
    name = st.text_input("Dataset name (default: the file's name)", key="import_name")
    if upload is None:
        return
    payload = upload.getvalue()
    dataset = name.strip() or Path(upload.name).stem
    preview = preview_upload(engine, upload.name, payload, dataset)
    st.markdown(f"**Preview of** {code_span(upload.name)} (nothing is written until you press Import)")
    a, b, c, d = st.columns(4)
    a.metric("Items", preview.items)
    b.metric("Models", len(preview.models))
    c.metric("Answers", preview.answers)
    lo, hi = preview.answers_per_item
    d.metric("Answers per item", f"{lo}" if lo == hi else f"{lo} to {hi}")
    if len(preview.rows):
        st.dataframe(preview.rows, hide_index=True, key="import_preview_rows")
        st.caption("Models: " + ", ".join(map(code_span, preview.models)))
    for problem in preview.problems:
        st.error(f"Cannot import this file: {plain(problem)}", icon=":material/error:")
    if not preview.problems:
        st.caption(f"No problems found: ready to import into {code_span(dataset)}.")
    if st.button("Import", disabled=bool(preview.problems), key="import_go"):
        try:
            items = read_upload(upload.name, payload)
            n = import_items(engine, items, dataset)
        except ItemDataError as e:
            st.error(plain(nothing_imported(e)))
            return
        st.session_state["data_flash"] = (f"Imported {n} items ({len(items.answers)} answers from "
                                           f"{len(items.models)} models) into {code_span(dataset)}.")
        st.session_state.pop("import_file", None)
        st.rerun()  # the dataset lists above (and in the sidebar) are drawn from the store again


#: The voters table's headers, in words (:data:`voting.voter_stats.STAT_COLUMNS`), and its rate columns.
VOTER_HEADERS = {"voter": "voter", "votes": "votes", "median_s": "median s / vote", "tie_rate": "tie rate",
                 "bothbad_rate": "both-bad rate", "skips": "skips", "skip_rate": "skip rate",
                 "agree_with_others": "agrees with others", "shared_units": "shared items",
                 "fast_votes": "fast votes"}
VOTER_RATES = ("tie_rate", "bothbad_rate", "skip_rate", "agree_with_others")


def voters_section(engine: Engine, dataset: str, votes: pd.DataFrame) -> None:
    """Per-voter statistics of ``dataset``, sortable by any column."""
    st.subheader("Voters")
    st.caption(f"Per voter on {code_span(dataset)}: median seconds from a pair shown to its vote, tie / both-bad / "
               f"skip rates, agreement with the other voters' majority on the same item and model pair, and votes "
               f"cast in under {FAST_SECONDS:.0f} s (too fast to read both answers). Click a column to sort.")
    stats = voter_stats(votes, load_skips(engine, dataset))
    if stats.empty:
        st.caption("No votes or skips yet.")
        return
    st.dataframe(for_people(stats, rates=VOTER_RATES, headers=VOTER_HEADERS, fixed={"median_s": "{:.1f}"}),
                 hide_index=True, key="voter_stats")


def _pick(label: str, options, key: str) -> str | None:  # noqa: ANN001
    value = st.selectbox(label, [ANY, *sorted(set(options))], key=key)
    return None if value == ANY else value


def browser_section(engine: Engine, dataset: str, votes: pd.DataFrame) -> None:
    """Filter the votes of ``dataset`` by voter, item, model and what was clicked; show one vote's pair."""
    st.subheader("Vote browser")
    if votes.empty:
        st.caption("No votes yet.")
        return
    cols = st.columns(4)
    with cols[0]:
        voter = _pick("Voter", votes["voter"], "browse_voter")
    with cols[1]:
        item = _pick("Item", votes["item_id"], "browse_item")
    with cols[2]:
        model = _pick("Model", pd.concat([votes["model_left"], votes["model_right"]]), "browse_model")
    with cols[3]:
        choice = _pick("Vote", ["A", "B", "tie", "bothbad"], "browse_choice")
    found = filter_votes(votes, voter=voter, item_id=item, model=model, choice=choice)
    shown = found.assign(A=found["model_left"], B=found["model_right"],
                         seconds=(found["voted_at"] - found["shown_at"]).round(1))
    st.caption(f"{len(found)} of {len(votes)} votes")
    st.dataframe(shown[["id", "voter", "item_id", "A", "B", "choice", "reason", "seconds"]], hide_index=True,
                 key="browse_table")
    if found.empty:
        return
    vote_id = st.selectbox("Show the pair of vote", found["id"].tolist(), key="browse_vote")
    row = found[found["id"] == vote_id].iloc[0]
    st.markdown(f"{code_span(row['voter'])} voted **{row['choice']}** on item {code_span(row['item_id'])} "
                f"(A = {code_span(row['model_left'])}, B = {code_span(row['model_right'])}).")
    reason = row["reason"]  # the voter's own words, as text; a vote without one has None, or NaN under pandas 3
    st.text("Why? " + (reason if isinstance(reason, str) and reason else "(no reason given)"))
    prompts = load_items_frame(engine, dataset).set_index("item_id")["prompt"]
    answers = load_answers(engine, dataset, row["item_id"])
    st.html(pair_html(row["item_id"], prompts.get(row["item_id"], ""), answers.get(row["model_left"], ""),
                      answers.get(row["model_right"], ""), progress=[], prompt_height=130, answer_height=300))


def delete_section(engine: Engine, dataset: str) -> None:
    """Delete ``dataset`` after the admin types its name; its votes go to the audit table first."""
    st.subheader(f"Delete {code_span(dataset)}")
    st.caption("Removes its items, answers, skips and judging criteria. Its votes are moved to the "
               "`archived_votes` audit table (and listed in `archived_datasets`), never dropped.")
    typed = st.text_input(f"Type {code_span(dataset)} to confirm", key=f"delete_confirm_{dataset}")
    if st.button("Delete dataset (archive its votes)", key="delete_go", disabled=typed.strip() != dataset,
                 type="primary"):
        try:
            n = archive_dataset(engine, dataset)
        except ItemDataError as e:
            st.error(f"Nothing was deleted. {plain(e)}")
            return
        st.session_state["data_flash"] = (f"Deleted {code_span(dataset)}: {n['items']} items, {n['answers']} answers, "
                                           f"{n['skips']} skips; {n['votes']} votes moved to archived_votes.")
        st.rerun()
    old = archived_votes(engine)
    if len(old):
        st.caption(f"The audit table holds {len(old)} archived votes from {old['dataset'].nunique()} deleted "
                   "dataset(s).")


def admin_sections(engine: Engine, dataset: str) -> None:
    """The round-running sections for ``dataset`` (the Data page's hook)."""
    votes = load_votes(engine, dataset)
    voters_section(engine, dataset, votes)
    browser_section(engine, dataset, votes)
    delete_section(engine, dataset)

