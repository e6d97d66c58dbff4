"""A contract fake of vLLM's Pooling API (``POST /pooling``) serving a one-label reward model.

It enforces what vLLM's docs and request schema say (docs/models/pooling_models: reward models run the
``classify`` pooling task; the Pooling API takes the Embeddings API's input, ``input`` or chat ``messages``,
plus ``task`` and ``use_activation``) and answers errors in vLLM's error JSON,
``{"error": {"message", "type", "param", "code"}}``:

- 404 for a path other than ``/pooling``, or a ``model`` the server does not serve (``NotFoundError``);
- 400 (``BadRequestError``) for a body that is not a JSON object, neither or both of ``input``/``messages``,
  a message without a string ``role`` in system/user/assistant or a string ``content``, a ``task`` this
  model cannot run, or a non-boolean ``use_activation``.

The reward is known (:func:`reward_of`): ``0.01 * len(answer)``, plus 2 when the answer contains ``GOOD``,
plus a fixed noise per answer (the raw logit; ``use_activation`` true or absent returns its sigmoid, as vLLM's
classify activation does for one label).
"""

from __future__ import annotations

import hashlib
import json
import math

import httpx

SERVED = "Skywork/Skywork-Reward-V2-Llama-3.1-8B"
TASKS = ("classify",)  # a sequence reward model; token_classify is for token/process reward models
ROLES = ("system", "user", "assistant")


def reward_of(answer: str) -> float:
    """The fake reward model's raw reward for an answer: length, ``GOOD``, and a fixed per-answer noise in
    [−1.5, 1.5) (a hash of the answer)."""
    noise = int(hashlib.sha256(answer.encode()).hexdigest()[:8], 16) / 2**32 * 3.0 - 1.5
    return round(0.01 * len(answer) + (2.0 if "GOOD" in answer else 0.0) + noise, 6)


def _error(status: int, message: str, kind: str = "BadRequestError", param: str | None = None) -> tuple[int, dict]:
    return status, {"error": {"message": message, "type": kind, "param": param, "code": status}}


def _bad_messages(messages: object) -> str | None:
    if not isinstance(messages, list) or not messages:
        return "messages: Input should be a non-empty list"
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ROLES or not isinstance(m.get("content"), str):
            return f"messages.{i}: each message needs a role in {ROLES} and a string content"
    return None


def pooling_reply(path: str, body: object, served: str = SERVED) -> tuple[int, dict]:
    """(status, JSON body) vLLM would answer to ``POST path`` with ``body``."""
    if not path.rstrip("/").endswith("/pooling"):
        return _error(404, f"Not Found: {path}", "NotFoundError")
    if not isinstance(body, dict):
        return _error(400, "Input should be a valid dictionary")
    if body.get("model") not in (None, served):
        return _error(404, f"The model `{body.get('model')}` does not exist.", "NotFoundError", "model")
    if ("messages" in body) == ("input" in body):
        return _error(400, "Field required: exactly one of 'input' or 'messages'")
    if "messages" in body and (problem := _bad_messages(body["messages"])):
        return _error(400, problem, param="messages")
    if body.get("task", "classify") not in TASKS:
        return _error(400, f"Task {body.get('task')} is not supported by this model; supported tasks: {TASKS}",
                      param="task")
    if body.get("use_activation") not in (None, True, False):
        return _error(400, "use_activation: Input should be a valid boolean", param="use_activation")
    if "messages" in body:
        answer = next((m["content"] for m in reversed(body["messages"]) if m["role"] == "assistant"), "")
        tokens = sum(len(m["content"].split()) for m in body["messages"]) + 4
    else:
        answer = body["input"] if isinstance(body["input"], str) else json.dumps(body["input"])
        tokens = len(answer.split())
    reward = reward_of(answer)
    value = reward if body.get("use_activation") is False else 1 / (1 + math.exp(-reward))
    return 200, {"id": "pool-fake", "object": "list", "created": 0, "model": served,
                 "data": [{"index": 0, "object": "pooling", "data": [value]}],
                 "usage": {"prompt_tokens": tokens, "total_tokens": tokens, "completion_tokens": 0}}


class PoolingFake:
    """An ``httpx.MockTransport`` handler: records every request body, answers by :func:`pooling_reply`,
    and fails the first ``fail_first`` calls per answer with ``fail_status`` (e.g. 503) to exercise retries."""

    def __init__(self, fail_first: int = 0, fail_status: int = 503) -> None:
        self.bodies: list[dict] = []
        self.fail_first, self.fail_status = fail_first, fail_status
        self._seen: dict[str, int] = {}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert request.method == "POST" and request.headers["content-type"] == "application/json"
        body = json.loads(request.content)
        self.bodies.append(body)
        key = json.dumps(body, sort_keys=True)
        self._seen[key] = self._seen.get(key, 0) + 1
        if self._seen[key] <= self.fail_first:
            status, payload = _error(self.fail_status, "Service Unavailable", "ServiceUnavailableError")
        else:
            status, payload = pooling_reply(request.url.path, body)
        return httpx.Response(status, json=payload)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)
