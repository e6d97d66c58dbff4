"""Which refit for many models: chord-Newton (shared H^-1) against MM and L-BFGS, warm-started alike.

Issue 16 asks to pick the bootstrap refit by size, "whichever is measured faster", each to 1e-3 Elo of the
exact MLE. Here one chunk of bootstrap replicates of the 1,000-model (or ``--models``) arena is refitted by
- chord-Newton: :func:`arena.bootstrap.dense.refit_signed_chunk`, the production path (the full-data Hessian's
  inverse shared by every replicate; steps until the largest is below 1e-9: the exact MLE);
- MM: Hunter (2004, Ann. Stat. 32:384, eq. 3), ``p_i <- S_i / sum_j N_ij / (p_i + p_j)``, one pass over N;
- L-BFGS: ``optax.lbfgs`` with its zoom line search on the same negative log-likelihood (Liu & Nocedal 1989),
each from the full-data MLE, on the same dense battles. MM and L-BFGS run a fixed number of steps and record,
per step, the largest error over models and replicates in Elo against the chord-Newton answer; the table
gives the steps each needs to get within 1e-3 Elo and the time that takes (steps x measured time per step).

    python -m benchmarks.bench_refit_methods --models 1000 --replicates 20
"""

from __future__ import annotations

import argparse
import math
import time

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.bench_rank import make_w1
from benchmarks.common import write_table

ELO = 400 / math.log(10)


def _dense_nll(theta: jax.Array, n: jax.Array, s: jax.Array, ridge: float) -> jax.Array:
    """Half-ties BT negative log-likelihood from battles N (K, K) and scores S (K,) (Hunter 2004, eq. 1)."""
    pair = jnp.logaddexp(theta[:, None], theta[None, :])
    return 0.5 * jnp.sum(n * pair) - s @ theta + 0.5 * ridge * theta @ theta


def _mm_trace(theta0, n, s, exact, steps: int):
    """(steps,) largest |theta - exact| after each MM step, for one replicate (centred: MM fixes no origin)."""
    def body(theta, _):
        p = jnp.exp(theta - theta.max())
        p = s / jnp.sum(n / (p[:, None] + p[None, :]), axis=1)
        theta = jnp.log(p)
        theta = theta - theta.mean() + exact.mean()
        return theta, jnp.max(jnp.abs(theta - exact))

    return jax.lax.scan(body, theta0, None, length=steps)[1]


def _lbfgs_trace(theta0, n, s, exact, ridge: float, steps: int):
    import optax

    opt = optax.lbfgs()
    value_and_grad = optax.value_and_grad_from_state(lambda t: _dense_nll(t, n, s, ridge))

    def body(state, _):
        theta, st = state
        value, grad = value_and_grad(theta, state=st)
        updates, st = opt.update(grad, st, theta, value=value, grad=grad,
                                 value_fn=lambda t: _dense_nll(t, n, s, ridge))
        theta = optax.apply_updates(theta, updates)
        centred = theta - theta.mean() + exact.mean()
        return (theta, st), jnp.max(jnp.abs(centred - exact))

    return jax.lax.scan(body, (theta0, opt.init(theta0)), None, length=steps)[1]


def steps_to(trace: np.ndarray, elo: float = 1e-3) -> int | None:
    """First step (1-based) after which every replicate stays within ``elo`` Elo, or None."""
    ok = trace.max(axis=1) * ELO < elo  # trace (steps, R)
    bad = np.flatnonzero(~ok)
    if bad.size == 0:
        return 1
    return None if bad[-1] + 1 >= ok.size else int(bad[-1] + 2)


def _compare(k: int, args: argparse.Namespace) -> list[list[object]]:
    """The table's rows for ``k`` models."""
    jax.config.update("jax_enable_x64", True)  # (this process is ours: its own JAX code in float64 too)
    from arena.bootstrap import dense as refit
    from arena.bootstrap import weights as wt
    from arena.bt import likelihood as bt
    from arena.io.battles import aggregate, load_battles

    data = bt.pair_data(aggregate(load_battles(make_w1(k=k))))
    fit = bt.fit(bt.initial_x(data, k, "half"), data, "half")
    x_hat = np.asarray(fit.x)
    h_inv = np.linalg.inv(np.asarray(bt.conditioned_hessian(x_hat, data, "half")))
    flat = np.asarray(data.counts).ravel()
    live = np.flatnonzero(flat)
    layout = refit.dense_layout(data, live, k)
    w = wt.block_weights(flat[live], 0, 0, args.replicates, "multinomial")
    m, s = refit.signed_battles(layout, w)
    m_d, s_d = jnp.asarray(m), jnp.asarray(s)
    ridge = bt.DEFAULT_RIDGE

    def timed(fn, *a):
        jax.block_until_ready(fn(*a))  # compile
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn(*a))
        return out, time.perf_counter() - t0

    chord = jax.jit(lambda m, s: refit.refit_signed_chunk(m, s, x_hat, h_inv, ridge))
    (x_chord, ok, _), t_chord = timed(chord, m_d, s_d)
    assert bool(np.all(ok)), "chord-Newton did not converge"
    exact = jnp.asarray(np.asarray(x_chord)[:, :k])
    n = jnp.abs(m_d).astype(jnp.float64)
    theta0 = jnp.broadcast_to(jnp.asarray(x_hat[:k]), exact.shape)
    rows = [[k, "chord-Newton (shared H^-1), to 1e-9", "—", f"{t_chord:.3f}", f"{t_chord / args.replicates * 1e3:.1f}",
             "0 (the reference)"]]
    for name, fn, steps in (
            ("MM (Hunter 2004)", lambda t, n, s, e: jax.vmap(
                lambda *a: _mm_trace(*a, args.mm_steps))(t, n, s, e), args.mm_steps),
            ("L-BFGS (optax, zoom line search)", lambda t, n, s, e: jax.vmap(
                lambda *a: _lbfgs_trace(*a, ridge, args.lbfgs_steps))(t, n, s, e), args.lbfgs_steps)):
        trace, secs = timed(jax.jit(fn), theta0, n, s_d, exact)
        trace = np.asarray(trace).T  # (steps, R)
        need, per_step = steps_to(trace), secs / steps
        last = f"{trace[-1].max() * ELO:.2g} after {steps} steps"
        if need is None:
            rows.append([k, name, f"> {steps}", f"> {secs:.3f}", f"> {secs / args.replicates * 1e3:.1f}", last])
        else:
            rows.append([k, name, str(need), f"{need * per_step:.3f}", f"{need * per_step / args.replicates * 1e3:.1f}",
                         last])
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="300,1000", help="comma-separated model counts")
    p.add_argument("--replicates", type=int, default=20)
    p.add_argument("--mm-steps", type=int, default=400)
    p.add_argument("--lbfgs-steps", type=int, default=40)
    args = p.parse_args(argv)

    rows = [row for k in (int(m) for m in args.models.split(",")) for row in _compare(k, args)]
    head = ["models", "refit", "steps to 1e-3 Elo", f"seconds for {args.replicates} replicates", "ms per replicate",
            "largest error (Elo)"]
    write_table("bench_refit_methods", "Bootstrap refit methods, 1M battles (W1 generator), "
                f"{args.replicates} replicates from the full-data MLE", head, rows,
                notes="Steps for MM and L-BFGS: the first after which every replicate stays within 1e-3 Elo of "
                      "the chord-Newton answer; their seconds are steps x the measured time per step.")


if __name__ == "__main__":
    main()
