"""Leaderboard benchmark: preflab ``rank`` against arena-rank, evalica, choix and fschat on W1.

W1: 1,000,000 battles, 100 models, 15% ties, seed 0 (uniform random pairs, BT outcomes from N(0, 1)
strengths, per-side style totals for style control). Every pipeline starts from the same pandas
DataFrame of strings and ends at ratings. One run times all of them, prints Markdown tables with ratios
and writes ``benchmarks/results/bench_rank.md``. Run: ``python -m benchmarks.bench_rank [--device cpu]``.
Not part of the test suite; timings on a shared 2-core machine are noisy (the load average is recorded).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from statistics import median

import numpy as np
import pandas as pd

from arena.simulation.simulate import uniform_pairs
from benchmarks.common import RESULTS


def make_w1(n: int = 1_000_000, k: int = 100, tie_share: float = 0.15, seed: int = 0) -> pd.DataFrame:
    """W1-style battles as a DataFrame of strings plus the style totals used by style control."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0, 1, k)
    a, b = uniform_pairs(n, k, rng)
    la, lb = rng.lognormal(6, 0.5, n).round(), rng.lognormal(6, 0.5, n).round()
    p = 1 / (1 + np.exp(-(s[a] - s[b] + 0.5 * (la - lb) / (la + lb + 1))))
    out = np.where(rng.random(n) < tie_share, 2, np.where(rng.random(n) < p, 0, 1))
    names = np.array([f"model-{i:04d}" for i in range(k)], dtype=object)
    df = pd.DataFrame({"model_a": names[a], "model_b": names[b],
                       "winner": np.array(["model_a", "model_b", "tie"], dtype=object)[out],
                       "sum_assistant_a_tokens": la, "sum_assistant_b_tokens": lb})
    for c in ("header_count", "list_count", "bold_count"):
        df[f"{c}_a"], df[f"{c}_b"] = rng.poisson(1.5, n), rng.poisson(1.5, n)
    return df


