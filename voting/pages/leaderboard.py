"""Leaderboard page: Bradley-Terry ratings with intervals from the collected votes (the arena's fit),
forest plot, win-rate heatmap and battle counts; filters by dataset, voter and date; style control.

The database counts the votes (per model pair and outcome, :func:`voting.store.pair_outcome_counts`; the
filters go into its WHERE), and the voters and date range come from index probes (:func:`voting.store.
vote_summary`, at most ``MAX_VOTER_OPTIONS`` voters listed, else typed), so the page reads a few hundred rows
whether 1k or 1M votes are stored; only style control, which needs each vote's answer lengths, and the
judge-vs-human view, once a verdict file is picked, load the votes themselves."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import streamlit as st

from arena.plots import forest_figure, heatmap_figure
from voting import reads
from voting.assign import tally_counts
from voting.pages.common import code_span, get_config, get_engine, plain, public_message, require_admin
from voting.pages.numbers import for_people
from voting.store import (
    item_categories,
    list_datasets,
    load_votes,
    pair_outcome_counts,
    vote_summary,
    votes_stamp,
)
from voting.votes import votes_to_battles

#: Library words in diagnostics -> the control on this page that does the same.
APP_WORDS = {"exclude_models": "the **Exclude models** control", "style_control": "**Style control**",
             "n_bootstrap": "**Bootstrap resamples**", "min_battles": "a minimum of battles",
             "(--ridge 0.01 / ridge=0.01)": "(`preflab rank --ridge 0.01` on the exported battles: this page "
             "offers no ridge)", "rank without style control": "clear the **Style control** box"}
ALL = "(all datasets)"


def app_words(note: str) -> str:
    """A diagnostic note as Markdown: Python argument names replaced by the app control that does the same,
    everything else (model names included) plain text."""
    import re

    words = re.compile(r"style_features=(\w+(?:,\w+)*)|" + "|".join(map(re.escape, APP_WORDS)))
    out, at = [], 0
    for m in words.finditer(note):
        out.append(plain(note[at:m.start()]))
        out.append(f"keep only {plain(', '.join(m.group(1).split(',')))} in the **Style control** box" if m.group(1)
                   else APP_WORDS[m.group(0)])
        at = m.end()
    return "".join([*out, plain(note[at:])])


def identification_banner(table: pd.DataFrame, groups: list[list[str]], pooled: bool) -> str | None:
    """The warning shown above the table when ratings are not all comparable: disconnected comparison graph
    (say so when datasets are pooled), Ford's condition failing, or ratings not identified. None when fine."""
    parts = []
    if len(groups) > 1:
        shown = "; ".join("{" + ", ".join(map(code_span, g[:5])) + (", ..." if len(g) > 5 else "") + "}"
                          for g in groups[:4])
        parts.append(f"The votes form {len(groups)} groups of models never compared with each other ({shown})"
                     + (": the datasets pooled here do not share models. Pick one dataset in the sidebar."
                        if pooled else ": ratings across groups are not comparable; vote on pairs across groups."))
    sep = table.attrs.get("separation")
    if sep and len(groups) <= 1:
        parts.append(app_words(next((n for n in table.attrs.get("diagnostics", [])
                                     if n.startswith("Ford's condition")), "Ford's condition fails.")))
    bad = table.loc[~table.get("identified", pd.Series(True, index=table.index)).astype(bool), "model"]
    if len(bad):
        more = ", ..." if len(bad) > 8 else ""
        parts.append(f"Not identified, so not shown: {', '.join(map(code_span, bad[:8]))}{more} (greyed out below).")
    return " ".join(parts) or None


def shown_table(table: pd.DataFrame):  # noqa: ANN201 - a pandas Styler
    """The leaderboard as displayed: ratings and intervals that are not identified are blank and greyed out."""
    from arena.leaderboard_table import display_decimals

    cols = [c for c in ("rank", "model", "rating", "lower", "upper", "battles", "wins", "losses", "ties") if c in table]
    view = table[cols].copy()
    ok = table.get("identified", pd.Series(True, index=table.index)).astype(bool).to_numpy()
    for c in ("rating", "lower", "upper"):
        if c in view:
            view[c] = view[c].where(ok)  # NaN, shown as a dash
    return for_people(view, display_decimals(table)).apply(
        lambda row: ["" if ok[row.name] else "color: #9a9a9a" for _ in row], axis=1)


