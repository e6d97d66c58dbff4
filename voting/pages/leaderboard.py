"""Leaderboard page: Bradley-Terry ratings with intervals from the collected votes (the arena's fit),
forest plot, win-rate heatmap and battle counts; filters by dataset, voter and date; style control.

The database counts the votes (per model pair and outcome, :func:`voting.store.pair_outcome_counts`), so the
page reads a few hundred rows whether 1k or 1M votes are stored; only style control, which needs each vote's
answer lengths, loads the votes themselves."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import streamlit as st

from arena.plots import forest_figure, heatmap_figure
from voting.assign import tally_counts
from voting.pages.common import get_config, get_engine, require_admin
from voting.store import list_datasets, load_votes, pair_outcome_counts, vote_summary, votes_stamp
from voting.votes import votes_to_battles


@st.cache_data(show_spinner="Fitting the leaderboard ...", max_entries=32)
def fit_table(url: str, dataset: str | None, voters: tuple[str, ...], since: float | None, until: float | None,
              style: tuple[str, ...], n_bootstrap: int, stamp: tuple) -> dict:
    """Fit once per filter set and vote-table state (``stamp`` changes when votes arrive)."""
    from arena.leaderboard import fit_leaderboard

    engine = get_engine()
    if style:
        data = votes_to_battles(load_votes(engine, dataset, list(voters), since, until), "votes")
    else:
        cells = pair_outcome_counts(engine, dataset, list(voters), since, until)
        data = tally_counts(cells, sorted(set(cells["model_left"]) | set(cells["model_right"])))
    lb = fit_leaderboard(data, n_bootstrap=n_bootstrap, style_control=bool(style), style_features=style or None)
    return {"table": lb.table, "wins": lb.observed_win_rates(), "counts": lb.battle_counts(),
            "notes": list(lb.diagnostics), "style": lb.style}


def _filters(engine) -> tuple[str | None, tuple[str, ...], float | None, float | None, int]:  # noqa: ANN001
    """Sidebar filters; the date window is None while it spans every vote (the unfiltered counts serve it)."""
    datasets = list_datasets(engine)
    dataset = st.sidebar.selectbox("Dataset", ["(all)", *datasets], key="lb_dataset")
    dataset = None if dataset == "(all)" else dataset
    summary = vote_summary(engine, dataset)
    voters = st.sidebar.multiselect("Voters (empty = all)", summary["voters"], key="lb_voters")
    since = until = None
    if summary["first"] is not None:
        lo, hi = dt.date.fromtimestamp(summary["first"]), dt.date.fromtimestamp(summary["last"])
        span = st.sidebar.date_input("Dates", (lo, hi), min_value=lo, max_value=hi, key="lb_dates")
        if isinstance(span, tuple) and len(span) == 2 and (span[0] > lo or span[1] < hi):
            since = dt.datetime.combine(span[0], dt.time()).timestamp()
            until = dt.datetime.combine(span[1] + dt.timedelta(days=1), dt.time()).timestamp()
    return dataset, tuple(voters), since, until, len(voters) or len(summary["voters"])


def render() -> None:
    """The page."""
    st.title("Leaderboard")
    if not require_admin():
        return
    engine, cfg = get_engine(), get_config()
    dataset, voters, since, until, n_voters = _filters(engine)
    cells = pair_outcome_counts(engine, dataset, list(voters), since, until)
    n_votes = int(cells["n"].sum())
    if n_votes < 2:
        st.warning("Not enough votes for a leaderboard yet: collect some on the Vote page, or run "
                   "`preflab demo-seed`.")
        return
    c1, c2 = st.columns(2)
    from arena.style import STYLE_FEATURES

    # Length alone by default: on small datasets markdown counts often just identify the model.
    style = tuple(c1.multiselect(
        "Style control", list(STYLE_FEATURES), default=[], key="lb_style", placeholder="off",
        help="Chatbot Arena's style control: ratings with these style features held fixed. Start with length; "
             "markdown counts that one model alone uses cannot be told apart from the model."))
    n_boot = c2.select_slider("Bootstrap resamples", [100, 200, 500, 1000], value=200, key="lb_boot")
    stamp = (votes_stamp(engine), n_votes)
    try:
        fit = fit_table(cfg.db_url, dataset, voters, since, until, style, n_boot, stamp)
    except (ImportError, ValueError) as e:
        st.error(f"Could not fit the leaderboard: {e}")
        return
    table: pd.DataFrame = fit["table"]
    st.caption(f"{n_votes} votes from {n_voters} voters; 95% bootstrap intervals "
               f"({n_boot} resamples); rank = 1 + models whose interval lies wholly above.")
    shown = [c for c in ("rank", "model", "rating", "lower", "upper", "battles", "wins", "losses", "ties") if c in table]
    st.dataframe(table[shown].round(1), hide_index=True, width="stretch")
    for note in fit["notes"]:
        st.info(note)
    left, right = st.columns(2)
    left.pyplot(forest_figure(table, "Ratings with 95% intervals"), width="stretch")
    right.pyplot(heatmap_figure(fit["wins"], "Observed win rate (row beats column, ties excluded)"), width="stretch")
    st.markdown("**Battle counts** (row vs column)")
    st.dataframe(fit["counts"].astype(int), width="stretch")
    if fit["style"] is not None:
        st.markdown("**Style coefficients**")
        st.dataframe(fit["style"], width="stretch")


if __name__ == "__main__":
    render()