def timed(fn: Callable[[], object], repeat: int = 3) -> tuple[float, object]:
    """Median wall time over ``repeat`` runs, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return median(times), result


def table(title: str, header: list[str], rows: list[list[object]]) -> str:
    lines = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]) + "\n"


# ----------------------------------------------------------------------------------------------- preflab


def bench_preflab(df: pd.DataFrame, device: str | None, repeat: int) -> dict[str, float]:
    from arena.bt import likelihood as bt
    from arena.io.battles import aggregate, load_battles
    from arena.leaderboard import rank_battles
    from arena.leaderboard_options import IntervalOptions

    out: dict[str, float] = {}
    counts = aggregate(load_battles(df))
    data = bt.pair_data(counts)
    x0 = bt.initial_x(data, counts.n_models, "half")
    bt.fit(x0, data).x.block_until_ready()  # compile once
    out["single fit after aggregation"], _ = timed(lambda: bt.fit(x0, data).x.block_until_ready(), 7)
    rank_battles(df, IntervalOptions(ci="both", n_bootstrap=1000), device=device)  # warm-up (compilation cache)
    out["sandwich only, end to end"], _ = timed(
        lambda: rank_battles(df, IntervalOptions(ci="sandwich"), device=device), repeat)
    out["sandwich + 1000 bootstrap, end to end"], _ = timed(
        lambda: rank_battles(df, IntervalOptions(ci="both", n_bootstrap=1000), device=device), repeat)
    out["sandwich + 1000 bootstrap (Poisson weights)"], _ = timed(
        lambda: rank_battles(df, IntervalOptions(ci="both", n_bootstrap=1000, weights="poisson"),
                             device=device), repeat)
    # warmed up and repeated like the rows above; the first call (tracing its programs) is its own row
    out["style control, first call in this process (traces its programs)"], _ = timed(
        lambda: rank_battles(df, IntervalOptions(ci="both", n_bootstrap=200), style_control=True, device=device), 1)
    out["style control, 4 features, 200 refits"], _ = timed(
        lambda: rank_battles(df, IntervalOptions(ci="both", n_bootstrap=200), style_control=True,
                             device=device), repeat)
    return out


def _cli(args: list[str]) -> list[str]:
    """This checkout's CLI (not whatever the venv's console script points at)."""
    return [sys.executable, "-c", "import sys; from preflab_cli import main; sys.argv[0] = 'preflab'; main()", *args]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))


def bench_cli(df: pd.DataFrame, device: str | None, runs: int = 5) -> dict[str, float]:
    """Warm CLI runs (persistent compilation cache filled) on W1 stored as Parquet, and their parts:
    interpreter start, ``--help`` and the imports ``rank`` needs (best of 3 each); ``rank`` itself is the
    median of ``runs`` runs, with the median of each part it reports under ``PREFLAB_TIMINGS=1`` (wall
    seconds; CPU seconds of all threads in the label)."""
    from benchmarks.common import best_of

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "w1.parquet"
        df[["model_a", "model_b", "winner"]].to_parquet(path)
        cmd = _cli(["rank", str(path), "--ci", "both", "--top", "3"] + (["--device", device] if device else []))
        subprocess.run(cmd, check=True, capture_output=True, env=_env())

        def run(c: list[str]) -> Callable[[], object]:
            return lambda: subprocess.run(c, check=True, capture_output=True, env=_env())

        out["python -c pass (interpreter start)"] = best_of(run([sys.executable, "-c", "pass"]))
        out["preflab --help"] = best_of(run(_cli(["--help"])))
        out["import arena.leaderboard (jax, pandas, ...)"] = best_of(
            run([sys.executable, "-c", "import arena.leaderboard"]))
        walls, parts = [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            done = subprocess.run(cmd, check=True, capture_output=True, text=True,
                                  env=dict(_env(), PREFLAB_TIMINGS="1"))
            walls.append(time.perf_counter() - t0)
            parts.append(cli_timings(done.stderr))
        out[f"preflab rank w1.parquet --ci both (warm, median of {runs})"] = median(walls)
        for name in parts[0]:
            wall, cpu = (median(p[name][k] for p in parts) for k in (0, 1))
            out[f"  rank part: {name} (cpu {cpu:.2f} s)"] = wall
    return out


def cli_timings(stderr: str) -> dict[str, tuple[float, float]]:
    """{part: (wall, cpu)} from the ``timings:`` line a command prints under ``PREFLAB_TIMINGS=1``."""
    line = next(x for x in stderr.splitlines() if x.startswith("timings: "))
    parts = {}
    for item in line.removeprefix("timings: ").split("; "):
        name, _, rest = item.rpartition(" s (cpu ")
        name, _, wall = name.rpartition(" ")
        parts[name] = (float(wall), float(rest.rstrip(")")))
    return parts


def peak_memory_mb(k: int, n_boot: int, device: str | None) -> float:
    """Peak resident memory (MB) of a fresh process that builds W1 with ``k`` models and ranks it."""
    # VmHWM is this process's own high-water mark; getrusage's ru_maxrss keeps the parent's across fork + exec
    code = ("from benchmarks.bench_rank import make_w1; from arena.leaderboard import rank_battles; "
            "from arena.leaderboard_options import IntervalOptions; "
            f"rank_battles(make_w1(k={k}), IntervalOptions('both', n_bootstrap={n_boot}), min_battles=0, "
            f"device={device!r}); print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])")
    run = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=_env())
    return int(run.stdout.strip().splitlines()[-1]) / 1024


# ------------------------------------------------------------------------------------------------- peers


def bench_arena_rank(df: pd.DataFrame) -> dict[str, str]:
    try:
        from arena_rank.models.bradley_terry import BradleyTerry, fit_single_bootstrap_sample
        from arena_rank.utils.data_utils import PairDataset
    except Exception as e:  # noqa: BLE001
        return {"error": f"not runnable: {type(e).__name__}: {e}"}
    import jax
    import jax.numpy as jnp

    def sandwich():
        ds = PairDataset.from_pandas(df)
        return ds, BradleyTerry(n_competitors=len(ds.competitors)).compute_ratings_and_cis(ds, ci_method="sandwich")

    t_sw, (ds, _) = timed(sandwich, 1)
    model = BradleyTerry(n_competitors=len(ds.competitors))
    total = jnp.sum(ds.counts)
    draws = jax.random.multinomial(jax.random.PRNGKey(0), int(total), ds.counts / total,
                                   shape=(2, ds.counts.shape[0]), dtype=jnp.float64)
    fit_single_bootstrap_sample(draws[0], model, ds)  # compile
    t_one, _ = timed(lambda: jax.block_until_ready(fit_single_bootstrap_sample(draws[1], model, ds)), 1)
    return {"sandwich": t_sw, "refit": t_one}


def bench_evalica(df: pd.DataFrame) -> float | str:
    try:
        import evalica
    except Exception as e:  # noqa: BLE001
        return f"not runnable: {e}"

    def run():
        w = df["winner"].map({"model_a": evalica.Winner.X, "model_b": evalica.Winner.Y, "tie": evalica.Winner.Draw})
        return evalica.bradley_terry(df["model_a"], df["model_b"], w)

    return timed(run, 1)[0]


def bench_choix(df: pd.DataFrame) -> float | str:
    try:
        import choix
    except Exception as e:  # noqa: BLE001
        return f"not runnable: {e}"

    def run():
        decided = df[df["winner"] != "tie"]
        codes, names = pd.factorize(pd.concat([decided["model_a"], decided["model_b"]]), sort=True)
        a, b = codes[: len(decided)], codes[len(decided):]
        a_won = (decided["winner"] == "model_a").to_numpy()
        comp = np.zeros((len(names), len(names)))  # comp[i, j]: times i beat j (choix's dense input)
        np.add.at(comp, (np.where(a_won, a, b), np.where(a_won, b, a)), 1.0)
        return choix.ilsr_pairwise_dense(comp, alpha=1e-6)

    return timed(run, 1)[0]


def _import_fschat_elo():
    """fschat 0.2.36's elo_analysis imports fastchat.model (which needs torch) for display names only."""
    if "fastchat.model" not in sys.modules:
        stub = types.ModuleType("fastchat.model")
        stub.__path__ = []  # type: ignore[attr-defined]
        registry = types.ModuleType("fastchat.model.model_registry")
        registry.get_model_info = lambda *a, **k: None  # type: ignore[attr-defined]
        sys.modules["fastchat.model"], sys.modules["fastchat.model.model_registry"] = stub, registry
    from fastchat.serve.monitor import elo_analysis

    return elo_analysis


