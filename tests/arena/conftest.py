"""Fixtures of the arena tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def jax_float64() -> Iterator[None]:
    """JAX's 64-bit types for a test that computes with JAX itself (its own ``jnp`` arrays, ``jax.grad`` of a
    loss): arena's functions turn float64 on for their own work only, as a user's code would have to."""
    import jax

    with jax.enable_x64(True):
        yield
