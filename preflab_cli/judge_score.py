"""``preflab judge score``: a reward model scores each pair's two answers (a thin shell over
:func:`judge.runner.scoring.score_pairs`); the rows are a scores file every verdict command reads."""

import json
from pathlib import Path
from typing import Annotated

import typer

from preflab.io import write_output
from preflab_cli.common import JUDGE_CACHE, CacheOpt, NoCacheOpt, RpmOpt, TimeoutOpt, TpmOpt, fail
from preflab_cli.judge_cmds import app


@app.command("score")
def score_cmd(
    pairs_path: Annotated[Path, typer.Argument(
        help="Pairs JSONL: item_id, prompt, model_x, answer_x, model_y, answer_y.")],
    reward_model: Annotated[str, typer.Option(
        "--reward-model", help="reward:URL#MODEL: a reward model served by `vllm serve MODEL --runner pooling` "
                               "(its /pooling endpoint).")],
    output: Annotated[Path, typer.Option(help="Scores JSONL (one row per pair; the scores cover both "
                                              "orders).")] = Path("scores.jsonl"),
    system: Annotated[str | None, typer.Option(help="A system message sent before each prompt.")] = None,
    concurrency: Annotated[int, typer.Option(help="Calls in flight.")] = 16,
    cache: CacheOpt = JUDGE_CACHE,
    no_cache: NoCacheOpt = False,
    rpm: RpmOpt = None,
    tpm: TpmOpt = None,
    timeout: TimeoutOpt = 60.0,
    progress: Annotated[bool, typer.Option("--progress/--quiet", help="Show a progress bar.")] = True,
    allow_failures: Annotated[int, typer.Option(help="Exit 0 even when up to N answers failed after retries "
                                                     "(default 0: any failure exits 1).")] = 0,
) -> None:
    """Score each pair's answers with a reward model: P(x wins) = σ(s_x − s_y) reads them as verdicts."""
    from judge import ScoreRunConfig, load_pairs, score_pairs
    from llm.calls.cache import CallCache
    from llm.providers.reward import RewardProvider, parse_reward_spec
    from preflab.errors import InputError

    try:
        pairs = load_pairs(pairs_path)
        url, model = parse_reward_spec(reward_model)
    except (InputError, ValueError, OSError) as e:
        fail(e)
    config = ScoreRunConfig(concurrency=concurrency, rpm=rpm, tpm=tpm, system=system, progress=progress)
    calls = None if no_cache else CallCache(cache)
    try:
        rows, stats = score_pairs(pairs, RewardProvider(model, url, timeout=timeout), config, calls)
    finally:
        if calls is not None:
            calls.close()
    write_output(output, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    typer.echo(f"{stats.summary()} -> {output}", err=str(output) == "-")
    if stats.failed > allow_failures:
        fail(f"{stats.failed} answers failed after retries (rows kept in {output} with their error; rerun to send "
             "only them: the rest is cached)" + ("" if not allow_failures else
                                                  f"; more than --allow-failures {allow_failures}"), status=1)
