"""Bad scores files (issue 39, item 7) for the bad-input corpus: each must exit 2 naming the file and field."""

from __future__ import annotations

from tests.preflab_cli.bad_cases import Case, b, csv_text, jsonl

CAL = ("judge", "calibrate", "{f}", "--bootstrap", "10")


def score_rows(n: int = 6, **changes) -> list[dict]:
    """Valid reward-model rows; ``changes`` apply to row 3."""
    rows = [{"item_id": f"q{i}", "model_x": "a", "model_y": "b", "score_x": 0.5 * i, "score_y": 1.0,
             "label": "x" if i % 2 else "y"} for i in range(n)]
    rows[3].update(changes)
    return rows


def _twice() -> bytes:
    rows = score_rows()
    rows.append({**rows[0], "model_y": "c", "score_x": 9.0})  # answer (q0, a) scored 0.0 and 9.0
    return jsonl(rows).encode()


SCORE_CASES: list[Case] = [
    Case("scores missing score", "scores.jsonl", b(jsonl(score_rows(score_y=None))), CAL, "score_y"),
    Case("scores non-numeric score", "scores.jsonl", b(jsonl(score_rows(score_x="high"))), CAL, "score_x"),
    Case("scores NaN score", "scores.jsonl", b(jsonl(score_rows(score_x=float("nan")))), CAL, "score_x"),
    Case("scores infinite score CSV", "scores.csv", b(csv_text(score_rows(score_y=float("inf")))), CAL, "score_y"),
    Case("scores answer scored twice", "scores.jsonl", _twice, CAL, "score_x"),
    Case("scores unknown label", "scores.jsonl", b(jsonl(score_rows(label="maybe"))), CAL, "label"),
    Case("scores unknown label_source", "scores.jsonl", b(jsonl(score_rows(label_source="vibes"))), CAL,
         "label_source"),
    Case("jury scores non-numeric", "scores.jsonl", b(jsonl(score_rows(score_x="high"))),
         ("judge", "jury", "{f}", "{f}", "--bootstrap", "10"), "score_x"),
    Case("drift scores NaN", "scores.jsonl", b(jsonl(score_rows(score_y=float("nan")))),
         ("judge", "drift", "{f}", "{f}", "--bootstrap", "10"), "score_y"),
]
