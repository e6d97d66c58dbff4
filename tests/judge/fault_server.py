"""A loopback OpenAI-compatible HTTP server that injects faults, for tests, benchmarks and dry runs.

Serves ``/v1/chat/completions``, ``/v1/completions``, Anthropic's ``/v1/messages`` and vLLM's ``/pooling`` (a
reward model, :mod:`tests.judge.fake_vllm_pooling`) with deterministic
answers (the label probabilities are a hash of the prompt) after ``delay`` seconds, and at set rates
answers 429 with ``Retry-After``, 500, a response slower than any sane timeout, a dropped connection, or
malformed JSON, or 401. With ``echo_key`` every error body repeats the API key the client sent (as careless
servers do), to check that keys never reach errors, logs, caches or outputs. It records every request by
prompt hash so tests can count calls exactly.

Rehearse a run before paying for it::

    python -m tests.judge.fault_server --port 8099 --delay 0.05 --rate-429 0.1 --rate-500 0.05 --rate-drop 0.02
    preflab judge run pairs.jsonl --judge local:http://127.0.0.1:8099/v1#rehearsal --no-cache
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

from llm.calls.cache import prompt_hash
from tests.judge.fake_vllm_pooling import SERVED, pooling_reply


@dataclass
class Faults:
    """Per-request fault probabilities, and timings in seconds."""

    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_slow: float = 0.0
    rate_drop: float = 0.0
    rate_malformed: float = 0.0
    rate_401: float = 0.0
    echo_key: bool = False
    delay: float = 0.0
    slow_delay: float = 5.0
    retry_after: str = "0"
    seed: int = 0
    served_suffix: str = ""  # appended to the model name the answers say served them (a version bump)


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


#: fault -> (status, error object) of the error answers; the ``message`` gets the echoed key when asked
ERROR_REPLIES = {
    "429": (429, {"message": "rate limited", "type": "rate_limit"}),
    "500": (500, {"message": "server error"}),
    "401": (401, {"message": "invalid API key", "type": "auth"}),
}


async def read_request(reader: asyncio.StreamReader) -> tuple[str, dict, dict]:
    """(path, lower-cased headers, JSON body) of the next request on a keep-alive connection."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
    body = json.loads(await reader.readexactly(int(headers.get("content-length", 0))) or b"{}")
    return lines[0].split(" ")[1], headers, body


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
                           ("drop", f.rate_drop), ("malformed", f.rate_malformed), ("401", f.rate_401)):
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
            choice = {"index": 0, "finish_reason": "length",
                      "message": {"role": "assistant", "content": lps[0]["token"]},
                      "logprobs": {"content": lps} if body.get("logprobs") else None}
            obj = "chat.completion"
        else:
            top = {t["token"]: t["logprob"] for t in lps[0]["top_logprobs"]}
            choice = {"index": 0, "finish_reason": "length", "text": lps[0]["token"],
                      "logprobs": {"tokens": [lps[0]["token"]], "token_logprobs": [lps[0]["logprob"]],
                                   "top_logprobs": [top], "text_offset": [0]} if body.get("logprobs") else None}
            obj = "text_completion"
        # Like OpenAI, the answer names the model version served and (chat) the backend's fingerprint.
        return {"id": "cmpl-" + key, "object": obj, "created": 0,
                "model": body.get("model", "m") + self.faults.served_suffix,
                "choices": [choice], "usage": usage,
                **({"system_fingerprint": "fp_fault"} if obj == "chat.completion" else {})}

    def _echo(self, headers: dict) -> str:
        """What a careless server appends to its errors: the credentials it got (with ``echo_key``)."""
        if not self.faults.echo_key:
            return ""
        return f" (you sent {headers.get('authorization') or headers.get('x-api-key') or headers.get('api-key', '')})"

    def _reply(self, fault: str, path: str, body: dict, key: str, headers: dict) -> tuple[int, dict, bytes]:
        """(status, extra headers, body bytes) of the answer to a request the fault ``fault`` was drawn for."""
        if fault == "malformed":
            return 200, {}, b'{"id": "x", "choices": [{"message": '
        if fault not in ERROR_REPLIES and path.rstrip("/").endswith("/pooling"):  # a reward model (vLLM /pooling)
            status, reply = pooling_reply(path, body, body.get("model") or SERVED)
            return status, {}, json.dumps(reply).encode()
        if fault not in ERROR_REPLIES:
            return 200, {}, json.dumps(self._answer(path, body, key)).encode()
        status, error = ERROR_REPLIES[fault]
        extra = {"Retry-After": self.faults.retry_after} if status == 429 else {}
        error = {**error, "message": error["message"] + self._echo(headers)}
        return status, extra, json.dumps({"error": error}).encode()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                path, headers, body = await read_request(reader)
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
                status, extra, payload = self._reply(fault, path, body, key, headers)
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


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m tests.judge.fault_server`` (every fault rate is a probability per request)."""
    ap = argparse.ArgumentParser(
        prog="python -m tests.judge.fault_server",
        description="A loopback OpenAI/Anthropic-compatible judge server that injects faults, to rehearse a "
                    "`preflab judge run` before paying for it. Prints 'URL <base>' once listening; pass "
                    "--judge local:<base>#NAME (or openai:/anthropic: with the SDK base URL) to the run.",
        epilog="Fault rates are per request and exclusive (their sum must be <= 1). Example: --rate-429 0.1 "
               "--rate-500 0.05 --rate-slow 0.01 --slow-delay 90 --rate-drop 0.02 --rate-malformed 0.01.")
    ap.add_argument("--host", default="127.0.0.1", help="Address to listen on (default 127.0.0.1).")
    ap.add_argument("--port", type=int, default=0, help="Port (default 0: any free port, printed).")
    ap.add_argument("--delay", type=float, default=0.0, help="Seconds before every answer (default 0).")
    ap.add_argument("--rate-429", type=float, default=0.0, help="Share answered 429 with Retry-After.")
    ap.add_argument("--retry-after", default="0", help="The 429 Retry-After header value (default 0).")
    ap.add_argument("--rate-500", type=float, default=0.0, help="Share answered 500.")
    ap.add_argument("--rate-slow", type=float, default=0.0, help="Share answered after --slow-delay seconds.")
    ap.add_argument("--slow-delay", type=float, default=5.0, help="Seconds a slow answer takes (default 5).")
    ap.add_argument("--rate-drop", type=float, default=0.0, help="Share whose connection is dropped unanswered.")
    ap.add_argument("--rate-malformed", type=float, default=0.0, help="Share answered with truncated JSON.")
    ap.add_argument("--rate-401", type=float, default=0.0, help="Share answered 401 (not retried by clients).")
    ap.add_argument("--echo-key", action="store_true",
                    help="Repeat the client's API key in every error body (to check redaction).")
    ap.add_argument("--seed", type=int, default=0, help="Seed of the fault draws (default 0).")
    return ap


def faults_from_args(args: argparse.Namespace) -> Faults:
    """The :class:`Faults` of parsed command-line arguments; rates must be probabilities summing to <= 1."""
    rates = {k: getattr(args, k) for k in ("rate_429", "rate_500", "rate_slow", "rate_drop", "rate_malformed",
                                            "rate_401")}
    bad = {k: v for k, v in rates.items() if not 0.0 <= v <= 1.0}
    if bad or sum(rates.values()) > 1.0:
        raise SystemExit(f"fault rates must be in [0, 1] and sum to <= 1; got {rates}")
    return Faults(**rates, echo_key=args.echo_key, delay=args.delay, slow_delay=args.slow_delay,
                  retry_after=args.retry_after, seed=args.seed)


def main(argv: list[str] | None = None) -> None:
    """Standalone server: prints ``URL <base>`` once listening, then serves until interrupted."""
    args = build_parser().parse_args(argv)
    srv = FaultServer(faults_from_args(args), host=args.host, port=args.port)

    async def announce() -> None:
        task = asyncio.create_task(srv.serve())
        await asyncio.to_thread(srv._ready.wait)
        print(f"URL {srv.url}", flush=True)
        await task

    try:
        asyncio.run(announce())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
