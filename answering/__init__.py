"""answering: models answering prompts, not judging them: the ``preflab generate`` runner (``generate``), model
specs and rosters (``model_specs``), and the two answers the Battle page streams side by side (``stream``).

Over :mod:`llm` (the same providers, retries, cache and spending cap as the judge); :mod:`judge` and
:mod:`voting` may import it, it imports neither. The names below load on first use.
"""

from preflab import __version__  # noqa: F401  (one version for the whole distribution)
from preflab.lazy import lazy_names

_HOMES = {
    "GenerateConfig": "answering.generate",
    "GenerateResult": "answering.generate",
    "GenerationCache": "answering.generate",
    "ModelSpec": "answering.model_specs",
    "estimate_generate": "answering.generate",
    "load_prompts": "answering.model_specs",
    "load_roster": "answering.model_specs",
    "pairs_table": "answering.generate",
    "parse_model_spec": "answering.model_specs",
    "run_generate": "answering.generate",
    "stream_answers": "answering.stream",
    "unique_names": "answering.model_specs",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
