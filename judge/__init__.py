"""judge: run pairwise LLM judges in both orders and calibrate them against humans.

The public names below load on first use; none of them imports JAX.
"""

from preflab import __version__  # noqa: F401  (one version for the whole distribution)
from preflab.lazy import lazy_names

_HOMES = {
    "Pair": "judge.pairs",
    "RunConfig": "judge.run",
    "load_pairs": "judge.pairs",
    "load_rubric": "judge.rubrics",
    "make_provider": "judge.providers",
    "render_card": "judge.card",
    "run_judge": "judge.run",
    "write_card": "judge.card",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
