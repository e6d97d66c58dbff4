"""JAX set-up shared by every module: float64 math and a persistent compilation cache.

float64 is scoped, not global: each public function that computes with JAX runs under :func:`float64`
(``jax.enable_x64`` as a context manager, this thread only), so the host process's own JAX code keeps its
setting. The cache lives under the user's cache folder so a second CLI run skips XLA compilation.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import jax

F = TypeVar("F", bound=Callable)


def float64(fun: F) -> F:
    """``fun`` run with JAX's 64-bit types on (and the caller's setting back after): the fits and their
    intervals are checked to ~1e-9, which float32 cannot give. Harmless inside a trace already in float64. It adds
    one frame: a warning meant for the caller of a wrapped function passes ``stacklevel=3``."""

    @functools.wraps(fun, updated=())  # (a StoredJit's own state stays on it)
    def in_float64(*args, **kwargs):
        with jax.enable_x64(True):
            return fun(*args, **kwargs)

    return in_float64  # type: ignore[return-value]


def cache_dir() -> Path:
    """Folder of the persistent JAX compilation cache (``$PREFLAB_CACHE`` or ``~/.cache/preflab``)."""
    root = os.environ.get("PREFLAB_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "preflab"
    )
    return Path(root) / "jax"


def configure_jax() -> None:
    """Turn on the persistent compilation cache; safe to call many times. Unlike float64 this is process-wide:
    JAX opens one cache folder per process, on its first compilation."""
    path = cache_dir()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # read-only home: run without the cache rather than fail
    jax.config.update("jax_compilation_cache_dir", str(path))
    # Cache every compiled program: ours are small but many, and compile time dominates a cold CLI run.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)


configure_jax()  # importing this module is how the computing modules get the cache


# ----------------------------------------------------------------------------- stored programs

#: Off in the library; ``preflab rank`` turns it on: its few programs are then loaded, not traced.
STORE_PROGRAMS = False
_source_hash: list[str] = []
_ready: list[bool] = []


class StoredJit:
    """A jitted function that, with :data:`STORE_PROGRAMS` on, keeps each program it runs as a
    ``jax.export`` module in the cache folder and calls that on later runs: a warm CLI run skips
    tracing and lowering our Python (most of the ~0.8 s JAX overhead of a warm run), and XLA's cache still skips
    compiling. Keyed by the function, its static arguments, the arguments' shapes and dtypes, JAX's
    version, the platform and a hash of arena's sources (an edit invalidates it). Calls under tracing,
    with sharded arguments, or anything that fails fall back to the plain jitted call."""

    def __init__(self, jitted, static_argnames: tuple[str, ...] = ()):
        import inspect

        self.jitted, self.static = jitted, frozenset(static_argnames)
        self.names = list(inspect.signature(jitted).parameters)
        self.name = f"{jitted.__module__}.{jitted.__name__}"
        self.loaded: dict[str, object] = {}
        self.broken = False
        self.__doc__, self.__name__, self.__wrapped__ = jitted.__doc__, jitted.__name__, jitted

    def __call__(self, *args, **kwargs):
        if STORE_PROGRAMS and not self.broken:
            try:
                found = self._stored(args, kwargs)
            except Exception:  # noqa: BLE001  (a cache problem must never break a fit)
                found, self.broken = None, True  # (and is not retried on every call)
            if found is not None:
                key, program, dyn_args, dyn_kwargs = found
                try:
                    return program.call(*dyn_args, **dyn_kwargs)
                except Exception:  # noqa: BLE001  (e.g. a device it was not made for: trace as before)
                    self.loaded.pop(key, None)
        return self.jitted(*args, **kwargs)

    def _stored(self, args: tuple, kwargs: dict):
        import hashlib
        import pickle

        static = {self.names[i]: a for i, a in enumerate(args) if self.names[i] in self.static}
        static.update({k: v for k, v in kwargs.items() if k in self.static})
        dyn_args = tuple(a for i, a in enumerate(args) if self.names[i] not in self.static)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static}
        leaves, tree = jax.tree_util.tree_flatten((dyn_args, dyn_kwargs))
        platforms = set()
        for leaf in leaves:
            if isinstance(leaf, jax.core.Tracer):
                return None
            if isinstance(leaf, jax.Array):
                if len(leaf.sharding.device_set) != 1:
                    return None
                platforms.add(next(iter(leaf.sharding.device_set)).platform)
        if len(platforms) > 1:
            return None
        platform = platforms.pop() if platforms else jax.devices()[0].platform
        avals = [str(jax.typeof(leaf)) + ("w" if isinstance(leaf, float | int) else "") for leaf in leaves]
        text = repr((self.name, sorted(static.items()), str(tree), avals, platform, jax.__version__, _sources()))
        key = hashlib.sha256(text.encode()).hexdigest()[:32]
        program = self.loaded.get(key)
        if program is None:
            load_lowering_libraries()
            path = cache_dir().parent / "programs" / f"{self.jitted.__name__}-{key}.pkl"
            try:
                program = pickle.loads(path.read_bytes())
            except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
                program = jax.export.export(self.jitted, platforms=[platform])(*args, **kwargs)
                program = _picklable(program)
                _write_atomic(path, pickle.dumps(program))
            self.loaded[key] = program
        return key, program, dyn_args, dyn_kwargs


def stored_jit(static_argnames: tuple[str, ...] = ()):
    """Decorator: ``jax.jit`` with :class:`StoredJit` programs (for the CLI's few hot programs)."""

    def wrap(fun):
        return StoredJit(jax.jit(fun, static_argnames=static_argnames), static_argnames)

    return wrap


def _sources() -> str:
    """sha256 of arena's Python sources (once per process, ~2 ms)."""
    if not _source_hash:
        import hashlib

        h = hashlib.sha256()
        for f in sorted(Path(__file__).parent.glob("*.py")):
            h.update(f.name.encode() + f.read_bytes())
        _source_hash.append(h.hexdigest())
    return _source_hash[0]


@float64  # (the kernels and dialects of our float64 programs)
def load_lowering_libraries() -> None:
    """Lower a small LAPACK call once: that loads the MLIR dialects and LAPACK's kernels (~0.3 s), which
    JAX does when it first lowers one; a stored program is not lowered but needs the kernels."""
    if not _ready:
        import jax.numpy as jnp
        import numpy as np

        _init_lapack()
        jax.jit(jnp.linalg.solve).lower(np.eye(2), np.ones(2))
        _ready.append(True)


def _init_lapack() -> None:
    """jaxlib takes LAPACK's kernels from scipy's ``cython_blas``/``cython_lapack``, imported through the
    package ``scipy.linalg`` (~0.25 s, most of it scipy's copy of numpy's namespace, f2py and unittest
    included): load those two extension modules alone for it, then forget them, so that a later
    ``import scipy.linalg`` loads them as usual. Anything unexpected leaves it to jaxlib's own way."""
    import importlib.util
    import sys

    if "scipy.linalg" in sys.modules:
        return
    names = [f"scipy.linalg.{m}" for m in ("cython_blas", "cython_lapack")]
    try:
        from jaxlib.cpu import _lapack

        folder = Path(importlib.util.find_spec("scipy").origin).parent / "linalg"
        for name in names:
            path = next(folder.glob(name.rpartition(".")[2] + ".*.so"))
            spec = importlib.util.spec_from_file_location(name, path)
            sys.modules[name] = module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        _lapack.initialize()
    except Exception:  # noqa: BLE001, S110  (jaxlib initialises LAPACK itself when it first lowers a call)
        pass
    finally:
        for name in names:
            sys.modules.pop(name, None)


def _picklable(exported):
    """The export without its vjp closure (not picklable; the CLI never differentiates a stored program)."""
    import dataclasses

    return dataclasses.replace(exported, _get_vjp=None)


def _write_atomic(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        pass  # read-only cache folder: trace again next time
