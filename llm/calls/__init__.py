"""Calls shared by judging and answering: rate limits and retries with backoff (``retry``), the SQLite call
cache (``cache``), the spending cap and token estimates (``spend``), and a run's estimate before it is sent
(``estimate``: the dry runs' numbers and lines). Over :mod:`llm.providers`; it knows no judge and no answer.

The names below load on first use.
"""

from preflab.lazy import lazy_names

_HOMES = {
    "CallCache": "llm.calls.cache",
    "CallStats": "llm.calls.retry",
    "RateLimiter": "llm.calls.retry",
    "RunEstimate": "llm.calls.estimate",
    "SpendMeter": "llm.calls.spend",
    "cache_key": "llm.calls.cache",
    "dry_run_lines": "llm.calls.estimate",
    "call_with_retries": "llm.calls.retry",
    "estimated_input_tokens": "llm.calls.spend",
    "generation_line": "llm.calls.estimate",
    "known_price": "llm.calls.spend",
    "per_token": "llm.calls.spend",
    "prompt_hash": "llm.calls.cache",
    "requests_per_call": "llm.calls.estimate",
    "run_pool": "llm.calls.retry",
    "spec_price": "llm.calls.spend",
    "total_summary": "llm.calls.estimate",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
