"""Shared fixtures: where the read-only real data lives, and skips when it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (real public data sets); the test is skipped when it is not there."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not present at {SHARED_DATA} (see ../shared/data/README.md)")
    return SHARED_DATA


def execute_notebook(path: Path, timeout: int = 600, cwd: Path | None = None) -> list:
    """Run a committed (output-free) notebook top to bottom with nbclient and return its code cells' outputs.

    The kernel gets our environment minus ``MPLBACKEND``: importing streamlit (the app tests) sets it to
    Agg, which would hide the notebook's inline figures from the user and from these tests.
    """
    import os

    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"
    saved = os.environ.pop("MPLBACKEND", None)
    try:
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(cwd or path.parent)}}).execute()
    finally:
        if saved is not None:
            os.environ["MPLBACKEND"] = saved
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def run_notebook(name: str, timeout: int = 600) -> tuple[list, str]:
    """Run ``notebooks/<name>`` (:func:`execute_notebook`), which must show no error: (its outputs, the text
    its cells printed)."""
    outputs = execute_notebook(ROOT / "notebooks" / name, timeout=timeout)
    assert not [o for o in outputs if o.output_type == "error"]
    return outputs, "\n".join(o.get("text", "") for o in outputs)
