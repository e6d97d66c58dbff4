"""The bad-input corpus: valid base files, and one hand-written case per reported problem.

Each case writes one bad file and runs one real CLI command on it. :func:`classify` sorts a result into
``clear`` (exit 2, names the file and field, no traceback), ``unclear`` (exit 2 without file or field),
``crash`` (an unexpected error or a traceback) or ``silent`` (exit 0: accepted).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"


def battle(i: int, **kw) -> dict:
    models = ["m0", "m1", "m2", "m3"]
    rec = {"model_a": models[i % 4], "model_b": models[(i + 1 + i // 4) % 4 if (i + 1 + i // 4) % 4 != i % 4
                                                       else (i + 2) % 4],
           "winner": ["model_a", "model_b", "tie"][i % 3], "tstamp": 1.7e9 + i,
           "sum_assistant_a_tokens": 100 + i, "sum_assistant_b_tokens": 120 + 2 * i,
           "header_count_a": i % 2, "header_count_b": 1, "list_count_a": 0, "list_count_b": i % 3,
           "bold_count_a": 0, "bold_count_b": 0}
    rec.update(kw)
    return rec


def battles(n: int = 40) -> list[dict]:
    return [battle(i) for i in range(n)]


def jsonl(records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def csv_text(records: list[dict]) -> str:
    import pandas as pd

    return pd.DataFrame(records).to_csv(index=False)


def annotations(model: str, n: int = 6, baseline: str = "base") -> list[dict]:
    return [{"instruction": f"q{i}", "output_1": "b" * (10 + i), "generator_1": baseline,
             "output_2": "m" * (5 + 3 * i + len(model)), "generator_2": model, "preference": 1.0 + (i % 3) / 2}
            for i in range(n)]


def lc_rows(n: int = 6) -> list[dict]:
    return [{"instruction": f"q{i}", "model": m, "baseline": "base", "output_length": 10 + 3 * i + k,
             "baseline_length": 20 + i, "preference": [0.2, 0.5, 0.8][(i + k) % 3]}
            for k, m in enumerate(["alpha", "beta"]) for i in range(n)]


def judgment(uid: int, model: str, scores=("A>B", "B>A"), **kw) -> dict:
    rec = {"uid": f"u{uid}", "model": model, "baseline": "base", "games": [{"score": s} for s in scores]}
    rec.update(kw)
    return rec


def judgments(n: int = 6) -> list[dict]:
    labels = ["A>B", "B>A", "A=B", "A>>B", "B>>A"]
    return [judgment(u, m, (labels[(u + k) % 5], labels[(u + 2 * k + 1) % 5]))
            for k, m in enumerate(["alpha", "beta"]) for u in range(n)]


def verdict_lines(n: int = 40) -> list[dict]:
    with open(DEMO / "verdicts-smollm2.jsonl", encoding="utf-8") as fh:
        return [json.loads(next(fh)) for _ in range(n)]


LATIN1 = "caf\xe9 \xfcber"


@dataclass(frozen=True)
class Case:
    """One bad input: its file name and bytes, the CLI arguments ({f} is the file, {d} the folder), the field
    the message must name (None: only the file), and which bullet of the issue it covers."""

    name: str
    filename: str
    content: Callable[[], bytes]
    argv: tuple[str, ...]
    field: str | None = None
    extra: Callable[[Path], None] | None = None  # writes companion files (valid inputs) into the folder


def b(text: str) -> Callable[[], bytes]:
    return lambda: text.encode("utf-8")


def latin1_jsonl(records) -> Callable[[], bytes]:
    def make() -> bytes:
        recs = [dict(r) for r in records]
        first = next(k for k, v in recs[1].items() if isinstance(v, str))
        recs[1][first] = LATIN1
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs).encode("latin-1")
    return make


def parquet_bytes() -> bytes:
    import pandas as pd

    buf = io.BytesIO()
    pd.DataFrame(battles(20)).to_parquet(buf, index=False)
    data = buf.getvalue()
    return data[: len(data) // 2] + data[-8:]  # cut out the middle: magic bytes intact, footer unreadable


def parquet_text_not_utf8() -> bytes:
    """Battles with answer text (no style totals: style control reads the text), one answer byte set to 0xFF."""
    import pandas as pd

    rows = [{k: v for k, v in battle(i).items() if k in ("model_a", "model_b", "winner")} for i in range(40)]
    for i, r in enumerate(rows):
        r.update(conversation_a=f"answer {i} **bold**", conversation_b=f"# answer {i}")
    rows[7]["conversation_a"] = "a broken answer"
    buf = io.BytesIO()
    pd.DataFrame(rows).to_parquet(buf, index=False, compression=None)
    data = bytearray(buf.getvalue())
    data[data.index(b"a broken answer") + 2] = 0xFF
    return bytes(data)


def write_alpaca(d: Path, name: str = "beta.json", baseline: str = "base") -> None:
    (d / name).write_text(json.dumps(annotations(name.split(".")[0], baseline=baseline)), encoding="utf-8")


def write_verdicts(d: Path) -> None:
    (d / "verdicts.jsonl").write_text(jsonl(verdict_lines()), encoding="utf-8")


INFO, RANK = ("info", "{f}"), ("rank", "{f}", "--bootstrap", "2")
RANK_SC = ("rank", "{f}", "--bootstrap", "2", "--style-control")
AH = ("arena-hard", "{f}", "--bootstrap", "2")
CAL = ("judge", "calibrate", "{f}", "--bootstrap", "10")
CAL_H = ("judge", "calibrate", "{d}/verdicts.jsonl", "--human", "{f}", "--bootstrap", "10")
LC = ("lc", "{f}", "{d}/beta.json", "--bootstrap", "2")
LC_T = ("lc", "--table", "{f}", "--bootstrap", "2")


def _array_of_numbers() -> bytes:
    return b"[1, 2, 3]\n"


def _verdicts_with(**changes) -> Callable[[], bytes]:
    def make() -> bytes:
        rows = verdict_lines()
        for key, value in changes.items():
            rows[3][key] = value
        return jsonl(rows).encode()
    return make


def _self_verdicts() -> bytes:
    rows = verdict_lines()
    for r in rows:
        r["model_y"] = r["model_x"]
    return jsonl(rows).encode()


def _lc_inf() -> bytes:
    rows = lc_rows()
    rows[2]["output_length"] = float("inf")
    return csv_text(rows).encode()


def _binary() -> bytes:
    return bytes(range(256)) * 8


CASES: list[Case] = [
    # --- tracebacks
    Case("empty CSV", "battles.csv", b(""), INFO),
    Case("empty CSV rank", "battles.csv", b(""), RANK),
    Case("latin-1 JSONL battles", "battles.jsonl", latin1_jsonl(battles()), INFO),
    Case("latin-1 CSV battles", "battles.csv", lambda: csv_text(battles()).replace("m1", LATIN1).encode("latin-1"),
         INFO),
    Case("binary garbage .jsonl", "battles.jsonl", _binary, INFO),
    Case("binary garbage .csv", "battles.csv", _binary, INFO),
    Case("binary garbage .json", "battles.json", _binary, INFO),
    Case("JSON array of numbers", "battles.json", _array_of_numbers, INFO),
    Case("JSONL line that is a number", "battles.jsonl", lambda: (jsonl(battles(5)) + "42\n").encode(), INFO),
    Case("dict as model name", "battles.jsonl", b(jsonl(battles(5) + [battle(5, model_a={"x": 1})])), INFO,
         "model_a"),
    Case("list as winner", "battles.jsonl", b(jsonl(battles(5) + [battle(5, winner=["tie"])])), INFO, "winner"),
    Case("corrupt Parquet", "battles.parquet", parquet_bytes, INFO),
    Case("not Parquet at all", "battles.parquet", b("model_a,model_b\n"), INFO),
    Case("Infinity length --style-control", "battles.jsonl",
         b(jsonl(battles()[:-1] + [battle(39, sum_assistant_a_tokens=float("inf"))])), RANK_SC,
         "sum_assistant_a_tokens"),
    Case("huge length --style-control", "battles.jsonl",
         b(jsonl(battles()[:-1] + [battle(39, sum_assistant_b_tokens=1e308)])), RANK_SC, "sum_assistant_b_tokens"),
    Case("string length --style-control", "battles.jsonl",
         b(jsonl(battles()[:-1] + [battle(39, header_count_a="many")])), RANK_SC, "header_count_a"),
    Case("Parquet answer text not UTF-8 --style-control", "battles.parquet", parquet_text_not_utf8, RANK_SC,
         "conversation_a"),
    Case("inf lengths lc --table", "lc.csv", _lc_inf, LC_T, "output_length"),
    Case("empty arena-hard file", "judgments.jsonl", b(""), AH),
    Case("all-null-scores arena-hard", "judgments.jsonl",
         b(jsonl([judgment(u, "alpha", (None, None)) for u in range(4)])), AH, "games"),
    Case("non-object line arena-hard", "judgments.jsonl", b(jsonl(judgments()) + "[1, 2]\n"), AH),
    Case("non-object line calibrate", "verdicts.jsonl", b(jsonl(verdict_lines()) + '"xy"\n'), CAL),
    Case("games as strings", "judgments.jsonl",
         b(jsonl(judgments()[:-1] + [{"uid": "u9", "model": "beta", "baseline": "base", "games": ["A>B", "B>A"]}])),
         AH, "games"),
    Case("game as a number", "judgments.jsonl",
         b(jsonl(judgments()[:-1] + [{"uid": "u9", "model": "beta", "baseline": "base", "games": [1, 2]}])),
         AH, "games"),
    Case("model as dict arena-hard", "judgments.jsonl", b(jsonl(judgments()[:-1] + [judgment(9, {"n": 1})])),
         AH, "model"),
    # --- accepted silently or wrong
    Case("empty battles file", "battles.jsonl", b(""), INFO),
    Case("blank-lines battles file", "battles.jsonl", b("\n\n  \n"), INFO),
    Case("empty JSON array", "battles.json", b("[]"), INFO),
    Case("header-only CSV", "battles.csv", b("model_a,model_b,winner\n"), INFO),
    Case("header-only CSV rank", "battles.csv", b("model_a,model_b,winner\n"), RANK),
    Case("NaN tstamp", "battles.jsonl", b(jsonl(battles(5)) + json.dumps(battle(5, tstamp=float("nan"))) + "\n"),
         INFO, "tstamp"),
    Case("Infinity tstamp", "battles.jsonl", b(jsonl(battles(5) + [battle(5, tstamp=float("inf"))])), INFO,
         "tstamp"),
    Case("-Infinity tstamp", "battles.jsonl", b(jsonl(battles(5) + [battle(5, tstamp=float("-inf"))])), INFO,
         "tstamp"),
    Case("inf tstamp CSV", "battles.csv", b(csv_text(battles(5) + [battle(5, tstamp="inf")])), INFO, "tstamp"),
    Case("model_x == model_y verdicts", "verdicts.jsonl", _self_verdicts, CAL, "model_y"),
    Case("p_a above 1", "verdicts.jsonl", _verdicts_with(p_a=1.7), CAL, "p_a"),
    Case("p_b negative", "verdicts.jsonl", _verdicts_with(p_b=-0.2), CAL, "p_b"),
    Case("p_tie NaN", "verdicts.jsonl", _verdicts_with(p_tie=float("nan")), CAL, "p_tie"),
    Case("p_a a string", "verdicts.jsonl", _verdicts_with(p_a="high"), CAL, "p_a"),
    Case("empty labels file", "labels.csv", b(""), CAL_H, extra=write_verdicts),
    Case("header-only labels file", "labels.csv", b("item_id,human\n"), CAL_H, extra=write_verdicts),
    # (a whole file of the baseline vs itself is AlpacaEval's published 50% row: read, not refused)
    Case("some rows judged against themselves lc", "alpha.json",
         b(json.dumps([{**r, "generator_1": "alpha"} if i == 1 else r for i, r in enumerate(annotations("alpha"))])),
         LC, "generator_1", extra=write_alpaca),
    # --- errors without file or line
    Case("latin-1 arena-hard", "judgments.jsonl", latin1_jsonl(judgments()), AH),
    Case("latin-1 calibrate", "verdicts.jsonl", latin1_jsonl(verdict_lines()), CAL),
    Case("latin-1 labels CSV", "labels.csv", lambda: f"item_id,human\ndemo-001,A\n{LATIN1},B\n".encode("latin-1"),
         CAL_H, extra=write_verdicts),
    Case("labels CSV given as verdicts", "labels.csv", b("item_id,human\ndemo-001,A\n"), CAL, "verdict_ab"),
    Case("truncated JSONL lc --table", "lc.jsonl", lambda: jsonl(lc_rows()).encode()[:-25], LC_T),
    Case("latin-1 lc annotations", "alpha.json",
         lambda: json.dumps(annotations("alpha"), ensure_ascii=False).replace("q1", LATIN1).encode("latin-1"),
         LC, extra=write_alpaca),
    Case("truncated lc annotations", "alpha.json", lambda: json.dumps(annotations("alpha")).encode()[:-30], LC,
         extra=write_alpaca),
    Case("lc annotations not a list", "alpha.json", b('{"instruction": "q"}'), LC, extra=write_alpaca),
    Case("lc annotations list of numbers", "alpha.json", b("[1, 2]"), LC, extra=write_alpaca),
    Case("lc preference a string", "alpha.json",
         b(json.dumps(annotations("alpha")[:-1] + [dict(annotations("alpha")[-1], preference="x")])), LC,
         "preference", extra=write_alpaca),
    Case("lc table empty CSV", "lc.csv", b(""), LC_T),
    Case("lc table header-only CSV", "lc.csv", b(",".join(lc_rows()[0]) + "\n"), LC_T),
    Case("lc table binary", "lc.parquet", _binary, LC_T),
    Case("lc table NaN preference", "lc.jsonl",
         b(jsonl(lc_rows()[:-1] + [dict(lc_rows()[-1], preference=float("nan"))])), LC_T, "preference"),
    Case("calibrate binary", "verdicts.jsonl", _binary, CAL),
    Case("calibrate empty verdicts", "verdicts.jsonl", b(""), CAL),
    Case("calibrate verdict not a string", "verdicts.jsonl", _verdicts_with(verdict=["A"]), CAL, "verdict"),
    Case("judge run latin-1 pairs", "pairs.jsonl", latin1_jsonl(
        [{"item_id": str(i), "prompt": "p", "model_x": "a", "answer_x": "x", "model_y": "b", "answer_y": "y"}
         for i in range(3)]), ("judge", "run", "{f}", "--judge", "local:http://127.0.0.1:9#m", "--no-cache",
                               "--quiet", "--output", "{d}/out.jsonl")),
    Case("judge run rubric latin-1", "rubric.toml", lambda: f'name = "{LATIN1}"\n'.encode("latin-1"),
         ("judge", "run", str(DEMO / "pairs.jsonl"), "--judge", "local:http://127.0.0.1:9#m", "--rubric", "{f}",
          "--no-cache", "--quiet", "--output", "{d}/out.jsonl")),
    Case("convert binary", "battles.jsonl", _binary, ("convert", "{f}", "{d}/out.csv")),
    # --- messages in the command line's words (issue 37)
    Case("Model_A column", "battles.csv", b("Model_A,model_b,winner\nx,y,model_a\n"), INFO, "model_a"),
    Case("draw and A winner labels", "battles.csv", b("model_a,model_b,winner\nx,y,draw\nx,y,A\n"), INFO, "winner"),
    Case("exclude a model not in the data", "battles.jsonl", b(jsonl(battles())),
         (*RANK, "--filter", "exclude=m9")),
]


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_case(case: Case, folder: Path) -> Result:
    """Write the case's files into ``folder`` and run its command through :func:`preflab_cli.main`."""
    from preflab_cli import main

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / case.filename
    if case.extra:
        case.extra(folder)
    path.write_bytes(case.content())
    argv = [a.format(f=path, d=folder) for a in case.argv]
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException as e:  # noqa: BLE001  (a crash is a result here)
            import traceback

            err.write("Traceback (most recent call last):\n" + "".join(traceback.format_exception(e)))
            code = 1
    return Result(code, out.getvalue(), err.getvalue())


def classify(case: Case, res: Result) -> str:
    """``clear`` / ``unclear`` / ``crash`` / ``silent`` (see the module docstring)."""
    if res.code == 0:
        return "silent"
    if res.code != 2 or "Traceback" in res.err + res.out:
        return "crash"
    text = " ".join(res.err.split())
    if case.filename not in text or (case.field is not None and case.field not in text):
        return "unclear"
    return "clear"


if __name__ == "__main__":  # python -m tests.preflab_cli.bad_cases: the corpus's counts on this checkout
    import collections
    import sys
    import tempfile

    tally: collections.Counter = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(CASES):
            res = run_case(case, Path(tmp) / f"c{i}")
            kind = classify(case, res)
            tally[kind] += 1
            last = (res.err.strip().splitlines() or [""])[-1]
            print(f"{kind:8} {res.code} {case.name}: {last[:150]}", file=sys.__stdout__, flush=True)
    print(dict(tally), f"of {len(CASES)}", file=sys.__stdout__)
