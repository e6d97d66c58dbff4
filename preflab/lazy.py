"""A package's public names, each imported from its module on first use (PEP 562 module ``__getattr__``).

The packages' ``__init__`` files declare their public surface without importing it, so ``import judge``
or ``import arena`` stays as light as before (no JAX, no pandas until a name that needs them is used).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable


def lazy_names(package: str, homes: dict[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose public names live in ``homes``
    (name -> module). A name is imported on first use and then kept in the package."""

    def __getattr__(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *homes})

    return __getattr__, __dir__
