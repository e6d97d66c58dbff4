"""Style control: Bradley-Terry with answer-style covariates (length, markdown counts), its Newton fit and
sandwich, and the bootstrap refits of the joint model.

The names below load on first use (importing the room imports none of its modules).
"""

from preflab.lazy import lazy_names

_HOMES = {
    "ConfoundedStyleWarning": "arena.style.features",
    "STYLE_FEATURES": "arena.style.features",
    "markdown_counts": "arena.style.features",
    "style_fit": "arena.style.fit",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
