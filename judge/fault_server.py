"""A loopback OpenAI-compatible HTTP server that injects faults, for tests, benchmarks and dry runs.

Serves ``/v1/chat/completions``, ``/v1/completions`` and Anthropic's ``/v1/messages`` with deterministic
answers (the label probabilities are a hash of the prompt) after ``delay`` seconds, and at set rates
answers 429 with ``Retry-After``, 500, a response slower than any sane timeout, a dropped connection, or
malformed JSON. It records every request by prompt hash so tests can count calls exactly.
Run ``python -m judge.fault_server --port 0 --delay 0.05`` for a standalone server (prints its URL).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import threading
from collections import Counter
from dataclasses import dataclass, field

from judge.cache import prompt_hash


@dataclass
class Faults:
    """Per-request fault probabilities, and timings in seconds."""

    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_slow: float = 0.0
    rate_drop: float = 0.0
    rate_malformed: float = 0.0
    delay: float = 0.0
    slow_delay: float = 5.0
    retry_after: str = "0"
    seed: int = 0


def request_key(body: dict) -> str:
    """The prompt hash a request is counted under: for chat requests, the runner's cache ``prompt_hash``."""
    return prompt_hash(body.get("messages") or [], body.get("prompt"))


def canned_logprobs(key: str) -> list[dict]:
    """Deterministic top logprobs for labels A, B, C and a distractor, from the prompt hash."""
    h = int(key[:8], 16)
    w = [1 + h % 7, 1 + (h >> 3) % 5, 0.3 + (h >> 6) % 2, 0.2]
    z = sum(w)
    tops = sorted(((t, math.log(x / z)) for t, x in zip(["A", "B", "C", "The"], w, strict=True)), key=lambda t: -t[1])
    return [{"token": tops[0][0], "logprob": tops[0][1],
             "top_logprobs": [{"token": t, "logprob": lp} for t, lp in tops]}]


@dataclass
class FaultServer:
    """Start with ``with FaultServer(Faults(...)) as srv:``; ``srv.url`` is the ``/v1`` base URL."""

    faults: Faults = field(default_factory=Faults)
    host: str = "127.0.0.1"
    port: int = 0
    requests: Counter = field(default_factory=Counter)  # prompt key -> requests received
    answered: Counter = field(default_factory=Counter)  # prompt key -> 200 answers sent
    outcomes: Counter = field(default_factory=Counter)  # fault kind -> count

    def __post_init__(self) -> None:
        self._rng = random.Random(self.faults.seed)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """Base URL ending in ``/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    def _pick_fault(self) -> str:
        f, u = self.faults, self._rng.random()
        for kind, rate in (("429", f.rate_429), ("500", f.rate_500), ("slow", f.rate_slow),
                           ("drop", f.rate_drop), ("malformed", f.rate_malformed)):
            if u < rate:
                return kind
            u -= rate
        return "ok"

    def _answer(self, path: str, body: dict, key: str) -> dict:
        lps = canned_logprobs(key)
        usage = {"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101}
        if path.endswith("/messages"):
            return {"id": "msg_" + key, "type": "message", "role": "assistant", "model": body.get("model", "m"),
                    "content": [{"type": "text", "text": lps[0]["token"]}], "stop_reason": "end_turn",
                    "stop_sequence": None, "usage": {"input_tokens": 100, "output_tokens": 1}}
        if path.endswith("/chat/completions"):
            choice = {"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": lps[0]["token"]},
                      "logprobs": {"content": lps} if body.get("logprobs") else None}
            obj = "chat.completion"
        else:
            top = {t["token"]: t["logprob"] for t in lps[0]["top_logprobs"]}
            choice = {"index": 0, "finish_reason": "length", "text": lps[0]["token"],
                      "logprobs": {"tokens": [lps[0]["token"]], "token_logprobs": [lps[0]["logprob"]],
                                   "top_logprobs": [top], "text_offset": [0]} if body.get("logprobs") else None}
            obj = "text_completion"
        return {"id": "cmpl-" + key, "object": obj, "created": 0, "model": body.get("model", "m"),
                "choices": [choice], "usage": usage}

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
                body = json.loads(await reader.readexactly(int(headers.get("content-length", 0))) or b"{}")
                key = request_key(body)
                with self._lock:
                    self.requests[key] += 1
                    fault = self._pick_fault()
                    self.outcomes[fault] += 1
                if self.faults.delay:
                    await asyncio.sleep(self.faults.delay)
                if fault == "drop":
                    writer.close()
                    return
                if fault == "slow":
                    await asyncio.sleep(self.faults.slow_delay)
                status, extra, payload = 200, {}, b""
                if fault == "429":
                    status, extra = 429, {"Retry-After": self.faults.retry_after}
                    payload = b'{"error": {"message": "rate limited", "type": "rate_limit"}}'
                elif fault == "500":
                    status, payload = 500, b'{"error": {"message": "server error"}}'
                elif fault == "malformed":
                    payload = b'{"id": "x", "choices": [{"message": '
                else:
                    payload = json.dumps(self._answer(path, body, key)).encode()
                hdr = "".join(f"{k}: {v}\r\n" for k, v in extra.items())
                writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: "
                             f"{len(payload)}\r\n{hdr}\r\n".encode() + payload)
                await writer.drain()
                if status == 200 and fault == "ok":
                    with self._lock:
                        self.answered[key] += 1
        except (asyncio.IncompleteReadError, asyncio.CancelledError, ConnectionError, IndexError, ValueError):
            pass
        finally:
            writer.close()

    async def serve(self) -> None:
        """Serve until :meth:`__exit__` asks to stop, then finish the open connections' handlers."""
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, self.host, self.port, backlog=1024)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
        handlers = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in handlers:
            t.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)

    def __enter__(self) -> FaultServer:
        def run() -> None:
            self._loop = asyncio.new_event_loop()
            try:
                self._loop.run_until_complete(self.serve())
            finally:
                self._loop.close()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


def main() -> None:
    """Standalone server for benchmarks: prints ``URL <base>`` once listening."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--delay", type=float, default=0.0)
    args = ap.parse_args()
    srv = FaultServer(Faults(delay=args.delay), port=args.port)

    async def announce() -> None:
        task = asyncio.create_task(srv.serve())
        await asyncio.to_thread(srv._ready.wait)
        print(f"URL {srv.url}", flush=True)
        await task

    asyncio.run(announce())


if __name__ == "__main__":
    main()
