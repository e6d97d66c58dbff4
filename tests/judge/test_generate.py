"""`preflab generate`: answers from the judge's providers with its cache, retries and failure rules, through
the real SDKs against the paid-API contract fake, and through a real llama.cpp server."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from answering.generate import GenerateConfig, run_generate
from answering.model_specs import ModelSpec, load_prompts, load_roster, parse_model_spec
from judge.verdicts.pairs import load_pairs
from llm.providers.generation import finish_reason
from preflab_cli import main
from tests.judge.api_fakes import ApiFake, answer_words

KEYS = {"OPENAI_API_KEY": "sk-proj-Gen9Zq8Yw7Xv6Uu5Tt4Ss", "ANTHROPIC_API_KEY": "sk-ant-api03-GenAbCdEfGhIjKl",
        "PREFLAB_LOCAL_API_KEY": "sk-local-Gen4f9a2b7c1d0e8f"}


@pytest.fixture
def keys(monkeypatch):
    for k, v in KEYS.items():
        monkeypatch.setenv(k, v)


def write_prompts(path: Path, n: int) -> Path:
    with path.open("w") as fh:
        for i in range(n):
            fh.write(json.dumps({"item_id": f"p{i}", "prompt": f"Question number {i}?", "category": "misc"}) + "\n")
    return path


def cli(*args: str) -> list[str]:
    return [sys.executable, "-c", "from preflab_cli import main; main()", "generate", *args]


def test_model_spec_names_settings_and_defaults():
    s = parse_model_spec("local:http://127.0.0.1:8080/v1#smollm2")
    assert (s.name, s.spec, s.system, s.temperature, s.max_tokens) == (
        "smollm2", "local:http://127.0.0.1:8080/v1#smollm2", None, None, 512)
    p = parse_model_spec("local:http://127.0.0.1:8080/v1#smollm2;name=pirate;system=Talk like a pirate.;"
                         "temperature=0.7;max_tokens=64;seed=3")
    assert (p.name, p.system, p.temperature, p.max_tokens, p.seed) == ("pirate", "Talk like a pirate.", 0.7, 64, 3)
    req = p.request([{"role": "user", "content": "hi"}])
    assert req.messages[0] == {"role": "system", "content": "Talk like a pirate."}
    assert req.settings() == {"max_tokens": 64, "temperature": 0.7, "top_p": None, "seed": 3}
    assert parse_model_spec("openai:gpt-4.1-mini").name == "gpt-4.1-mini"
    assert [finish_reason(r) for r in ("end_turn", "max_tokens", "length", None, "stop")] == [
        "stop", "length", "length", "unknown", "stop"]


def test_roster_file(tmp_path):
    roster = tmp_path / "roster.toml"
    roster.write_text('[[model]]\nname = "a"\nspec = "openai:gpt-4.1-mini"\ntemperature = 0.5\n\n'
                      '[[model]]\nspec = "local:http://h:1/v1#smol"\nsystem = "Be brief; very brief."\nweight = 2\n')
    a, b = load_roster(roster)
    assert (a.name, a.temperature, b.name, b.system, b.weight) == ("a", 0.5, "smol", "Be brief; very brief.", 2.0)


@pytest.mark.parametrize(("setup", "args", "where"), [
    ("prompts", ["--model", "local:http://h:1/v1#m"], "prompts.jsonl, line 2: field 'prompt': empty"),
    ("missing", ["--model", "local:http://h:1/v1#m"], "prompts.jsonl, line 2: field 'prompt': missing"),
    ("dup", ["--model", "local:http://h:1/v1#m"], "prompts.jsonl, line 2: field 'item_id': duplicate"),
    ("csv", ["--model", "local:http://h:1/v1#m"], "prompts.csv, line 3: field 'prompt': empty"),
    ("good", ["--model", "local:nourl#m"], "--model: field 'spec'"),
    ("good", ["--model", "local:http://h:1/v1#m;temprature=1"], "--model: field 'temprature': unknown setting"),
    ("good", ["--model", "local:http://h:1/v1#m;max_tokens=many"], "field 'max_tokens': 'many' is not a number"),
    ("good", ["--model", "anthropic:claude-haiku-4-5;temperature=0.2"], "field 'temperature': the Anthropic API"),
    ("good", ["--model", "local+completions:http://h:1/v1#m"], "--model: field 'spec': answers are generated on "
                                                              "/chat/completions"),
    ("good", ["--model", "local:http://h:1/v1#m", "--model", "local:http://h:2/v1#m"], "two models are named 'm'"),
    ("roster", ["--roster", "roster.toml"], "roster.toml, line 4: field 'colour': unknown setting"),
])
def test_bad_input_exits_2_naming_file_line_and_field(tmp_path, capsys, monkeypatch, setup, args, where):
    monkeypatch.chdir(tmp_path)
    name = "prompts.csv" if setup == "csv" else "prompts.jsonl"
    Path(name).write_text({
        "prompts": '{"item_id": "a", "prompt": "hi"}\n{"item_id": "b", "prompt": " "}\n',
        "missing": '{"item_id": "a", "prompt": "hi"}\n{"item_id": "b"}\n',
        "dup": '{"item_id": "a", "prompt": "hi"}\n{"item_id": "a", "prompt": "ho"}\n',
        "csv": "item_id,prompt\na,hi\nb,\n",
    }.get(setup, '{"item_id": "a", "prompt": "hi"}\n'))
    Path("roster.toml").write_text('[[model]]\nspec = "local:http://h:1/v1#m"\n\n[[model]]\nspec = "local:http://h:1/v1#n"\n'
                                   'colour = "red"\n')
    with pytest.raises(SystemExit) as e:
        main(["generate", name, "--output", "out.jsonl", "--no-cache", *args])
    assert e.value.code == 2
    out = capsys.readouterr().err
    assert where in out and "Traceback" not in out, out
    assert not Path("out.jsonl").exists()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_paid_apis_through_the_sdks_with_429s_500s_and_truncation(provider, keys, tmp_path):
    n = 30
    prompts = load_prompts(write_prompts(tmp_path / "p.jsonl", n))
    with ApiFake(rate_429=0.15, rate_500=0.1, echo_key=True, seed=5) as srv:
        base = (f"openai:{srv.url}#gpt-4.1-mini" if provider == "openai"
                else f"anthropic:{srv.root}#claude-haiku-4-5")
        models = [ModelSpec("short", base, max_tokens=12),
                  ModelSpec("long", base, system="Be thorough.", max_tokens=64)]
        config = GenerateConfig(concurrency=8, backoff_base=0.001, max_attempts=12)
        result = run_generate(prompts, models, config, cache=tmp_path / "c.sqlite")
        requests, outcomes, rejected = sum(srv.requests.values()), dict(srv.outcomes), list(srv.rejected)
    df = result.answers
    assert rejected == [] and outcomes.get("429", 0) > 0 and outcomes.get("500", 0) > 0
    assert len(df) == 2 * n and result.failures.empty
    assert requests == 2 * n + result.stats.retries and result.stats.calls == 2 * n
    for row in df.itertuples():  # the answer the API would give, cut where the API cuts it
        system = "Be thorough." if row.model == "long" else None
        full = answer_words([{"role": "user", "content": row.prompt}], system)
        limit = 12 if row.model == "short" else 64
        assert row.answer == " ".join(full[:limit]) and row.tokens_out == min(len(full), limit)
        assert row.finish_reason == ("length" if len(full) > limit else "stop") and row.truncated == (len(full) > limit)
    truncated = df.groupby("model")["truncated"].sum().to_dict()
    assert truncated["short"] > 0 and dict(result.stats.truncated) == {m: k for m, k in truncated.items() if k}
    assert f"{sum(truncated.values())} of {2 * n} answers truncated" in result.truncation_note()
    assert df["cost"].notna().all() and result.stats.cost > 0  # known list prices
    settings = json.loads(df.loc[df["model"] == "long", "settings"].iat[0])
    assert settings["system"] == "Be thorough." and settings["max_tokens"] == 64
    blob = (tmp_path / "c.sqlite").read_bytes() + df.to_json().encode()
    assert not any(v.encode() in blob for v in KEYS.values())


def test_failures_exit_1_keep_keys_out_and_a_rerun_retries_only_them(keys, tmp_path, capsys):
    prompts = write_prompts(tmp_path / "p.jsonl", 12)
    out, cache = tmp_path / "items.jsonl", tmp_path / "c.sqlite"
    with ApiFake(rate_500=0.5, echo_key=True, seed=2) as srv:
        args = ["generate", str(prompts), "--model", f"openai:{srv.url}#gpt-4.1-mini;max_tokens=16", "--output",
                str(out), "--cache", str(cache), "--max-attempts", "1", "--quiet"]
        with pytest.raises(SystemExit) as e:
            main(args)
        first = capsys.readouterr()
        failed_first = srv.outcomes["500"]
        answered_first = dict(srv.answered)
        assert e.value.code == 1 and failed_first > 0
        assert f"{failed_first} of 12 answers failed after retries" in first.err
        assert not any(v in first.err + first.out + out.read_text() for v in KEYS.values())
        srv.rate_500 = 0.0
        with pytest.raises(SystemExit) as e:
            main(args)
        assert e.value.code == 0
        second = capsys.readouterr()
        assert sum(srv.answered.values()) == 12  # every answer generated once over both runs
        assert all(srv.answered[k] == 1 for k in srv.answered) and set(answered_first) < set(srv.answered)
    assert f"{failed_first} generated, {12 - failed_first} cached" in second.out
    assert len(pd.read_json(out, lines=True)) == 12


def test_sigkill_then_resume_generates_nothing_twice(keys, tmp_path):
    n, concurrency = 300, 8
    prompts, cache, out = write_prompts(tmp_path / "p.jsonl", n), tmp_path / "c.sqlite", tmp_path / "items.jsonl"
    with ApiFake(delay=0.01) as srv:
        args = cli(str(prompts), "--model", f"local:{srv.url}#fake;max_tokens=8", "--cache", str(cache),
                   "--output", str(out), "--quiet", "--concurrency", str(concurrency))
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while sum(srv.answered.values()) < 100 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        assert proc.poll() is None, proc.communicate()[0].decode()[-2000:]
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()
        with sqlite3.connect(cache) as db:
            kept = {r[0] for r in db.execute("SELECT item_id FROM generations")}
        before = dict(srv.answered)
        done = subprocess.run(args, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr[-2000:]
        after = dict(srv.answered)
    regenerated = {k for k in kept
                   if after.get(f"Question number {k[1:]}?", 0) > before.get(f"Question number {k[1:]}?", 0)}
    assert 100 - concurrency <= len(kept) < n and regenerated == set()  # nothing in the cache was generated again
    assert sum(after.values()) - sum(before.values()) == n - len(kept)
    assert f"{n - len(kept)} generated, {len(kept)} cached" in done.stdout
    assert len(pd.read_json(out, lines=True)) == n


@pytest.mark.llama
def test_llama_two_system_prompts_import_and_judge(llama_url, tmp_path):
    prompts = tmp_path / "prompts.csv"
    prompts.write_text("item_id,prompt,category\nq1,What is the capital of France?,geo\nq2,Name a colour.,art\n"
                       "q3,Write a long story about a dragon.,story\n")
    spec = f"local:{llama_url}#smollm2"
    items, pairs, cache = tmp_path / "items.parquet", tmp_path / "pairs.jsonl", tmp_path / "c.sqlite"
    args = cli(str(prompts), "--model", f"{spec};temperature=0;max_tokens=24",
               "--model", f"{spec};name=pirate;system=You are a pirate. Answer in pirate speak, matey.;"
                          "temperature=0;max_tokens=24", "--output", str(items), "--pairs", str(pairs),
               "--cache", str(cache), "--quiet")
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    df = pd.read_parquet(items)
    assert sorted(df["model"].unique()) == ["pirate", "smollm2"] and len(df) == 6
    assert df["answer"].notna().all() and (df["tokens_out"] <= 24).all()  # what SmolLM2 writes is not checked
    assert (df["cost"] == 0).all() and df["latency"].gt(0).all()
    n_trunc = int(df["truncated"].sum())  # how many the model ran past 24 tokens is its business, the count ours
    assert n_trunc == int((df["finish_reason"] == "length").sum())
    assert not n_trunc or f"{n_trunc} of 6 answers truncated" in done.stderr
    assert len(load_pairs(pairs)) == 3
    rerun = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert "0 generated, 6 cached" in rerun.stdout
    pd.testing.assert_frame_equal(pd.read_parquet(items).drop(columns="cached"), df.drop(columns="cached"))
    db = f"sqlite:///{tmp_path / 'store.db'}"
    imported = subprocess.run([sys.executable, "-c", "from preflab_cli import main; main()", "import", str(items),
                               "--dataset", "gen", "--db", db], capture_output=True, text=True, timeout=120)
    assert imported.returncode == 0 and "3 items (6 answers from 2 models)" in imported.stdout, imported.stderr
    judged = subprocess.run([sys.executable, "-c", "from preflab_cli import main; main()", "judge", "run",
                             str(pairs), "--judge", spec, "--output", str(tmp_path / "v.jsonl"), "--no-cache",
                             "--quiet"], capture_output=True, text=True, timeout=300)
    assert judged.returncode == 0, judged.stderr
    assert len(pd.read_json(tmp_path / "v.jsonl", lines=True)) == 6


@pytest.mark.parametrize(("spec", "cls"), [("openai:gpt-4.1-mini", "OpenAIProvider"),
                                         ("anthropic:claude-haiku-4-5", "AnthropicProvider"),
                                         ("local:http://127.0.0.1:9/v1#m", "CompatibleProvider")])
def test_one_provider_class_per_api_judges_and_answers(spec, cls, keys):
    """The one factory builds one class per API, and that object judges (``complete``) and answers
    (``generate``, ``stream``) alike (no second class, no second factory)."""
    import asyncio

    from llm import providers

    prov = providers.make_provider(spec)
    try:
        assert type(prov).__name__ == cls
        assert all(callable(getattr(prov, m)) for m in ("complete", "generate", "stream"))
        assert not hasattr(providers, "make_generator")
    finally:
        asyncio.run(prov.aclose())


@pytest.mark.parametrize("provider", ["openai", "anthropic", "local"])
def test_streaming_through_the_sdks_gives_pieces_then_the_whole_answer(provider, keys):
    import asyncio

    from llm.providers import make_provider

    with ApiFake() as srv:
        spec = {"openai": f"openai:{srv.url}#gpt-4.1-mini", "anthropic": f"anthropic:{srv.root}#claude-haiku-4-5",
                "local": f"local:{srv.url}#m"}[provider]
        req = ModelSpec("m", spec, system="Be brief.", max_tokens=6).request([{"role": "user", "content": "hi"}])

        async def go() -> list:
            gen = make_provider(spec)
            try:
                return [ev async for ev in gen.stream(req)]
            finally:
                await gen.aclose()

        events = asyncio.run(go())
        assert srv.rejected == []
    *pieces, final = events
    full = answer_words([{"role": "user", "content": "hi"}], "Be brief.")
    assert "".join(pieces) == final.text == " ".join(full[:6]) and len(pieces) == min(6, len(full))
    assert final.finish_reason == ("length" if len(full) > 6 else "stop") and final.tokens_out == min(6, len(full))
    assert final.first_token_s is not None and final.first_token_s <= final.latency


def test_parquet_prompts_to_a_csv_items_file_that_import_reads(keys, tmp_path, capsys):
    from voting.items import load_items

    pd.DataFrame({"item_id": ["a", "b"], "prompt": ["First?", "Second?"], "category": ["x", None]}).to_parquet(
        tmp_path / "p.parquet")
    out = tmp_path / "items.csv"
    with ApiFake() as srv:
        with pytest.raises(SystemExit) as e:
            main(["generate", str(tmp_path / "p.parquet"), "--model", f"local:{srv.url}#m1;max_tokens=50",
                  "--model", f"local:{srv.url}#m1;name=m2;system=Be odd.;max_tokens=50", "--output", str(out),
                  "--no-cache", "--quiet"])
    assert e.value.code == 0, capsys.readouterr().err
    items = load_items(out)
    assert items.models == ["m1", "m2"] and items.n_items == 2
    assert items.items.set_index("item_id")["category"].to_dict()["a"] == "x"
