"""llm: the wire to the language-model APIs, shared by judging (:mod:`judge`) and answering (:mod:`answering`).

Rooms, bottom first: ``prices.py`` (the price table, known or unknown) and ``local_server.py`` (a local llama.cpp
server for tests, benchmarks and demos); ``providers/`` (one provider per API behind one protocol, its errors and
spec strings); ``calls/`` (what every run of calls shares: rate limits and retries, the SQLite call cache, the
spending cap and the run estimate). It imports only :mod:`preflab`; judge and answering import it, never the
reverse.

The names below load on first use (importing the package imports none of its modules, and no SDK).
"""

from preflab import __version__  # noqa: F401  (one version for the whole distribution)
from preflab.lazy import lazy_names

_HOMES = {
    "FREE": "llm.prices",
    "ProviderError": "llm.providers.base",
    "Price": "llm.prices",
    "free_port": "llm.local_server",
    "llama_server": "llm.local_server",
    "make_provider": "llm.providers",
    "parse_price": "llm.prices",
    "parse_spec": "llm.providers.base",
    "price_for": "llm.prices",
    "smollm2_gguf": "llm.local_server",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
