"""What a run will cost before it is sent (``judge run --dry-run``, ``generate --dry-run``, ``compare --dry-run``).

:func:`judge.runner.estimate.estimate_run` plans exactly the calls :func:`judge.runner.run.arun_judge` would make
(the same :func:`judge.runner.run.plan_calls`, identical requests once, cached answers left out) and prices them at the
provider's price (the price table's lookup, or an override). Input tokens are estimated at four characters
a token (the rule the runner's tokens-per-minute limiter uses; no tokenizer is assumed), output tokens at
``max_tokens`` a call (an upper bound). An unknown price is reported as unknown, never as $0. The cap a run
keeps while it runs is :class:`llm.calls.spend.SpendMeter`. :func:`answering.generate.estimate_generate` does the
same for ``preflab generate`` (the run's own :func:`answering.generate.plan_jobs`); both return a
:class:`RunEstimate`, and the lines below print them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from llm.calls.spend import BudgetReached, SpendMeter, estimated_input_tokens, known_price
from llm.providers.base import Provider

__all__ = ["BudgetReached", "RunEstimate", "SpendMeter", "dry_run_lines", "estimated_input_tokens", "generation_line",
           "known_price", "requests_per_call", "total_summary"]


@dataclass(frozen=True)
class RunEstimate:
    """The calls a run will send, their estimated tokens, and the cost (None when the price is unknown)."""

    judge: str
    calls: int
    cached: int
    tokens_in: int
    tokens_out: int
    price: tuple[float, float] | None
    sampled: bool
    samples_per_order: int

    @property
    def cost(self) -> float | None:
        if self.price is None:
            return None
        return self.tokens_in * self.price[0] + self.tokens_out * self.price[1]

    def summary(self) -> str:
        """Lines for ``judge run --dry-run``."""
        if self.price is None:
            cost = f"unknown: no price for {self.judge} in the price table (give one to price the run)"
        elif self.price == (0.0, 0.0):
            cost = "$0 (a self-hosted judge: no per-token price)"
        else:
            cost = (f"${self.cost:.4f} at ${self.price[0] * 1e6:g} / ${self.price[1] * 1e6:g} per million tokens "
                    "in / out")
        method = f"sampled, {self.samples_per_order} per order" if self.sampled else "logprob"
        return (f"dry run ({self.judge}, {method}): {self.calls} calls to send, {self.cached} calls answered by the "
                f"cache\nestimated tokens: {self.tokens_in} in (4 characters a token), at most {self.tokens_out} "
                f"out\nestimated cost: {cost}\nnothing was sent")




def requests_per_call(provider: Provider, n: int) -> int:
    """HTTP requests one call of ``n`` answers makes: one where the API takes ``n`` (OpenAI, unless the model
    refused it), else one per answer (Anthropic, OpenAI-compatible servers)."""
    takes_n = provider.provider == "openai" and getattr(provider, "capabilities", {}).get("n", True)
    return 1 if n == 1 or takes_n else n






def total_summary(estimates: Sequence[RunEstimate]) -> str:
    """The estimates' total: calls, tokens and cost, where an unknown price keeps the total unknown (the known
    part is shown as a lower bound)."""
    calls = sum(e.calls for e in estimates)
    t_in, t_out = sum(e.tokens_in for e in estimates), sum(e.tokens_out for e in estimates)
    known = sum(e.cost for e in estimates if e.cost is not None)
    unpriced = [e.judge for e in estimates if e.cost is None and e.calls]
    cost = (f"unknown: no price for {', '.join(unpriced)} (at least ${known:.4f} for the rest)" if unpriced
            else f"${known:.4f}")
    return (f"total: {calls} calls to send, {sum(e.cached for e in estimates)} answered by the cache; estimated "
            f"tokens {t_in} in, at most {t_out} out; estimated cost {cost}; nothing was sent")


def generation_line(e: RunEstimate) -> str:
    """One model's line for ``generate --dry-run``."""
    cost = ("unknown (no price in the table)" if e.price is None else "$0 (local server)" if e.price == (0.0, 0.0)
            else f"${e.cost:.4f}")
    return (f"{e.judge}: {e.calls} calls to send, {e.cached} cached; estimated tokens {e.tokens_in} in, at most "
            f"{e.tokens_out} out; cost {cost}")


def dry_run_lines(estimates: Sequence[RunEstimate], *, header: str | None = None, per_model: bool = False,
                  total: bool = True, nothing: str | None = None) -> list[str]:
    """What every ``--dry-run`` prints (``judge run``, ``generate``, ``compare``): an optional header, each
    estimate (its summary, or one line per model with ``per_model``), and the total; ``nothing`` when there
    is nothing to send."""
    if not estimates:
        return [nothing] if nothing else []
    lines = [header] if header else []
    lines += [generation_line(e) if per_model else e.summary() for e in estimates]
    return lines + ([total_summary(estimates)] if total else [])
