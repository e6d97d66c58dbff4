"""JAX set-up shared by every module: float64 math and a persistent compilation cache.

The cache lives under the user's cache folder so a second CLI run skips XLA compilation.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Folder of the persistent JAX compilation cache (``$PREFLAB_CACHE`` or ``~/.cache/preflab``)."""
    root = os.environ.get("PREFLAB_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "preflab"
    )
    return Path(root) / "jax"


def configure_jax() -> None:
    """Enable x64 and the persistent compilation cache; safe to call many times."""
    import jax

    jax.config.update("jax_enable_x64", True)
    path = cache_dir()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # read-only home: run without the cache rather than fail
    jax.config.update("jax_compilation_cache_dir", str(path))
    # Cache every compiled program: ours are small but many, and compile time dominates a cold CLI run.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)


configure_jax()  # importing this module is how the computing modules get x64 and the cache