def bench_fschat(df: pd.DataFrame, rounds: int) -> dict[str, float] | str:
    try:
        ea = _import_fschat_elo()
    except Exception as e:  # noqa: BLE001
        return f"not runnable: {type(e).__name__}: {e}"
    plain = df[["model_a", "model_b", "winner"]]
    t_fit, _ = timed(lambda: ea.compute_elo_mle_with_tie(plain), 1)
    t_boot, _ = timed(lambda: ea.get_bootstrap_result(plain, ea.compute_elo_mle_with_tie, rounds), 1)
    return {"fit": t_fit, "per_round": t_boot / rounds}


# ------------------------------------------------------------------------------------------------ growth


def bench_growth(device: str | None, sizes: list[int], models: list[int], n_boot: int) -> list[list[object]]:
    from arena.leaderboard import rank_battles
    from arena.leaderboard_options import IntervalOptions

    rows = []
    for n, k in [(n, 100) for n in sizes] + [(1_000_000, k) for k in models if k != 100]:
        df = make_w1(n=n, k=k)
        rank_battles(df, IntervalOptions(ci="both", n_bootstrap=n_boot), device=device,
                     min_battles=0)  # compiles this shape
        times = []
        for _ in range(2):  # best of two warm runs (shared machine)
            t0 = time.perf_counter()
            rank_battles(df, IntervalOptions(ci="both", n_bootstrap=n_boot), device=device, min_battles=0)
            times.append(time.perf_counter() - t0)
        rows.append([f"{n:,}", k, f"{min(times):.2f}"])
        del df
    return rows


# -------------------------------------------------------------------------------------------------- main


