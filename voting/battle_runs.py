"""A battle turn's two answers generated outside the page's script run: a thread per turn streams both
sides and stores the finished turn, while any number of script runs (the page is rerun by every click or
key, which stops the running one) show its progress. A click during streaming therefore loses nothing: the
next run picks the same turn up where it is.

Runs live in this process only; a battle left ``answering`` with no run here (the process restarted) is
abandoned by the page.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine

from judge.model_specs import ModelSpec
from voting.battles import ArenaLimits, save_turn, stream_pair

_runs: dict[str, TurnRun] = {}
_runs_lock = threading.Lock()


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
              limits: ArenaLimits) -> TurnRun:
    """Answer ``prompt`` (the next turn of ``battle``, already ``answering``) in a background thread that
    stores the turn when both sides finished (:func:`voting.battles.save_turn`)."""
    run = TurnRun(battle["id"], prompt)
    convs = {"a": battle["conversation_a"] + [{"role": "user", "content": prompt}],
             "b": battle["conversation_b"] + [{"role": "user", "content": prompt}]}

    def answer() -> None:
        try:
            results = asyncio.run(stream_pair(specs, convs, limits, run._update))
            for side, res in results.items():
                final = getattr(res, "text", run.texts[side])
                convs[side].append({"role": "assistant", "content": final})
            run.ok = save_turn(engine, battle["id"], convs["a"], convs["b"], results)
        finally:
            with _runs_lock:
                _runs.pop(battle["id"], None)
            with run.changed:
                run.done = True
                run.changed.notify_all()

    with _runs_lock:
        _runs[battle["id"]] = run
    threading.Thread(target=answer, name=f"battle-{battle['id'][:8]}", daemon=True).start()
    return run
