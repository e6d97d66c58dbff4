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
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import threading
import time
import uuid
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANTHROPIC_VERSION = "2026-10-21"
_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
REASONING_TOKENS = 300  # what the reasoning models spend before any text
THINKING_TOKENS = 400
LOCAL_MODELS = ("ignores-logprobs", "spm-pieces", "dup-tokens", "think-first", "reason-first", "vllm-max5")
OPENAI_PARAMS = {"model", "messages", "max_completion_tokens", "max_tokens", "temperature", "top_p", "seed", "stop",
                 "stream", "stream_options", "n", "logprobs", "top_logprobs", "user", "reasoning_effort",
                 "response_format", "presence_penalty", "frequency_penalty", "logit_bias", "service_tier", "store",
                 "metadata"}
ANTHROPIC_PARAMS = {"model", "messages", "max_tokens", "system", "stop_sequences", "stream", "metadata", "thinking",
                    "service_tier", "tools", "tool_choice"}
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango").split()


def answer_words(messages: list[dict], system: str | None = None) -> list[str]:
    """The deterministic full generation answer to a conversation: 8 to 39 words chosen by its hash."""
    h = hashlib.sha256(json.dumps([system, messages], sort_keys=True).encode()).digest()
    return [WORDS[b % len(WORDS)] for b in h[: 8 + h[0] % 32]]


def prompt_key(messages: list[dict]) -> str:
    """Which prompt a request answers (its last user turn)."""
    users = [m.get("content") for m in messages if m.get("role") == "user"]
    return str(users[-1]) if users else ""


def is_judge_prompt(messages: list[dict]) -> bool:
    return any("[The start of Assistant A's answer]" in str(m.get("content", "")) for m in messages)


def winner(messages: list[dict]) -> str:
    """The slot that should win: the one whose answer contains GOOD (A when neither does)."""
    text = "\n".join(m.get("content", "") for m in messages if isinstance(m.get("content"), str))
    m = re.search(r"\[The start of Assistant B's answer\](.*?)\[The end of Assistant B's answer\]", text, re.S)
    return "B" if m and "GOOD" in m.group(1) else "A"


def _top(pairs: list[tuple[str, float]]) -> list[dict]:
    return [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in pairs]


def label_tops(best: str, piece: str = "") -> list[dict]:
    """20 top logprobs at a verdict position: the right label at 0.8, the other 0.15, C 0.03, then fillers."""
    other = "A" if best == "B" else "B"
    listed = [(piece + best, math.log(0.8)), (piece + other, math.log(0.15)), (piece + "C", math.log(0.03))]
    listed += [(f"w{i}", math.log(0.02 / 17)) for i in range(17)]
    return _top(listed)


def _token(tok: str, tops: list[dict] | None = None) -> dict:
    lp = tops[0]["logprob"] if tops and tops[0]["token"] == tok else -0.05
    return {"token": tok, "logprob": lp, "bytes": list(tok.encode()), "top_logprobs": tops or _top([(tok, lp)])}


def _error(status: int, message: str, param: str | None = None, code: str | None = None,
           kind: str = "invalid_request_error") -> tuple[int, dict]:
    return status, {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _gen_events(anthropic: bool, body: dict, words: list[str], reason: str, n_in: int, n_out: int) -> list[bytes]:
    """A generation answer as the API's server-sent events, one text piece per word."""
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
                                   "usage": {"output_tokens": n_out}}),
                ("message_stop", {"type": "message_stop"})]
        return [f"event: {k}\ndata: {json.dumps(v)}\n\n".encode() for k, v in evs]
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": body["model"]}
    chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": p}, "finish_reason": None}]}
              for p in pieces]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append({**base, "choices": [], "usage": {"prompt_tokens": n_in, "completion_tokens": n_out,
                                                        "total_tokens": n_in + n_out}})
    return [f"data: {json.dumps(c)}\n\n".encode() for c in chunks] + [b"data: [DONE]\n\n"]


