"""preflab.arena: pairwise votes in, Bradley-Terry leaderboards with intervals out."""

from arena._jax import configure_jax

configure_jax()

__version__ = "0.1.0"