def gpu_check(device: str) -> None:
    """W1, the 300-model case and style control on ``device``: one Markdown table (benchmarks/gpu_check.sh)."""
    import jax

    jax.config.update("jax_enable_x64", True)  # (this process is ours: its own JAX code in float64 too)
    from arena.leaderboard import rank_battles
    from arena.leaderboard_options import IntervalOptions

    dev = jax.devices(device)[0]
    rows = []
    for label, k, n_boot, style in [("W1 (100 models): sandwich + 1000 bootstrap", 100, 1000, False),
                                    ("300 models: sandwich + 1000 bootstrap", 300, 1000, False),
                                    ("W1: style control, 4 features, 200 refits", 100, 200, True)]:
        df, intervals = make_w1(k=k), IntervalOptions("both", n_bootstrap=n_boot)
        t0 = time.perf_counter()
        rank_battles(df, intervals, device=device, min_battles=0, style_control=style)
        cold = time.perf_counter() - t0
        warm, _ = timed(lambda df=df, intervals=intervals, style=style: rank_battles(
            df, intervals, device=device, min_battles=0, style_control=style), 2)
        rows.append([label, f"{cold:.2f}", f"{warm:.2f}"])
    text = table(f"preflab on {dev.platform} ({dev.device_kind}), seconds", ["case", "first run", "warm"], rows)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_rank_gpu.md").write_text(text)
    print(text)