class ApiFake:
    """``with ApiFake() as api:`` — ``api.url`` is the OpenAI base URL (``.../v1``), ``api.root`` Anthropic's."""

    batch_max_requests = 50_000
    batch_max_bytes = 200 * 1024 * 1024

    def __init__(self, seed: int = 0, *, rate_429: float = 0.0, rate_500: float = 0.0, echo_key: bool = False,
                 delay: float = 0.0) -> None:
        self.rng = random.Random(seed)
        self.rate_429, self.rate_500, self.echo_key, self.delay = rate_429, rate_500, echo_key, delay
        self.lock = threading.Lock()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.log: list[tuple[str, str, dict]] = []  # (path, model, body) of every generation request
        self.refusals: list[str] = []  # the sampling parameters Anthropic refused
        self.seen: dict[tuple, int] = {}
        self.requests: Counter = Counter()  # prompt -> live generation requests received
        self.answered: Counter = Counter()  # prompt -> 200 answers sent
        self.outcomes: Counter = Counter()  # "ok", "429", "500", "400", "401", ... per live request
        self.rejected: list[tuple[int, str]] = []  # (status, message) of every 4xx refusal

    def sample(self, model: str, messages: list[dict], best: str, index: int) -> str:
        """A sampled verdict: right, except the second answer for each prompt (choice 1 of an ``n`` request,
        or the second of separate calls), so K samples give the right slot a share of exactly (K - 1) / K."""
        key = (model, json.dumps(messages, sort_keys=True))
        seen = self.seen.get(key, 0)
        self.seen[key] = seen + 1
        wrong = index == 1 or (index == 0 and seen == 1)
        return ("A" if best == "B" else "B") if wrong else best

    # --- OpenAI chat completions --------------------------------------------------------------------
    def chat(self, body: dict) -> tuple[int, dict | list[bytes]]:
        model = str(body.get("model", ""))
        msgs = body.get("messages") or []
        if unknown := sorted(set(body) - OPENAI_PARAMS):
            return _error(400, f"Unrecognized request argument supplied: {unknown[0]}", unknown[0])
        if not model or not isinstance(msgs, list) or not msgs:
            return _error(400, "'messages' and 'model' are required")
        if not is_judge_prompt(msgs) and (model.startswith(("gpt-4.1", "ft:gpt-4.1"))
                                          or not re.match(r"gpt-|o\d|ft:", model)):
            return self._generation(False, body)
        best = winner(msgs)
        if model.startswith(("o4-mini", "gpt-6")):
            return self._reasoning(model, body, best)
        if model in LOCAL_MODELS:
            return self._local(model, body, best)
        if not model.startswith(("gpt-4.1", "ft:gpt-4.1")):
            return _error(404, f"The model `{model}` does not exist or you do not have access to it.", None,
                          "model_not_found")
        if body.get("top_logprobs", 0) > 20:
            return _error(400, "Invalid 'top_logprobs': integer above maximum value. Expected a value <= 20, but "
                               f"got {body['top_logprobs']} instead.", "top_logprobs", "integer_above_max_value")
        n = int(body.get("n", 1))
        choices = []
        for i in range(n):
            label = best if body.get("temperature", 1) == 0 else self.sample(model, msgs, best, i)
            lp = {"content": [_token(label, label_tops(label))], "refusal": None} if body.get("logprobs") else None
            choices.append({"index": i, "finish_reason": "stop", "logprobs": lp,
                            "message": {"role": "assistant", "content": label, "refusal": None, "annotations": []}})
        return 200, self._completion(model, choices, 1 * n)

    def _reasoning(self, model: str, body: dict, best: str) -> tuple[int, dict]:
        gpt6 = model.startswith("gpt-6")
        if "max_tokens" in body:
            return _error(400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                               "'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter")
        if "temperature" in body and (gpt6 or body["temperature"] != 1):
            if gpt6:
                return _error(400, "Unsupported parameter: 'temperature' is not supported with this model.",
                              "temperature", "unsupported_parameter")
            return _error(400, f"Unsupported value: 'temperature' does not support {body['temperature']} with this "
                               "model. Only the default (1) value is supported.", "temperature", "unsupported_value")
        if body.get("logprobs") or "top_logprobs" in body:
            if gpt6:
                param = "top_logprobs" if "top_logprobs" in body else "logprobs"
                return _error(400, f"Unsupported parameter: '{param}' is not supported with this model.", param,
                              "unsupported_parameter")
            return _error(403, "You are not allowed to request logprobs from this model", None, None)
        if gpt6 and int(body.get("n", 1)) != 1:
            return _error(400, "Unsupported parameter: 'n' is not supported with this model.", "n",
                          "unsupported_parameter")
        budget = int(body.get("max_completion_tokens") or 4096)
        n = int(body.get("n", 1))
        if budget < REASONING_TOKENS + 20:
            choices = [{"index": i, "finish_reason": "length", "logprobs": None,
                        "message": {"role": "assistant", "content": "", "refusal": None, "annotations": []}}
                       for i in range(n)]
            return 200, self._completion(model, choices, budget * n, budget * n)
        choices = []
        for i in range(n):
            label = self.sample(model, body["messages"], best, i)
            choices.append({"index": i, "finish_reason": "stop", "logprobs": None,
                            "message": {"role": "assistant", "content": f"Final verdict: [[{label}]]",
                                        "refusal": None, "annotations": []}})
        return 200, self._completion(model, choices, (REASONING_TOKENS + 8) * n, REASONING_TOKENS * n)

    def _local(self, model: str, body: dict, best: str) -> tuple[int, dict]:
        if model == "vllm-max5" and body.get("top_logprobs", 0) > 5:
            return 400, {"object": "error", "message": f"Requested sample logprobs of {body['top_logprobs']}, which "
                         "is greater than max allowed: 5", "type": "BadRequestError", "param": None, "code": 400}
        other = "A" if best == "B" else "B"
        want = bool(body.get("logprobs"))
        if model == "ignores-logprobs":
            content, tokens = best, None
        elif model == "vllm-max5":
            content, tokens = best, [_token(best, label_tops(best)[:body.get("top_logprobs", 5)])]
        elif model == "spm-pieces":
            content = " " + best
            tops = label_tops(best, "\u2581")
            tops[2]["token"] = "\u0120C"
            tokens = [_token("\u2581" + best, tops)]
        elif model == "dup-tokens":  # the winner under two token ids with the same text: 0.35 + 0.2 > 0.4
            content = other
            tokens = [_token(other, _top([(other, math.log(0.4)), (best, math.log(0.35)), (best, math.log(0.2)),
                                          ("C", math.log(0.01))]))]
        elif model == "think-first":
            pieces = ["<think>", "Both", " answers", " are", " short", ".", "</think>", "\n\n", best]
            tokens = [_token(p) for p in pieces[:-1]] + [_token(best, label_tops(best))]
            cut = int(body.get("max_tokens") or 4096)  # the thinking counts against max_tokens
            if cut < len(pieces):
                lp = {"content": tokens[:cut], "refusal": None} if want else None
                choice = {"index": 0, "finish_reason": "length", "logprobs": lp,
                          "message": {"role": "assistant", "content": "".join(pieces[:cut])}}
                return 200, self._completion(model, [choice], cut)
            content = "".join(pieces)
        else:  # reason-first: the first token is "The"; its top logprobs lean to A whatever the verdict
            pieces = ["The", " second" if best == "B" else " first", " answer", " is", " correct", ".",
                      " Final", " verdict", ":", " [[", best, "]]"]
            content = "".join(pieces)
            first = _top([("The", -0.05), ("A", math.log(0.02)), ("B", math.log(0.01)), ("I", math.log(0.005))])
            tokens = [_token("The", first)] + [_token(p) for p in pieces[1:10]] + [
                _token(best, label_tops(best)), _token("]]")]
        lp = {"content": tokens, "refusal": None} if want and tokens else None
        choice = {"index": 0, "finish_reason": "stop", "logprobs": lp,
                  "message": {"role": "assistant", "content": content}}
        return 200, self._completion(model, [choice], len(tokens or [1]))

    def _completion(self, model: str, choices: list[dict], out: int, reasoning: int = 0) -> dict:
        return {"id": "chatcmpl-" + uuid.uuid4().hex[:20], "object": "chat.completion", "created": 1764720000,
                "model": model, "choices": choices, "system_fingerprint": "fp_fake", "service_tier": "default",
                "usage": {"prompt_tokens": 150, "completion_tokens": out, "total_tokens": 150 + out,
                          "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                          "completion_tokens_details": {"reasoning_tokens": reasoning, "audio_tokens": 0,
                                                        "accepted_prediction_tokens": 0,
                                                        "rejected_prediction_tokens": 0}}}

    # --- Anthropic Messages ------------------------------------------------------------------------
    def message(self, body: dict, version: str | None) -> tuple[int, dict]:
        rid = "req_" + uuid.uuid4().hex[:24]
        if version != ANTHROPIC_VERSION:
            return 400, {"type": "error", "error": {"type": "invalid_request_error", "message":
                         f"anthropic-version: {version!r} is not supported by this fake"}, "request_id": rid}
        for param in ("temperature", "top_p", "top_k"):
            if param in body:
                self.refusals.append(param)
                return 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                        "message": f"{param}: Extra inputs are not permitted"},
                             "request_id": rid}
        for field in ("model", "max_tokens", "messages"):
            if field not in body:
                return 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                        "message": f"{field}: Field required"}, "request_id": rid}
        if extra := sorted(set(body) - ANTHROPIC_PARAMS):
            return 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                    "message": f"{extra[0]}: Extra inputs are not permitted"},
                         "request_id": rid}
        msgs = body["messages"]
        if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
            return 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                    "message": "max_tokens: Input should be greater than or equal to 1"},
                         "request_id": rid}
        if not isinstance(msgs, list) or not msgs or msgs[0].get("role") != "user" or any(
                m.get("role") not in ("user", "assistant") for m in msgs):
            return 400, {"type": "error", "error": {"type": "invalid_request_error", "message":
                         "messages: roles must be user/assistant, starting with user"}, "request_id": rid}
        model, budget = str(body["model"]), int(body["max_tokens"])
        thinks = re.search(r"-5(?:-|$)", model) is not None and (body.get("thinking") or {}).get("type") != "disabled"
        if not is_judge_prompt(msgs):
            return self._generation(True, body, min(budget, THINKING_TOKENS) if thinks else 0)
        content: list[dict] = []
        used = 0
        if thinks:
            used = min(budget, THINKING_TOKENS)
            content.append({"type": "thinking", "thinking": "Comparing the answers...", "signature": "sig"})
        best = winner(body["messages"] + [{"content": body.get("system") or ""}])
        if budget - used < 12:
            stop, out = "max_tokens", budget
        else:
            label = self.sample(model, body["messages"], best, 0)
            content.append({"type": "text", "text": f"Assistant {label} is better.\n\nFinal verdict: [[{label}]]",
                            "citations": None})
            stop, out = "end_turn", used + 12
        return 200, {"id": "msg_" + uuid.uuid4().hex[:24], "type": "message", "role": "assistant", "model": model,
                     "content": content, "stop_reason": stop, "stop_sequence": None,
                     "usage": {"input_tokens": 150, "output_tokens": out, "cache_creation_input_tokens": 0,
                               "cache_read_input_tokens": 0, "service_tier": "standard"}}

    def message_batch(self, body: dict, version: str | None, base: str) -> tuple[int, dict]:
        reqs = body.get("requests") or []
        ids = [r.get("custom_id", "") for r in reqs]
        bad = next((i for i in ids if not _CUSTOM_ID.match(str(i))), None)
        if bad is not None or len(set(ids)) != len(ids):
            return 400, {"type": "error", "error": {"type": "invalid_request_error", "message":
                         f"requests: custom_id {bad!r} must match ^[a-zA-Z0-9_-]{{1,64}}$ and be unique"},
                         "request_id": "req_x"}
        bid = "msgbatch_" + uuid.uuid4().hex[:20]
        results = []
        for r in reqs:
            status, msg = self.message(r["params"], version)
            result = ({"type": "succeeded", "message": msg} if status == 200 else
                      {"type": "errored", "error": {"type": "error", "error": msg["error"]}})
            results.append({"custom_id": r["custom_id"], "result": result})
        ok = sum(r["result"]["type"] == "succeeded" for r in results)
        self.batches[bid] = {"anthropic": True, "results": results, "polls": 0, "base": base,
                             "counts": {"processing": 0, "succeeded": ok, "errored": len(results) - ok,
                                        "canceled": 0, "expired": 0}}
        return 200, self._message_batch(bid, ended=False)

    def _message_batch(self, bid: str, ended: bool) -> dict:
        b = self.batches[bid]
        return {"id": bid, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
                "request_counts": b["counts"] if ended else {**b["counts"], "processing": len(b["results"]),
                                                              "succeeded": 0, "errored": 0},
                "created_at": "2026-12-03T10:00:00Z", "expires_at": "2026-12-04T10:00:00Z",
                "ended_at": "2026-12-03T10:05:00Z" if ended else None, "cancel_initiated_at": None,
                "archived_at": None,
                "results_url": f"{b['base']}/v1/messages/batches/{bid}/results" if ended else None}

    # --- generation answers -------------------------------------------------------------------------
    def _generation(self, anthropic: bool, body: dict, thinking: int = 0) -> tuple[int, dict | list[bytes]]:
        msgs = body["messages"]
        if anthropic:
            limit, system = body["max_tokens"], body.get("system")
        else:
            limit = body.get("max_completion_tokens", body.get("max_tokens", 4096))
            if not isinstance(limit, int) or limit < 1:
                return _error(400, "max_completion_tokens must be a positive integer", "max_completion_tokens")
            system = "\n".join(m["content"] for m in msgs if m.get("role") == "system") or None
            msgs = [m for m in msgs if m.get("role") != "system"]
        words = answer_words(msgs, system)
        cut = words[: max(limit - thinking, 0)]
        reason = ("max_tokens" if anthropic else "length") if len(cut) < len(words) else (
            "end_turn" if anthropic else "stop")
        n_in = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
        n_out = len(cut) + thinking
        if body.get("stream"):
            return 200, _gen_events(anthropic, body, cut, reason, n_in, n_out)
        text = " ".join(cut)
        if anthropic:
            content = [{"type": "thinking", "thinking": "...", "signature": "sig"}] if thinking else []
            return 200, {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                         "content": content + ([{"type": "text", "text": text}] if cut else []),
                         "stop_reason": reason, "stop_sequence": None,
                         "usage": {"input_tokens": n_in, "output_tokens": n_out}}
        return 200, {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                     "choices": [{"index": 0, "finish_reason": reason, "logprobs": None,
                                  "message": {"role": "assistant", "content": text}}],
                     "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out}}

    # --- OpenAI files and batches --------------------------------------------------------------------
    def upload(self, content_type: str, raw: bytes) -> tuple[int, dict]:
        boundary = content_type.split("boundary=")[-1].strip('"').encode()
        fields: dict[str, bytes] = {}
        for part in raw.split(b"--" + boundary):
            head, _, data = part.partition(b"\r\n\r\n")
            m = re.search(rb'name="([^"]+)"', head)
            if m:
                fields[m.group(1).decode()] = data.removesuffix(b"\r\n")
        if fields.get("purpose") != b"batch" or "file" not in fields:
            return _error(400, "'purpose' must be 'batch' and a file is required", "purpose")
        fid = "file-" + uuid.uuid4().hex[:22]
        self.files[fid] = fields["file"]
        return 200, {"id": fid, "object": "file", "bytes": len(fields["file"]), "created_at": 1764720000,
                     "filename": "preflab-batch.jsonl", "purpose": "batch", "status": "processed",
                     "expires_at": None, "status_details": None}

    def create_batch(self, body: dict) -> tuple[int, dict]:
        fid = body.get("input_file_id")
        if fid not in self.files:
            return _error(400, f"Invalid 'input_file_id': '{fid}'. File not found.", "input_file_id")
        if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            return _error(400, "endpoint must be /v1/chat/completions and completion_window 24h", "endpoint")
        data = self.files[fid]
        lines = [ln for ln in data.decode().splitlines() if ln.strip()]
        bid = "batch_" + uuid.uuid4().hex[:20]
        b = {"id": bid, "object": "batch", "endpoint": body["endpoint"], "input_file_id": fid,
             "completion_window": "24h", "status": "validating", "created_at": 1764720000, "errors": None,
             "output_file_id": None, "error_file_id": None, "polls": 0,
             "request_counts": {"total": len(lines), "completed": 0, "failed": 0}}
        if len(lines) > self.batch_max_requests or len(data) > self.batch_max_bytes:
            what = (f"{len(lines)} requests, more than the {self.batch_max_requests:,} allowed"
                    if len(lines) > self.batch_max_requests else f"{len(data)} bytes, over the limit")
            b["final"] = "failed"
            b["errors"] = {"object": "list", "data": [{"code": "batch_too_large", "message": f"The input file has {what}.",
                                                       "param": None, "line": None}]}
        else:
            out, err = [], []
            for ln in lines:
                req = json.loads(ln)
                status, resp = self.chat(req["body"])
                row = {"id": "batch_req_" + uuid.uuid4().hex[:16], "custom_id": req["custom_id"],
                       "response": {"status_code": status, "request_id": uuid.uuid4().hex, "body": resp},
                       "error": None}
                (out if status == 200 else err).append(json.dumps(row))
            b["final"] = "completed"
            for kind, rows in (("output_file_id", out), ("error_file_id", err)):
                if rows:
                    f = "file-" + uuid.uuid4().hex[:22]
                    self.files[f] = ("\n".join(rows) + "\n").encode()
                    b[kind] = f
            b["request_counts"] = {"total": len(lines), "completed": len(out), "failed": len(err)}
        self.batches[bid] = b
        return 200, self._batch(bid)

    def _batch(self, bid: str) -> dict:
        b = self.batches[bid]
        done = b["polls"] >= 1
        shown = {k: v for k, v in b.items() if k not in ("polls", "final")}
        shown["status"] = b["final"] if done else "in_progress"
        if not done:
            shown.update(output_file_id=None, error_file_id=None)
        return shown

    # --- HTTP ------------------------------------------------------------------------------------
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
            return _error(401, "Incorrect API key provided.", None, "invalid_api_key", "authentication_error")
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
        return _error(404, f"Unknown request URL: {method} {path}.", None, "unknown_url")

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

            def handle_error(self, request, client_address) -> None:  # noqa: ANN001
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
