"""preflab.arena: pairwise votes in, Bradley-Terry leaderboards with intervals out.

JAX is not imported here: the modules that compute import :mod:`arena._jax` (x64 and the compilation
cache) themselves, so reading data, ``--help`` and other light commands start without it.
"""

__version__ = "0.1.0"