def peer_rows_of(df: pd.DataFrame, ours: dict, ref: float, fschat_rounds: int) -> list[list[str]]:
    """The peers' rows: arena-rank, evalica, choix and fschat on the same battles, timed or extrapolated."""
    peer_rows = []
    ar = bench_arena_rank(df)
    if "error" in ar:
        peer_rows.append(["arena-rank 0.1.1", "—", "—", ar["error"]])
    else:
        peer_rows.append(["arena-rank 0.1.1 sandwich", f"{ar['sandwich']:.2f}",
                          f"{ar['sandwich'] / ours['sandwich only, end to end']:.1f}x vs our sandwich", "measured"])
        boot = ar["sandwich"] + 1000 * ar["refit"]
        peer_rows.append(["arena-rank 0.1.1 sandwich + 1000 bootstrap refits", f"{boot:.0f}",
                          f"{boot / ref:.0f}x", f"extrapolated: one refit {ar['refit']:.2f} s x 1000"])
    ev = bench_evalica(df)
    peer_rows.append(["evalica 0.4.2 (single fit)", f"{ev:.2f}" if isinstance(ev, float) else "—",
                      f"{ev / ref:.2f}x" if isinstance(ev, float) else "—",
                      "measured" if isinstance(ev, float) else ev])
    if isinstance(ev, float):
        peer_rows.append(["evalica 0.4.2 + 1000 bootstrap refits", f"{1000 * ev:.0f}", f"{1000 * ev / ref:.0f}x",
                          "extrapolated: single fit x 1000 (evalica has no bootstrap)"])
    ch = bench_choix(df)
    peer_rows.append(["choix 0.4.1 ilsr_pairwise_dense (ties dropped, single fit)",
                      f"{ch:.2f}" if isinstance(ch, float) else "—",
                      f"{ch / ref:.2f}x" if isinstance(ch, float) else "—",
                      "measured" if isinstance(ch, float) else ch])
    fs = bench_fschat(df, fschat_rounds)
    if isinstance(fs, str):
        peer_rows.append(["fschat 0.2.36 elo_analysis", "—", "—", fs])
    else:
        total = fs["fit"] + 1000 * fs["per_round"]
        peer_rows.append(["fschat 0.2.36 compute_elo_mle_with_tie (single MLE)", f"{fs['fit']:.1f}",
                          f"{fs['fit'] / ref:.1f}x", "measured"])
        peer_rows.append(["fschat 0.2.36 MLE + 1000 bootstrap rounds", f"{total:.0f}", f"{total / ref:.0f}x",
                          f"extrapolated from {fschat_rounds} rounds ({fs['per_round']:.1f} s/round)"])
    return peer_rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default=None, help="JAX platform for preflab (cpu, gpu); default: JAX's default")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--fschat-rounds", type=int, default=2)
    p.add_argument("--skip-peers", action="store_true")
    p.add_argument("--skip-growth", action="store_true")
    p.add_argument("--sizes", default="10000,100000,1000000,10000000")
    p.add_argument("--models", default="10,100,300,1000")
    p.add_argument("--skip-memory", action="store_true")
    p.add_argument("--gpu-check", action="store_true",
                   help="only W1, the 300-model case and style control (benchmarks/gpu_check.sh)")
    args = p.parse_args(argv)
    if args.gpu_check:
        return gpu_check(args.device or "gpu")

    import jax

    jax.config.update("jax_enable_x64", True)  # (this process is ours: its own JAX code in float64 too)
    from arena.leaderboard import rank_battles
    from arena.leaderboard_options import IntervalOptions

    dev = jax.devices(args.device)[0] if args.device else jax.devices()[0]
    load0 = os.getloadavg()[0]
    df = make_w1()
    ours = bench_preflab(df, args.device, args.repeat)
    for k in (300, 1000):  # many models, same 1M battles
        big = make_w1(k=k)
        rank_battles(big, IntervalOptions(ci="both", n_bootstrap=1000), device=args.device, min_battles=0)  # compile
        cpu0 = time.process_time()
        ours[f"{k} models: sandwich + 1000 bootstrap, end to end"], _ = timed(
            lambda big=big: rank_battles(big, IntervalOptions(ci="both", n_bootstrap=1000), device=args.device,
                                         min_battles=0), 2)
        # CPU seconds of all threads: less noisy than wall time on a shared machine (work, not waiting)
        ours[f"{k} models: the same, CPU seconds (all threads)"] = (time.process_time() - cpu0) / 2
        del big
    cli = bench_cli(df, args.device)
    ref = ours["sandwich + 1000 bootstrap, end to end"]
    targets = {"single fit after aggregation": 0.05, "sandwich + 1000 bootstrap, end to end": 3.0,
               "style control, 4 features, 200 refits": 6.0, "300 models: sandwich + 1000 bootstrap, end to end": 3.0,
               "1000 models: sandwich + 1000 bootstrap, end to end": 15.0}
    def row(what: str, value: float, target: float | None, digits: int = 3) -> list[str]:
        return [what, f"{value:.{digits}f}", f"≤ {target:g}" if target else "",
                f"{value / target:.2f}x" if target else ""]

    rows = [row(f"preflab: {k}", v, targets.get(k)) for k, v in ours.items()]
    cli_targets = {"preflab --help": 0.5, "preflab rank w1.parquet --ci both (warm, median of 5)": 2.0}
    rows += [row(f"CLI: {k}", v, cli_targets.get(k), 2) for k, v in cli.items()]
    if not args.skip_memory:
        for k in (100, 300, 1000):
            rows.append(row(f"peak memory (MB), {k} models, sandwich + 1000 refits",
                            peak_memory_mb(k, 1000, args.device), 1536 if k == 100 else None, 0))
    peer_rows = [["preflab (sandwich + 1000 bootstrap refits)", f"{ref:.2f}", "1.0x", "measured"]]
    if not args.skip_peers:
        peer_rows += peer_rows_of(df, ours, ref, args.fschat_rounds)
    text = ["## bench_rank: W1 (1,000,000 battles, 100 models, 15% ties, seed 0)", "",
            table("preflab timings (seconds, median of runs; memory in MB)", ["what", "value", "target",
                                                                                "vs target"], rows),
            table("Peers, whole pipeline from the same DataFrame (seconds)",
                  ["pipeline", "seconds", "vs preflab", "how"], peer_rows)]
    if not args.skip_growth:
        grow = bench_growth(args.device, [int(s) for s in args.sizes.split(",")],
                            [int(m) for m in args.models.split(",")], 1000)
        text.append(table("Cost growth: preflab sandwich + 1000 bootstrap refits, end to end (seconds)",
                          ["battles", "models", "seconds"], grow))
    text.append(f"Device: {dev.platform} ({dev.device_kind}); {platform.processor() or platform.machine()}, "
                f"{os.cpu_count()} cores shared with other jobs; load average {load0:.1f} at start, "
                f"{os.getloadavg()[0]:.1f} at end. GPU: `benchmarks/gpu_check.sh` "
                "(results/bench_rank_gpu.md when run).\n")
    out = "\n".join(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_rank.md").write_text(out)
    print(out)


if __name__ == "__main__":
    main()
