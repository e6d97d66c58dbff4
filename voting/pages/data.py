"""Data page: import a voting dataset, export the votes (Chatbot Arena battles JSON, CSV, the seed's
``judge_labels.csv``, preference pairs for DPO; :func:`voting.exports.export_votes`), and inter-annotator
agreement on items voted on by several people."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from sqlalchemy.engine import Engine

from voting.exports import export_votes
from voting.import_preview import read_upload
from voting.items import ItemDataError
from voting.pages import data_admin
from voting.pages.common import code_span, get_engine, plain, require_admin
from voting.reads import voted_datasets
from voting.store import get_criteria, import_items, list_datasets, load_items_frame, load_votes, set_criteria
from voting.votes import agreement

#: The downloads: (kind, file format, label, file name, MIME type); the same bytes as ``preflab export-votes``.
DOWNLOADS = (
    ("battles", "", "Chatbot Arena battles (JSON)", "{dataset}-battles.json", "application/json"),
    ("votes", "", "All vote columns (CSV)", "{dataset}-votes.csv", "text/csv"),
    ("labels", "", "judge_labels.csv", "{dataset}-judge_labels.csv", "text/csv"),
    ("pairs", "jsonl", "Preference pairs (JSONL)", "{dataset}-pairs.jsonl", "application/jsonl"),
    ("pairs", "parquet", "Preference pairs (Parquet)", "{dataset}-pairs.parquet", "application/vnd.apache.parquet"),
)


def import_file(engine: Engine, name: str, payload: bytes, dataset: str) -> str:
    """Validate and import an uploaded dataset in one transaction; returns a summary line.

    Raises :class:`voting.items.ItemDataError` (naming the file, line and field) and imports nothing on error.
    """
    if not dataset.strip():
        raise ItemDataError(name, None, None, "no dataset name given", "type a name for the dataset")
    items = read_upload(name, payload)
    n = import_items(engine, items, dataset.strip())
    return (f"Imported {n} items ({len(items.answers)} answers from {len(items.models)} models) into "
            f"{code_span(dataset.strip())}.")


def _export_section(engine: Engine, dataset: str) -> None:
    votes = load_votes(engine, dataset)
    st.subheader(f"Votes on {code_span(dataset)}: {len(votes)}")  # a name is never Markdown
    if votes.empty:
        st.caption("No votes yet.")
        return
    done = {}
    for col, (kind, fmt, label, fname, mime) in zip(st.columns(len(DOWNLOADS)), DOWNLOADS, strict=True):
        done[kind] = export_votes(engine, kind, dataset, fmt, votes)  # the bytes `preflab export-votes` writes
        col.download_button(label, done[kind].data, fname.format(dataset=dataset), mime,
                            key=f"export_{kind}" + (f"_{fmt}" if fmt else ""))
    if done["pairs"].left_out_text():
        st.caption(f"Preference pairs: {done['pairs'].rows} from {len(votes)} votes; {done['pairs'].left_out_text()}"
                   " (no chosen answer). The same files as `preflab export-votes --as pairs`.")
    ag = agreement(votes)
    st.subheader("Inter-annotator agreement")
    if ag["units"] == 0:
        st.caption("No (item, model pair) has votes from two voters yet; set an overlap to collect some.")
    else:
        a, b, c, d = st.columns(4)
        a.metric("Units with ≥ 2 voters", ag["units"])
        b.metric("Pairwise agreement", f"{ag['percent_agreement']:.1%}")
        c.metric("Fleiss' kappa", f"{ag['fleiss_kappa']:.3f}")
        d.metric("Krippendorff's alpha", f"{ag['krippendorff_alpha']:.3f}")
    _position_section(votes)
    from voting.access import guest_vote_counts

    guests = guest_vote_counts(engine, dataset)
    st.caption(f"From open-voting guests (`guest-...`): {guests['votes']} of {len(votes)} votes, "
               f"{guests['guests']} guest ids.")


def _position_section(votes: pd.DataFrame) -> None:
    from voting.position import human_first_position_rate

    rate = human_first_position_rate(votes)
    if rate is None:
        return
    st.metric("Human first-position rate (left answer chosen)", f"{rate['value']:.1%}",
              help="Share of decisive votes for the answer shown on the left; 50% is no position bias.")
    st.caption(f"95% interval {rate['lower']:.1%} – {rate['upper']:.1%} over {rate['voters']} voters "
               f"({rate['decisive']} decisive votes, {rate['ties']} ties left out). Humans have position bias "
               "too: read a judge's first-position rate next to this one.")


def _invite_section(engine: Engine) -> None:
    st.subheader("Invite voters")
    st.caption("One link per voter (a new link replaces the voter's old one). Each link is shown once: the "
               "store keeps only a hash. The same as `preflab invite NAME ...`.")
    names = st.text_area("Voter names, one per line", key="invite_names")
    if st.button("Create invite links", key="invite_go", disabled=not names.strip()):
        from voting.access import check_voter_name, invite_url, issue_invite

        base = (st.context.url or "").split("?")[0].rsplit("/", 1)[0] or "http://127.0.0.1:8501"
        try:  # check every name first: a link made and not shown would be lost
            voters = [check_voter_name(n) for n in names.splitlines() if n.strip()]
        except ItemDataError as e:
            st.error(f"No links were made. {plain(e)}")
            return
        links = [(v, invite_url(base, issue_invite(engine, v))) for v in voters]
        st.dataframe(pd.DataFrame(links, columns=["voter", "link"]), hide_index=True, key="invite_links")


def _criteria_section(engine: Engine, dataset: str) -> None:
    st.subheader(f"Judging criteria for {code_span(dataset)}")
    st.caption("Markdown shown to voters before their first vote on this dataset and on demand in the sidebar "
               "(empty: a generic note, and no screen before the first vote).")
    text = st.text_area("Criteria (Markdown)", get_criteria(engine, dataset), key=f"criteria_{dataset}",
                        max_chars=5000)
    if st.button("Save criteria", key="criteria_save"):
        set_criteria(engine, dataset, text)
        st.success("Saved.")


def _failed_battles_section(engine: Engine) -> None:
    """The Battle page's failed battles and their causes (the voter saw one neutral line; the server log has
    the same lines)."""
    from voting.battles import failed_battles

    failed = failed_battles(engine)
    if failed.empty:
        return
    st.subheader("Failed battles")
    st.caption(f"The latest {len(failed)} battles that failed (never counted), newest first, with the cause. "
               "Voters saw only that an answer failed.")
    st.dataframe(failed, hide_index=True, key="failed_battles")


def render() -> None:
    """The page."""
    st.title("Data")
    if not require_admin():
        return
    data_admin.show_flash()
    engine = get_engine()
    datasets = list_datasets(engine)
    voted = sorted(set(voted_datasets(engine)) - set(datasets))  # the live battles' votes have no items
    if datasets:
        summary = pd.DataFrame([(d, len(load_items_frame(engine, d))) for d in datasets], columns=["dataset", "items"])
        st.dataframe(summary, hide_index=True)
        st.caption("Datasets: " + ", ".join(map(code_span, datasets)))  # names are never Markdown
    else:
        st.info("No datasets yet: import one below, or run `preflab demo-seed`.")
    if datasets or voted:
        dataset = st.selectbox("Dataset to export", [*datasets, *voted], key="export_dataset")
        _export_section(engine, dataset)
        if dataset in datasets:
            _criteria_section(engine, dataset)
            data_admin.admin_sections(engine, dataset)
    data_admin.import_section(engine)
    _invite_section(engine)
    _failed_battles_section(engine)


if __name__ == "__main__":
    render()