def share_downloads(table: pd.DataFrame) -> None:
    """The table to share, as CSV, JSON, Markdown and HTML: the bytes ``preflab rank --output`` writes
    (:func:`arena.leaderboard_share.leaderboard_bytes`)."""
    from arena.leaderboard_share import SHARE_FORMATS, leaderboard_bytes

    names = {"csv": "CSV", "json": "JSON", "md": "Markdown", "html": "HTML"}
    for col, (fmt, mime) in zip(st.columns(len(SHARE_FORMATS)), SHARE_FORMATS.items(), strict=True):
        col.download_button(f"Download {names[fmt]}", leaderboard_bytes(table, fmt), f"leaderboard.{fmt}", mime,
                            key=f"lb_download_{fmt}", width="stretch")


def without_models(cells: pd.DataFrame, exclude: tuple[str, ...] = ()) -> pd.DataFrame:
    """Vote cells (or votes) without the battles that show an excluded model."""
    if not exclude:
        return cells
    return cells[~cells["model_left"].isin(exclude) & ~cells["model_right"].isin(exclude)]


def models_of(cells: pd.DataFrame) -> list[str]:
    return sorted(set(cells["model_left"]) | set(cells["model_right"]))


def keep(votes: pd.DataFrame, categories: tuple[str, ...] = (), exclude: tuple[str, ...] = (),
         drop: tuple[int, ...] = ()) -> pd.DataFrame:
    """Votes on the chosen categories (all when empty), without battles that show an excluded model, and
    without the votes whose ids are in ``drop`` (battle votes the anonymous board leaves out)."""
    if drop:
        votes = votes[~votes["id"].isin(drop)]
    if categories:
        votes = votes[votes["category"].isin(categories)]
    return without_models(votes, exclude)


@st.cache_data(show_spinner="Fitting the leaderboard ...", max_entries=32)
def fit_table(url: str, dataset: str | None, voters: tuple[str, ...], since: float | None, until: float | None,
              style: tuple[str, ...], n_bootstrap: int, stamp: tuple, categories: tuple[str, ...] = (),
              exclude: tuple[str, ...] = (), cells: pd.DataFrame | None = None, drop: tuple[int, ...] = ()) -> dict:
    """Fit once per filter set and vote-table state (``stamp`` changes when votes arrive): the page's counted
    ``cells`` (already filtered, so not counted twice), or with ``style`` the filtered votes themselves."""
    from arena.leaderboard import fit_leaderboard
    from arena.leaderboard_options import IntervalOptions

    engine = get_engine()
    if style:  # style control needs each vote's answer lengths
        votes = keep(load_votes(engine, dataset, list(voters), since, until), categories, exclude, drop)
        data = votes_to_battles(votes, "votes")
    else:
        if cells is None:
            cells = without_models(pair_outcome_counts(engine, dataset, list(voters), since, until,
                                                       list(categories)), exclude)
        data = tally_counts(cells, sorted(set(cells["model_left"]) | set(cells["model_right"])))
    lb = fit_leaderboard(data, IntervalOptions(n_bootstrap=n_bootstrap), style_control=bool(style),
                         style_features=style or None)
    return {"table": lb.table, "wins": lb.observed_win_rates(), "counts": lb.battle_counts(),
            "notes": list(lb.diagnostics), "style": lb.style}


def _filters(engine) -> tuple[str | None, tuple[str, ...], float | None, float | None, tuple[str, ...]]:  # noqa: ANN001
    """Sidebar filters; the date window is None while it spans every vote (the unfiltered counts serve it)."""
    datasets = list_datasets(engine)  # one dataset by default: pooling unrelated ones is a choice, with a banner
    from voting.battles import BATTLE_DATASET

    if BATTLE_DATASET not in datasets and vote_summary(engine, BATTLE_DATASET)["first"] is not None:
        datasets.append(BATTLE_DATASET)  # live battles have votes but no imported items
    dataset = st.sidebar.selectbox("Dataset", [*datasets, ALL], key="lb_dataset")
    dataset = None if dataset == ALL else dataset
    summary = vote_summary(engine, dataset)
    categories = tuple(st.sidebar.multiselect("Categories (empty = all)", item_categories(engine, dataset),
                                              key="lb_categories"))
    if summary["more_voters"]:  # too many to list: typed ids (a list of them all would be the slow part)
        typed = st.sidebar.text_input(f"Voters (ids, comma-separated; empty = all; over {reads.MAX_VOTER_OPTIONS:,}"
                                      " voters)", key="lb_voter_ids")
        voters = sorted({v.strip() for v in typed.split(",") if v.strip()})
    else:
        voters = st.sidebar.multiselect("Voters (empty = all)", summary["voters"], key="lb_voters")
    since = until = None
    if summary["first"] is not None:
        lo, hi = dt.date.fromtimestamp(summary["first"]), dt.date.fromtimestamp(summary["last"])
        span = _date_range(lo, hi)
        if isinstance(span, tuple) and len(span) == 2 and (span[0] > lo or span[1] < hi):
            since = dt.datetime.combine(span[0], dt.time()).timestamp()
            until = dt.datetime.combine(span[1] + dt.timedelta(days=1), dt.time()).timestamp()
    return dataset, tuple(voters), since, until, categories


