"""A loopback stand-in for the paid generation APIs (OpenAI chat completions, Anthropic messages), driven
through the real SDKs by tests.

It enforces the documented rules of the versions the installed SDKs send: the key header (``Authorization:
Bearer``, or Anthropic's ``x-api-key``), Anthropic's ``anthropic-version: 2026-10-21`` (no ``temperature``, ``top_p``,
``top_k``; ``max_tokens`` required; user/assistant turns starting with user; system as its own field),
OpenAI's parameter names (unknown arguments refused) and each API's error body shape. Answers are
deterministic (words from the prompt hash), one token per word, cut at the token limit with the API's
truncation reason (``length`` / ``max_tokens``). Faults (429 with ``Retry-After``, 500) are drawn per request
at set rates; with ``echo_key`` error bodies repeat the key the client sent. Both APIs also stream (SSE).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import threading
from collections import Counter
from dataclasses import dataclass, field

ANTHROPIC_VERSION = "2026-10-21"
OPENAI_PARAMS = {"model", "messages", "max_completion_tokens", "max_tokens", "temperature", "top_p", "seed",
                 "stop", "stream", "stream_options", "n", "logprobs", "top_logprobs", "user"}
ANTHROPIC_PARAMS = {"model", "messages", "max_tokens", "system", "stop_sequences", "stream", "metadata"}
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango").split()


def answer_words(messages: list[dict], system: str | None = None) -> list[str]:
    """The deterministic full answer to a conversation: 8 to 39 words chosen by its hash."""
    h = hashlib.sha256(json.dumps([system, messages], sort_keys=True).encode()).digest()
    return [WORDS[b % len(WORDS)] for b in h[: 8 + h[0] % 32]]


def prompt_key(messages: list[dict]) -> str:
    """Which prompt a request answers (its last user turn)."""
    users = [m.get("content") for m in messages if m.get("role") == "user"]
    return str(users[-1]) if users else ""


@dataclass
class PaidFake:
    """``with PaidFake(rate_429=0.2) as srv:``; ``srv.url`` is the ``/v1`` base URL (OpenAI), ``srv.root``
    the Anthropic base URL."""

    rate_429: float = 0.0
    rate_500: float = 0.0
    echo_key: bool = False
    delay: float = 0.0
    seed: int = 0
    requests: Counter = field(default_factory=Counter)  # prompt -> requests received
    answered: Counter = field(default_factory=Counter)  # prompt -> 200 answers sent
    outcomes: Counter = field(default_factory=Counter)  # "ok", "429", "500", "400", "401"
    rejected: list = field(default_factory=list)  # (status, message) of every 4xx refusal

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # --- the APIs' rules ---------------------------------------------------------------------------
    def _openai(self, headers: dict, body: dict) -> tuple[int, dict | None, list[str], str]:
        auth = headers.get("authorization", "")
        if not auth.startswith("Bearer ") or len(auth) < 12:
            return 401, {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                                   "code": "invalid_api_key"}}, [], ""
        unknown = sorted(set(body) - OPENAI_PARAMS)
        if unknown:
            return 400, {"error": {"message": f"Unrecognized request argument supplied: {unknown[0]}",
                                   "type": "invalid_request_error", "param": unknown[0]}}, [], ""
        msgs = body.get("messages")
        if not body.get("model") or not isinstance(msgs, list) or not msgs:
            return 400, {"error": {"message": "'messages' and 'model' are required", "type": "invalid_request_error"}}, [], ""
        limit = body.get("max_completion_tokens", body.get("max_tokens", 4096))
        if not isinstance(limit, int) or limit < 1:
            return 400, {"error": {"message": "max_completion_tokens must be a positive integer",
                                   "type": "invalid_request_error"}}, [], ""
        words = answer_words([m for m in msgs if m.get("role") != "system"],
                             "\n".join(m["content"] for m in msgs if m.get("role") == "system") or None)
        cut = words[:limit]
        return 200, None, cut, "length" if len(words) > limit else "stop"

    def _anthropic(self, headers: dict, body: dict) -> tuple[int, dict | None, list[str], str]:
        def error(status: int, kind: str, message: str) -> tuple[int, dict, list[str], str]:
            return status, {"type": "error", "error": {"type": kind, "message": message}}, [], ""

        key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
        if len(key) < 6:  # the 2.x SDK sends the key as a bearer token, older ones as x-api-key
            return error(401, "authentication_error", "invalid x-api-key")
        if headers.get("anthropic-version") != ANTHROPIC_VERSION:
            return error(400, "invalid_request_error", f"anthropic-version must be {ANTHROPIC_VERSION}")
        extra = sorted(set(body) - ANTHROPIC_PARAMS)
        if extra:
            return error(400, "invalid_request_error", f"{extra[0]}: Extra inputs are not permitted")
        msgs = body.get("messages")
        if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
            return error(400, "invalid_request_error", "max_tokens: Field required")
        if not isinstance(msgs, list) or not msgs or msgs[0].get("role") != "user" or any(
                m.get("role") not in ("user", "assistant") for m in msgs):
            return error(400, "invalid_request_error", "messages: roles must be user/assistant, starting with user")
        words = answer_words(msgs, body.get("system"))
        cut = words[: body["max_tokens"]]
        return 200, None, cut, "max_tokens" if len(words) > body["max_tokens"] else "end_turn"

    # --- bodies ------------------------------------------------------------------------------------
    @staticmethod
    def _full(anthropic: bool, body: dict, words: list[str], reason: str) -> dict:
        text = " ".join(words)
        n_in = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
        if anthropic:
            return {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                    "content": [{"type": "text", "text": text}], "stop_reason": reason, "stop_sequence": None,
                    "usage": {"input_tokens": n_in, "output_tokens": len(words)}}
        return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": reason, "logprobs": None,
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": n_in, "completion_tokens": len(words), "total_tokens": n_in + len(words)}}

    @staticmethod
    def _events(anthropic: bool, body: dict, words: list[str], reason: str) -> list[bytes]:
        n_in = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
        pieces = [w if i == 0 else " " + w for i, w in enumerate(words)]
        if anthropic:
            evs = [("message_start", {"type": "message_start", "message": {
                "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"], "content": [],
                "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": n_in, "output_tokens": 0}}}),
                ("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}})]
            evs += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                             "delta": {"type": "text_delta", "text": p}}) for p in pieces]
            evs += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None},
                                       "usage": {"output_tokens": len(words)}}),
                    ("message_stop", {"type": "message_stop"})]
            return [f"event: {k}\ndata: {json.dumps(v)}\n\n".encode() for k, v in evs]
        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": body["model"]}
        chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": p},
                                        "finish_reason": None}]} for p in pieces]
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**base, "choices": [], "usage": {"prompt_tokens": n_in, "completion_tokens": len(words),
                                                            "total_tokens": n_in + len(words)}})
        return [f"data: {json.dumps(c)}\n\n".encode() for c in chunks] + [b"data: [DONE]\n\n"]

    # --- the server --------------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
                body = json.loads(await reader.readexactly(int(headers.get("content-length", 0))) or b"{}")
                anthropic = path.endswith("/messages")
                key = prompt_key(body.get("messages") or [])
                with self._lock:
                    self.requests[key] += 1
                    u = self._rng.random()
                fault = "429" if u < self.rate_429 else "500" if u < self.rate_429 + self.rate_500 else None
                if self.delay:
                    await asyncio.sleep(self.delay)
                status, err, words, reason = (self._anthropic if anthropic else self._openai)(headers, body)
                sent = headers.get("authorization") or headers.get("x-api-key", "")
                echo = f" (you sent {sent})" if self.echo_key else ""
                extra = ""
                if status == 200 and fault:
                    status, extra = int(fault), "Retry-After: 0\r\n" if fault == "429" else ""
                    msg = ("rate limited" if fault == "429" else "internal server error") + echo
                    kind = "rate_limit_error" if fault == "429" else "api_error"
                    err = ({"type": "error", "error": {"type": kind, "message": msg}} if anthropic
                           else {"error": {"message": msg, "type": kind}})
                elif err is not None:
                    if "message" in err.get("error", {}):
                        err["error"]["message"] += echo
                    with self._lock:
                        self.rejected.append((status, err["error"]["message"]))
                with self._lock:
                    self.outcomes[str(status) if status != 200 else "ok"] += 1
                if err is not None:
                    payload = json.dumps(err).encode()
                    writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: "
                                 f"{len(payload)}\r\n{extra}\r\n".encode() + payload)
                elif body.get("stream"):
                    events = self._events(anthropic, body, words, reason)
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                                 b"Transfer-Encoding: chunked\r\n\r\n")
                    for ev in events:
                        writer.write(f"{len(ev):x}\r\n".encode() + ev + b"\r\n")
                        await writer.drain()
                    writer.write(b"0\r\n\r\n")
                else:
                    payload = json.dumps(self._full(anthropic, body, words, reason)).encode()
                    writer.write(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                                 f"{len(payload)}\r\n\r\n".encode() + payload)
                await writer.drain()
                if err is None:
                    with self._lock:
                        self.answered[key] += 1
        except (asyncio.IncompleteReadError, asyncio.CancelledError, ConnectionError, IndexError, ValueError):
            pass
        finally:
            writer.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0, backlog=1024)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def __enter__(self) -> PaidFake:
        def run() -> None:
            self._loop = asyncio.new_event_loop()
            try:
                self._loop.run_until_complete(self._serve())
            finally:
                self._loop.close()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
