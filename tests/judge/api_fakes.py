"""Contract fakes of the paid APIs (judging and generation), for tests: one loopback HTTP server the real SDKs
talk to.

It enforces the documented rules for the API versions the installed SDKs send, with the real error bodies:

- Anthropic Messages, ``anthropic-version: 2026-10-21`` (anthropic 2.x): ``temperature``, ``top_p`` and
  ``top_k`` are rejected with HTTP 400 ``invalid_request_error`` "temperature: Extra inputs are not
  permitted", even at their default values, live and in each Message Batches request; ``claude-*-5*`` models
  think by default and their thinking counts against ``max_tokens`` (an answer cut off there has only a
  thinking block and ``stop_reason: max_tokens``). Message Batches: ``custom_id`` must match
  ``^[a-zA-Z0-9_-]{1,64}$``; results are JSONL at ``results_url``.
- OpenAI chat completions (openai 3.x) by model: ``gpt-4.1*`` and ``ft:gpt-4.1*`` take everything and return
  real-shaped ``top_logprobs``; ``o4-mini`` (o-series-like) rejects a temperature other than 1 ("Unsupported
  value"), ``max_tokens`` ("use 'max_completion_tokens' instead") and logprobs (403 "You are not allowed to
  request logprobs from this model"), and reasons before it answers (reasoning tokens count against
  ``max_completion_tokens``: too few and the reply is empty with ``finish_reason: length``); ``gpt-6*``
  (GPT-6-like) rejects ``temperature``, ``logprobs``/``top_logprobs`` and ``n`` as unsupported parameters and
  reasons too. OpenAI Batch: ``/v1/files`` (multipart, purpose ``batch``), ``/v1/batches``, output and error
  files as JSONL; an input file over :attr:`ApiFake.batch_max_requests` lines or
  :attr:`ApiFake.batch_max_bytes` bytes makes the batch ``failed`` with ``errors``.
- OpenAI-compatible local servers, by model name: ``ignores-logprobs`` (LM Studio, older Ollama: no logprobs
  whatever is asked), ``spm-pieces`` (``▁B``/``ĠA`` token pieces, as LMDeploy and early vLLM return),
  ``dup-tokens`` (one token string listed twice), ``think-first`` (``<think>...</think>`` then the label),
  ``reason-first`` (reasons, then "Final verdict: [[B]]"), ``vllm-max5`` (vLLM with ``--max-logprobs 5``).

- Both APIs: the key header (``Authorization: Bearer``, or Anthropic's ``x-api-key``) with each API's 401 body;
  OpenAI refuses an unknown argument ("Unrecognized request argument supplied: X"), Anthropic an unknown field
  ("X: Extra inputs are not permitted"), a missing or non-positive ``max_tokens`` and turns that are not
  user/assistant starting with user (system is its own field). Both stream (SSE) when ``stream`` is set. Faults
  (429 with ``Retry-After: 0``, 500) are drawn per request at set rates; with ``echo_key`` error messages repeat
  the key the client sent (so a test sees that it never reaches disk).

The judge's answer is a function of the prompt: the slot whose answer text contains ``GOOD`` wins (slot A
when neither does), so a test knows every correct verdict. A conversation that is not a judge prompt gets a
generation answer: 8 to 39 words chosen by its hash (:func:`answer_words`), one token per word, cut at the token
limit with the API's truncation reason (``length`` / ``max_tokens``). A model name OpenAI does not use
(not ``gpt-*``, ``o<digit>*``, ``ft:*``) is a local OpenAI-compatible server's model and answers the same way.

Each API lives in its own module (:mod:`tests.judge.fake_openai`, :mod:`tests.judge.fake_anthropic`) over the
answers and state they share (:mod:`tests.judge.fake_base`); :class:`ApiFake` serves both over HTTP.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.judge.fake_anthropic import ANTHROPIC_VERSION, AnthropicFake
from tests.judge.fake_base import answer_words, openai_error, prompt_key
from tests.judge.fake_openai import LOCAL_MODELS, OpenAIFake

__all__ = ["ANTHROPIC_VERSION", "ApiFake", "answer_words"]


class ApiFake(OpenAIFake, AnthropicFake):
    """``with ApiFake() as api:`` — ``api.url`` is the OpenAI base URL (``.../v1``), ``api.root`` Anthropic's."""

    def _key_refusal(self, path: str, headers: dict, body: dict) -> tuple[int, dict] | None:
        if body.get("model") in LOCAL_MODELS:  # local servers need no key
            return None
        if path.startswith("/v1/messages"):  # the 2.x SDK sends the key as a bearer token, older ones as x-api-key
            key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
            if len(key) < 6:
                return 401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
            return None
        auth = headers.get("authorization", "")
        if not auth.startswith("Bearer ") or len(auth) < 12:
            return openai_error(401, "Incorrect API key provided.", None, "invalid_api_key", "authentication_error")
        return None

    def handle(self, method: str, path: str, headers: dict, raw: bytes, base: str) -> tuple[int, dict | bytes | list]:
        """One request: (status, a JSON body, raw bytes or a list of server-sent events)."""
        body = json.loads(raw) if raw and headers.get("content-type", "").startswith("application/json") else {}
        live = method == "POST" and path in ("/v1/chat/completions", "/v1/messages")
        if not live:
            refused = self._key_refusal(path, headers, body)
            return refused or self._serve_files(method, path, headers, body, raw, base)
        with self.lock:
            self.log.append((path, str(body.get("model")), body))
            self.requests[prompt_key(body.get("messages") or [])] += 1
            u = self.rng.random()
            status, payload = self._key_refusal(path, headers, body) or (
                self.chat(body) if path == "/v1/chat/completions" else
                self.message(body, headers.get("anthropic-version")))
        anthropic = path == "/v1/messages"
        fault = "429" if u < self.rate_429 else "500" if u < self.rate_429 + self.rate_500 else None
        if status == 200 and fault:
            status = int(fault)
            kind = "rate_limit_error" if fault == "429" else "api_error"
            msg = "rate limited" if fault == "429" else "internal server error"
            payload = ({"type": "error", "error": {"type": kind, "message": msg}} if anthropic
                       else {"error": {"message": msg, "type": kind, "param": None, "code": None}})
        if status != 200 and isinstance(payload, dict):
            err = payload.get("error") if isinstance(payload.get("error"), dict) else payload
            if self.echo_key and "message" in err:
                err["message"] += f" (you sent {headers.get('authorization') or headers.get('x-api-key', '')})"
            if 400 <= status < 500 and status != 429:
                with self.lock:
                    self.rejected.append((status, str(err.get("message"))))
        with self.lock:
            self.outcomes["ok" if status == 200 else str(status)] += 1
        return status, payload

    def _serve_files(self, method: str, path: str, headers: dict, body: dict, raw: bytes,
                     base: str) -> tuple[int, dict | bytes]:
        with self.lock:
            if method == "POST" and path == "/v1/messages/batches":
                return self.message_batch(body, headers.get("anthropic-version"), base)
            m = re.fullmatch(r"/v1/messages/batches/([\w-]+)(/results)?", path)
            if m and m.group(1) in self.batches:
                b = self.batches[m.group(1)]
                if m.group(2):
                    return 200, ("\n".join(json.dumps(r) for r in b["results"]) + "\n").encode()
                b["polls"] += 1
                return 200, self._message_batch(m.group(1), ended=b["polls"] >= 2)
            if method == "POST" and path == "/v1/files":
                return self.upload(headers.get("content-type", ""), raw)
            if method == "POST" and path == "/v1/batches":
                return self.create_batch(body)
            m = re.fullmatch(r"/v1/batches/([\w-]+)", path)
            if m and m.group(1) in self.batches:
                self.batches[m.group(1)]["polls"] += 1
                return 200, self._batch(m.group(1))
            m = re.fullmatch(r"/v1/files/([\w-]+)/content", path)
            if m and m.group(1) in self.files:
                return 200, self.files[m.group(1)]
        return openai_error(404, f"Unknown request URL: {method} {path}.", None, "unknown_url")

    def __enter__(self) -> ApiFake:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _serve(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                if fake.delay:
                    time.sleep(fake.delay)
                path = self.path.split("?")[0]
                status, payload = fake.handle(self.command, path, headers, raw, fake.root)
                self.send_response(status)
                if status == 429:
                    self.send_header("retry-after", "0")
                if isinstance(payload, list):  # a stream: one chunk per event, flushed as it goes
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("transfer-encoding", "chunked")
                    self.end_headers()
                    for ev in payload:
                        self.wfile.write(f"{len(ev):x}\r\n".encode() + ev + b"\r\n")
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                    self.send_header("content-type", "application/octet-stream" if isinstance(payload, bytes)
                                     else "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                if status == 200 and self.command == "POST" and path in ("/v1/chat/completions", "/v1/messages"):
                    with fake.lock:
                        fake.answered[prompt_key(json.loads(raw).get("messages") or [])] += 1

            do_GET = do_POST = _serve

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # the default 5 refuses connections when the runner opens 16 at once

            def handleopenai_error(self, request, client_address) -> None:  # noqa: ANN001
                pass  # a client that hung up mid-answer (a timeout, an interrupted run) is not the fake's error

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.root = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = self.root + "/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
