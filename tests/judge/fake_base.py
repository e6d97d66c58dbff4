"""What both API fakes share (:mod:`tests.judge.api_fakes`): the answers as functions of the prompt, the
logprob shapes, the generation answers (whole or as server-sent events), and the state a fake keeps.

The judge's answer: the slot whose answer text contains ``GOOD`` wins (slot A when neither does). A generation
answer: 8 to 39 words chosen by the conversation's hash, one token per word, cut at the token limit.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import threading
from collections import Counter

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


def top_entries(pairs: list[tuple[str, float]]) -> list[dict]:
    return [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in pairs]


def label_tops(best: str, piece: str = "") -> list[dict]:
    """20 top logprobs at a verdict position: the right label at 0.8, the other 0.15, C 0.03, then fillers."""
    other = "A" if best == "B" else "B"
    listed = [(piece + best, math.log(0.8)), (piece + other, math.log(0.15)), (piece + "C", math.log(0.03))]
    listed += [(f"w{i}", math.log(0.02 / 17)) for i in range(17)]
    return top_entries(listed)


def token_entry(tok: str, tops: list[dict] | None = None) -> dict:
    lp = tops[0]["logprob"] if tops and tops[0]["token"] == tok else -0.05
    return {"token": tok, "logprob": lp, "bytes": list(tok.encode()), "top_logprobs": tops or top_entries([(tok, lp)])}


def openai_error(status: int, message: str, param: str | None = None, code: str | None = None,
           kind: str = "invalid_request_error") -> tuple[int, dict]:
    return status, {"error": {"message": message, "type": kind, "param": param, "code": code}}


def generation_events(anthropic: bool, body: dict, words: list[str], reason: str, n_in: int, n_out: int) -> list[bytes]:
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


def generation(anthropic: bool, body: dict, thinking: int = 0) -> tuple[int, dict | list[bytes]]:
    """A generation answer (not a judge prompt) in the API's shape: whole, or as events when ``stream`` is set;
    ``thinking`` tokens (Anthropic) count against the limit."""
    msgs = body["messages"]
    if anthropic:
        limit, system = body["max_tokens"], body.get("system")
    else:
        limit = body.get("max_completion_tokens", body.get("max_tokens", 4096))
        if not isinstance(limit, int) or limit < 1:
            return openai_error(400, "max_completion_tokens must be a positive integer", "max_completion_tokens")
        system = "\n".join(m["content"] for m in msgs if m.get("role") == "system") or None
        msgs = [m for m in msgs if m.get("role") != "system"]
    words = answer_words(msgs, system)
    cut = words[: max(limit - thinking, 0)]
    reason = ("max_tokens" if anthropic else "length") if len(cut) < len(words) else (
        "end_turn" if anthropic else "stop")
    n_in = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
    n_out = len(cut) + thinking
    if body.get("stream"):
        return 200, generation_events(anthropic, body, cut, reason, n_in, n_out)
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


class FakeBase:
    """The state of a fake API server: its fault rates, what it was asked, what it answered and refused."""

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
