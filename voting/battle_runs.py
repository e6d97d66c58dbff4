"""A battle turn's two answers generated outside the page's script run: a thread per turn streams both
sides and stores the finished turn, while any number of script runs (the page is rerun by every click or
key, which stops the running one) show its progress. A click during streaming therefore loses nothing: the
next run picks the same turn up where it is.

All runs of a process share one event loop in one thread, and one generator per roster model, so a turn
starts its two requests at once on open connections (building a generator loads TLS certificates: about
20 ms a side). Runs live in this process only; a battle left ``answering`` with no run here (the process
restarted) is abandoned by the page.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine

from answering.model_specs import ModelSpec
from llm.providers import make_provider
from voting.arena_guard import ArenaSettings, settle_turn
from voting.battles import save_turn, stream_pair

log = logging.getLogger("preflab.app")  # the server's log: the admin's, never the voter's
_runs: dict[str, TurnRun] = {}
_runs_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_generators: dict[tuple[str, float], object] = {}  # (spec, timeout) -> generator, used on _loop only


def _battle_loop() -> asyncio.AbstractEventLoop:
    """The process's battle event loop, started on first use in a daemon thread."""
    global _loop
    with _runs_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="battle-loop", daemon=True).start()
        return _loop


def _generator(spec: ModelSpec) -> object:
    key = (spec.spec, spec.timeout)
    if key not in _generators:
        _generators[key] = make_provider(spec.spec, timeout=spec.timeout)
    return _generators[key]


@dataclass
class TurnRun:
    """One turn being answered: the prompt, each side's text so far, and whether it finished (then ``ok``
    says whether both answers arrived and were stored)."""

    battle_id: str
    prompt: str
    texts: dict[str, str] = field(default_factory=lambda: {"a": "", "b": ""})
    version: int = 0  # bumped on every new piece of text
    done: bool = False
    ok: bool = False
    changed: threading.Condition = field(default_factory=threading.Condition)

    def wait(self, seen: int, timeout: float) -> tuple[int, dict[str, str], bool]:
        """Block until there is text newer than version ``seen`` (or the turn finished, or ``timeout``);
        returns (version, texts, done)."""
        with self.changed:
            self.changed.wait_for(lambda: self.version != seen or self.done, timeout)
            return self.version, dict(self.texts), self.done

    def _update(self, side: str, text: str) -> None:
        with self.changed:
            self.texts[side] = text
            self.version += 1
            self.changed.notify_all()


def live_run(battle_id: str) -> TurnRun | None:
    """The run answering this battle in this process, if any."""
    with _runs_lock:
        return _runs.get(battle_id)


def start_run(engine: Engine, battle: dict, specs: dict[str, ModelSpec], prompt: str,
              settings: ArenaSettings, identity: tuple[str, ...] = ()) -> TurnRun:
    """Answer ``prompt`` (the next turn of ``battle``, claimed by :func:`voting.arena_guard.claim_turn`) on
    the battle loop, which stores the turn when both sides finished (:func:`voting.battles.save_turn`, the
    answers matched against the ``identity`` words) and settles its cost (:func:`settle_turn`)."""
    run = TurnRun(battle["id"], prompt)
    convs = {"a": battle["conversation_a"] + [{"role": "user", "content": prompt}],
             "b": battle["conversation_b"] + [{"role": "user", "content": prompt}]}
    asked = {side: list(conv) for side, conv in convs.items()}

    async def answer() -> None:
        try:
            gens = {side: _generator(spec) for side, spec in specs.items()}
            results = await stream_pair(specs, convs, settings.limits, run._update, gens)
            for side, res in results.items():
                final = getattr(res, "text", run.texts[side])
                convs[side].append({"role": "assistant", "content": final})
            run.ok = await asyncio.to_thread(save_turn, engine, battle["id"], convs["a"], convs["b"], results,
                                             identity)
            if not run.ok:
                log.warning("battle %s failed: %s", battle["id"], failure_text(specs, results))
            await asyncio.to_thread(settle_turn, engine, battle["id"], battle["turns"] + 1, specs, asked, results,
                                    settings)
        finally:
            with _runs_lock:
                _runs.pop(battle["id"], None)
            with run.changed:
                run.done = True
                run.changed.notify_all()

    with _runs_lock:
        _runs[battle["id"]] = run
    asyncio.run_coroutine_threadsafe(answer(), _battle_loop())
    return run


def failure_text(specs: dict[str, ModelSpec], results: dict[str, object]) -> str:
    """Which side failed, its model and why (for the server log and the admin; keys redacted), e.g.
    ``B (fast-trese): http: HTTP 404: model 'fast-trese' not found``."""
    from llm.providers.base import ProviderError
    from preflab.redact import redact

    parts = [f"{side.upper()} ({specs[side].name}): "
             f"{res.kind if isinstance(res, ProviderError) else type(res).__name__}: {str(res)[:300]}"
             for side, res in results.items() if isinstance(res, Exception)]
    return redact("; ".join(parts))


async def _probe(spec: ModelSpec) -> str | None:
    """None when ``spec`` answers a one-token request within its timeout, else why not (keys redacted)."""
    from llm.providers.base import ProviderError
    from preflab.redact import redact

    request = spec.request([{"role": "user", "content": "Reply with OK."}])
    request = type(request)(request.messages, 1, request.temperature, request.top_p, request.seed)
    gen = None
    try:  # a missing API key is raised when the provider is made: that model does not answer either
        gen = make_provider(spec.spec, timeout=spec.timeout)
        async with asyncio.timeout(spec.timeout):
            await gen.generate(request)
        return None
    except (ProviderError, TimeoutError, OSError) as e:
        kind = e.kind if isinstance(e, ProviderError) else type(e).__name__
        return redact(f"{kind}: {str(e)[:300]}")
    finally:
        if gen is not None:
            await gen.aclose()


def check_roster(roster: Sequence[ModelSpec]) -> dict[str, str]:
    """Ask every roster model for one token, all at once: {model name: why it did not answer} for those that
    did not (empty when all answered). ``preflab app --arena`` runs it before serving."""

    async def every() -> list[str | None]:
        return await asyncio.gather(*(_probe(spec) for spec in roster))

    return {spec.name: why for spec, why in zip(roster, asyncio.run(every()), strict=True) if why}
