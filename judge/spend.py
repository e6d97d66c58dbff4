"""A run's spend: token estimates, the known-or-unknown price, and the spending cap while it runs.

:class:`SpendMeter` is the runner's cap (``--max-cost``): a call is started only while the spend so far is
below the cap, so the run stops within one round of in-flight calls (``concurrency``) of it; what was
answered is cached and a rerun continues from there. An unknown price is unknown, never $0.
"""

from __future__ import annotations

import math

from judge.prices import FREE, Price, price_for
from judge.providers.base import Completion, JudgeRequest, Provider, ProviderError, parse_spec
from judge.providers.generation import GenerationRequest


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

    The provider's price is the dated table's (``judge.prices``) or the user's ``--price``; a local
    (self-hosted) judge costs nothing per token; a model the table does not list has no price (None).
    """
    return per_token(getattr(provider, "price", None))


class BudgetReached(ProviderError):
    """A call not sent because the run's spending cap was reached (kept as the row's error)."""

    def __init__(self, cap: float, spent: float) -> None:
        super().__init__(f"not sent: the --max-cost budget of ${cap:g} was reached (spent ${spent:.4f}); "
                         "rerun with a higher --max-cost to continue from the cache", retryable=False, kind="budget")


class SpendMeter:
    """The spend of a run's fresh calls against an optional cap (USD)."""

    def __init__(self, provider: Provider, cap: float | None) -> None:
        self.cap, self.spent = cap, 0.0
        self.price = known_price(provider)
        if cap is not None and self.price is None:
            raise ValueError(f"--max-cost needs a known price, and {provider.provider}:{provider.model} has none "
                             "in the price table; give its price or drop --max-cost")

    def check(self) -> None:
        """Raise :class:`BudgetReached` when the cap is reached (call before sending)."""
        if self.cap is not None and self.spent >= self.cap:
            raise BudgetReached(self.cap, self.spent)

    def charge(self, comp: Completion) -> None:
        """Add one answered call's cost."""
        if self.price is not None:
            self.spent += comp.tokens_in * self.price[0] + comp.tokens_out * self.price[1]

    @property
    def reached(self) -> bool:
        return self.cap is not None and self.spent >= self.cap
