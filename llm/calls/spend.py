"""A run's spend: token estimates, the known-or-unknown price, and the spending cap while it runs.

:class:`SpendMeter` is the runner's cap (``--max-cost``): a call is started only while the spend so far is
below the cap, so the run stops within one round of in-flight calls (``concurrency``) of it; what was
answered is cached and a rerun continues from there. An unknown price is unknown, never $0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from llm.prices import FREE, Price, price_for
from llm.providers.base import NOT_SENT_COST_CAP, Completion, JudgeRequest, Provider, ProviderError, parse_spec
from llm.providers.generation import Generation, GenerationRequest


def estimated_input_tokens(request: JudgeRequest | GenerationRequest) -> int:
    """Tokens a request sends, estimated at four characters a token (messages or completion prompt)."""
    return (sum(len(m["content"]) for m in request.messages) + len(getattr(request, "prompt", None) or "")) // 4


def spec_price(spec: str) -> Price | None:
    """The price a provider built from ``spec`` charges, without building it (no key needed): a local server
    costs nothing per token, a paid model the dated table's price, a model it does not list None (unknown)."""
    s = parse_spec(spec.split(";")[0])
    return FREE if s.provider == "local" else price_for(s.model)


def per_token(price: Price | None) -> tuple[float, float] | None:
    """(USD per input token, per output token), or None when the price is unknown."""
    if price is None or math.isnan(price.input) or math.isnan(price.output):
        return None
    return price.input / 1e6, price.output / 1e6


def known_price(provider: Provider) -> tuple[float, float] | None:
    """(USD per input token, per output token), or None when the price is unknown.

    The provider's price is the dated table's (``llm.prices``) or the user's ``--price``; a local
    (self-hosted) judge costs nothing per token; a model the table does not list has no price (None).
    """
    return per_token(getattr(provider, "price", None))


class BudgetReached(ProviderError):
    """A call not sent because the run's spending cap was reached (kept as the row's error)."""

    def __init__(self, cap: float, spent: float) -> None:
        super().__init__(f"not sent: the --max-cost budget of ${cap:g} was reached (spent ${spent:.4f}); "
                         "rerun with a higher --max-cost to continue from the cache", retryable=False,
                         kind=NOT_SENT_COST_CAP)


class SpendMeter:
    """The spend of a run's fresh calls against an optional cap (USD): one provider (a judge run), or several
    sharing the cap (``generate``: each answer charged at its own model's price)."""

    def __init__(self, provider: Provider | Sequence[Provider], cap: float | None) -> None:
        providers = list(provider) if isinstance(provider, list | tuple) else [provider]
        self.cap, self.spent = cap, 0.0
        self._prices = {id(p): known_price(p) for p in providers}
        self.price = self._prices[id(providers[0])]
        for p in providers:
            if cap is not None and self._prices[id(p)] is None:
                raise ValueError(f"--max-cost needs a known price, and {p.provider}:{p.model} has none "
                                 "in the price table; give its price or drop --max-cost")

    def check(self) -> None:
        """Raise :class:`BudgetReached` when the cap is reached (call before sending)."""
        if self.cap is not None and self.spent >= self.cap:
            raise BudgetReached(self.cap, self.spent)

    def charge(self, comp: Completion | Generation, provider: Provider | None = None) -> None:
        """Add one answered call's cost (at ``provider``'s price when the meter has several; a token count the
        server did not report counts 0)."""
        price = self.price if provider is None else self._prices[id(provider)]
        if price is not None:
            self.spent += (comp.tokens_in or 0) * price[0] + (comp.tokens_out or 0) * price[1]

    @property
    def reached(self) -> bool:
        return self.cap is not None and self.spent >= self.cap
