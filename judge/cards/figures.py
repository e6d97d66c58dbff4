"""A card's figure as an image every report embeds: one PNG data URL (90 dpi, tight box) for the judge card,
the jury card and the gate report, so the HTML files stand alone."""

from __future__ import annotations

import base64
import io

from matplotlib.figure import Figure


def png(fig: Figure) -> str:
    """A figure as a base64 PNG data URL."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