def _date_range(lo: dt.date, hi: dt.date):  # noqa: ANN202 - what st.date_input returns
    """The date range widget over ``lo`` .. ``hi``. While the voter has not narrowed it, it follows the votes'
    range (a widget keeps its old value: a new day's votes would otherwise fall outside it, unseen, and the
    page would count every vote row by row); a narrowed range is kept, clipped to the votes' range."""
    state = st.session_state
    shown = state.get("lb_dates")
    if shown is None or tuple(shown) == state.get("lb_dates_full"):
        state["lb_dates"] = (lo, hi)
    elif isinstance(shown, tuple | list) and shown:
        state["lb_dates"] = tuple(min(max(d, lo), hi) for d in shown)
    state["lb_dates_full"] = (lo, hi)
    return st.sidebar.date_input("Dates", min_value=lo, max_value=hi, key="lb_dates")


def _anonymous_battles(engine, cells: pd.DataFrame, dataset: str | None, voters: tuple[str, ...],  # noqa: ANN001
                       since: float | None, until: float | None) -> tuple[pd.DataFrame, tuple[int, ...]]:
    """Leave out the battle votes that were not anonymous or repeat a prompt past the cap (unless the admin
    counts them), saying how many; returns the cells and the ids of the votes left out."""
    from voting.battle_board import left_out_votes, minus_votes
    from voting.battles import BATTLE_DATASET

    if dataset not in (BATTLE_DATASET, None):
        return cells, ()
    if path := get_config().arena:  # the arena's spend against its caps (admins only see this page)
        from voting.arena_guard import arena_settings, spend_lines
        from voting.battles import load_arena

        for line in spend_lines(engine, arena_settings(path, load_arena(path))):
            st.caption(line)
    out, notes = left_out_votes(engine, list(voters) or None, since, until)
    if not notes:
        return cells, ()
    if st.sidebar.checkbox("Count every battle vote", key="lb_battle_all",
                           help="Also count battles whose answer named a model and prompts repeated past the cap."):
        st.caption("Counting every battle vote: " + " ".join(notes))
        return cells, ()
    for note in notes:
        st.caption(note)
    return minus_votes(cells, out), tuple(int(i) for i in out["id"])


def render() -> None:
    """The page."""
    st.title("Leaderboard")
    if not require_admin():
        return
    engine, cfg = get_engine(), get_config()
    dataset, voters, since, until, categories = _filters(engine)
    cells = pair_outcome_counts(engine, dataset, list(voters), since, until, list(categories))
    cells, drop = _anonymous_battles(engine, cells, dataset, voters, since, until)
    models = sorted(set(cells["model_left"]) | set(cells["model_right"]))
    exclude = tuple(st.multiselect("Exclude models", models, key="lb_exclude", placeholder="none",
                                   help="Leave these models out: their battles are dropped before the fit."))
    cells = without_models(cells, exclude)
    n_votes = int(cells["n"].sum())
    if n_votes < 2 or len(set(cells["model_left"]) | set(cells["model_right"])) < 2:
        st.warning("Not enough votes for a leaderboard yet: collect some on the Vote page, or run "
                   "`preflab demo-seed`.")
        return
    c1, c2 = st.columns(2)
    from arena.style.features import STYLE_FEATURES

    # Length alone by default: on small datasets markdown counts often just identify the model.
    style = tuple(c1.multiselect(
        "Style control", list(STYLE_FEATURES), default=[], key="lb_style", placeholder="off",
        help="Chatbot Arena's style control: ratings with these style features held fixed. Start with length; "
             "markdown counts that one model alone uses cannot be told apart from the model."))
    n_boot = c2.select_slider("Bootstrap resamples", [100, 200, 500, 1000], value=200, key="lb_boot")
    stamp = (votes_stamp(engine), n_votes)
    try:
        fit = fit_table(cfg.db_url, dataset, voters, since, until, style, n_boot, stamp, categories, exclude,
                        None if style else cells.reset_index(drop=True), drop)
    except (ImportError, ValueError) as e:
        st.error(f"Could not fit the leaderboard: {app_words(str(e))}")
        return
    table: pd.DataFrame = fit["table"]
    from arena.io.counts import comparison_components

    banner = identification_banner(table, comparison_components(tally_counts(cells, models_of(cells))),
                                   pooled=dataset is None)
    if banner:
        st.warning(banner)
    who = f"{len(voters)} chosen voters" if voters else "all voters"
    unit = table.attrs.get("unit_text") or "battle"
    if not style:  # counted per model pair by the database: no item ids reach the fit
        unit = "battle (votes counted per model pair)"
    st.caption(f"{n_votes} votes from {who}; 95% bootstrap intervals "
               f"({n_boot} resamples); rank = 1 + models whose interval lies wholly above; sampling unit: {unit}.")
    st.dataframe(shown_table(table), hide_index=True, width="stretch", key="lb_table")
    share_downloads(table)
    if fit["notes"]:
        with st.expander(f"Diagnostics ({len(fit['notes'])})"):
            for note in fit["notes"]:
                st.markdown("- " + app_words(note))
    left, right = st.columns(2)
    left.pyplot(forest_figure(table, "Ratings with 95% intervals"), width="stretch")
    right.pyplot(heatmap_figure(fit["wins"], "Observed win rate (row beats column, ties excluded)"), width="stretch")
    st.markdown("**Battle counts** (row vs column)")
    st.dataframe(fit["counts"].astype(int), width="stretch")
    if fit["style"] is not None:
        st.markdown("**Style coefficients**")
        st.dataframe(fit["style"], width="stretch")
    judge_vs_human(lambda: keep(load_votes(engine, dataset, list(voters), since, until), categories, exclude, drop),
                   table, n_boot)
    sharpen_with_judge((cfg.db_url, dataset, voters, since, until, categories, exclude, stamp), n_boot)


def judge_vs_human(load, human_table: pd.DataFrame, n_boot: int) -> None:  # noqa: ANN001
    """A verdict file's ratings beside the human ones on the same items (``load()`` gives the filtered votes,
    read only once a verdict file is picked)."""
    from voting.pages.common import verdict_files

    st.subheader("Judge vs human")
    files = verdict_files(get_config().data_dir)
    if not files:
        st.caption(f"No verdict files in {get_config().data_dir}/ yet (from `preflab judge run`).")
        return
    path = st.selectbox("Verdict file", ["(none)", *files], key="lb_verdicts")
    if path == "(none)":
        return
    from judge import load_verdicts_jsonl
    from judge_arena.battles_from_verdicts import verdict_battles
    from judge_arena.versus_human import as_battles, compare, shared_items
    from preflab.errors import InputError

    try:
        judged = verdict_battles(load_verdicts_jsonl(path))
    except (InputError, OSError, ValueError) as e:
        st.error(f"Could not read the verdicts: {plain(e)}")
        return
    human_b = votes_to_battles(load(), "votes").df
    human_b, judged = shared_items(human_b.assign(question_id=human_b["question_id"].astype(str)), judged)
    if len(judged) < 2 or len(human_b) < 2:
        st.warning("The verdict file and the votes share no items (or too few): pick the file judged on this "
                   "dataset.")
        return
    from arena.leaderboard import fit_leaderboard
    from arena.leaderboard_options import IntervalOptions

    human_table = fit_leaderboard(as_battles(human_b, "votes"), IntervalOptions(n_bootstrap=n_boot)).table
    judge_table = fit_leaderboard(as_battles(judged, path), IntervalOptions(n_bootstrap=n_boot)).table
    res = compare(human_table, judge_table, human_b, judged)
    a, b, c = st.columns(3)
    a.metric("Shared items", judged["question_id"].nunique())
    b.metric("Spearman's rho", "—" if res["spearman"] != res["spearman"] else f"{res['spearman']:.2f}",
             help="Undefined when one side rates every model the same (e.g. a judge that always answers A).")
    c.metric("Kendall's tau", "—" if res["kendall"] != res["kendall"] else f"{res['kendall']:.2f}")
    st.dataframe(res["ratings"].round(1), hide_index=True, width="stretch", key="lb_jvh_ratings")
    st.markdown("**Where they disagree most** (share of battles the first model wins; ties count half)")
    st.dataframe(res["pairs"].head(10).round(3), hide_index=True, width="stretch", key="lb_jvh_pairs")


@st.cache_data(show_spinner="Fitting the judge-assisted leaderboard ...", max_entries=16)
def ppi_table(filters: tuple, digest: str, ci: str, n_bootstrap: int, _path: str) -> pd.DataFrame:
    """The PPI++ fit for one filter set (``filters``: url, dataset, voters, since, until, categories,
    exclude, votes stamp) and one judge file (``digest`` of its bytes; ``_path`` is not part of the key)."""
    from arena.leaderboard_options import IntervalOptions
    from judge_arena.assist import judge_assisted_leaderboard

    _, dataset, voters, since, until, categories, exclude, _ = filters
    human = votes_to_battles(keep(load_votes(get_engine(), dataset, list(voters), since, until), categories,
                                  exclude), "votes")
    return judge_assisted_leaderboard(human, _path, intervals=IntervalOptions(ci=ci, n_bootstrap=n_bootstrap, seed=0))


def sharpen_with_judge(filters: tuple, n_boot: int) -> None:
    """The human-only leaderboard beside the PPI++ one that a judge file sharpens (the call that
    ``preflab rank VOTES --judge-battles JUDGE`` makes), with lambda, the item counts and the ESS gain."""
    import hashlib
    from pathlib import Path

    from arena.bootstrap.intervals import rank_from_intervals
    from preflab.errors import InputError
    from voting.pages.common import choose_data_file, judge_files

    st.subheader("Sharpen with a judge")
    st.caption("Prediction-powered inference (PPI++): a judge's verdicts on many pairs, corrected by the votes "
               "on the pairs both rated, give ratings unbiased for the voters' preferences with intervals valid "
               "whatever the judge's quality (lambda = 0: the judge is not used). Items are matched by item id "
               "and model pair. The same numbers as `preflab rank VOTES --judge-battles JUDGE`.")
    path = choose_data_file("lb_ppi", "Upload judge verdicts (JSONL from `preflab judge run`) or judge battles",
                            judge_files, ("jsonl", "json", "csv", "parquet"))
    if not path:
        return
    ci = st.radio("PPI intervals", ["sandwich", "bootstrap"], horizontal=True, key="lb_ppi_ci",
                  help=f"Bootstrap: {n_boot} resamples of the labelled and the judge-only items separately.")
    try:
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        table = ppi_table(filters, digest, ci, n_boot, path)
    except (InputError, OSError, ValueError, KeyError) as e:  # noqa: PERF203
        text = " ".join(public_message(e).split())
        st.error(f"Could not use that judge file: {plain(text[:300])}{' ...' if len(text) > 300 else ''}")
        return
    a = table.attrs
    cols = st.columns(4)
    cols[0].metric("lambda", f"{a['lambda']:.3f}", help="PPI++ power tuning: 0 = judge unused, 1 = full weight. "
                   "Tuned for this fit: its labelled and judge-only items under the filters above. The judge "
                   "card's lambda is the one for unlimited judge verdicts on the card's labelled pairs, so the "
                   "two differ; for a judge without information both are noise around 0.")
    cols[1].metric("Human items", f"{a['n_human_items']:,.0f}", help=f"{a['n_human_votes']:,.0f} votes on items the "
                   "judge also rated (the labelled set).")
    cols[2].metric("Judge items", f"{a['n_judge_items']:,.0f}",
                   help=f"{a['n_unlabelled_items']:,.0f} of them without votes.")
    cols[3].metric("ESS gain", f"x{a['ess_gain']:.2f}", help="Human-only / PPI total variance of the ratings: the "
                   "judge is worth this many times the votes.")
    human = table[["model", "rating_human", "lower_human", "upper_human", "battles"]].rename(
        columns={"rating_human": "rating", "lower_human": "lower", "upper_human": "upper"})
    human = human.sort_values(["rating", "model"], ascending=[False, True], ignore_index=True)
    human.insert(0, "rank", rank_from_intervals(human["lower"].to_numpy(), human["upper"].to_numpy()))
    left, right = st.columns(2)
    left.markdown("**Human votes only** (the same items; sandwich intervals)")
    left.dataframe(human.round(1), hide_index=True, width="stretch", key="lb_ppi_human")
    right.markdown(f"**Human + judge** (PPI++; {ci} intervals)")
    right.dataframe(table[["rank", "model", "rating", "lower", "upper", "ess"]].round(1), hide_index=True,
                    width="stretch", key="lb_ppi_table")
    for note in a["diagnostics"]:
        st.caption(note)


if __name__ == "__main__":
    render()
