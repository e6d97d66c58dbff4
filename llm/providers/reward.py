"""Reward models served over HTTP the way users serve them: vLLM's Pooling API.

A Bradley-Terry reward model (Skywork-Reward-V2, InternLM2-Reward's sequence head, any
``*ForSequenceClassification`` with one label) runs under ``vllm serve MODEL --runner pooling``; vLLM's docs
(Pooling models → Reward usage) list sequence reward models under the ``classify`` pooling task, served online
by the Pooling API. One answer is one request::

    POST {base}/pooling
    {"model": M, "messages": [{"role": "user", "content": PROMPT}, {"role": "assistant", "content": ANSWER}],
     "task": "classify", "use_activation": false}
    -> {"object": "list", "model": M, "data": [{"index": 0, "object": "pooling", "data": [REWARD]}],
        "usage": {"prompt_tokens": N, ...}}

``messages`` lets the server apply the model's own chat template (what the RM was trained on);
``use_activation: false`` returns the raw logit (the reward), not a sigmoid of it. Errors come back as
``{"error": {"message", "type", "code"}}`` (older servers: ``{"object": "error", "message", ...}``).
Hugging Face text-embeddings-inference's ``/predict`` is not used: it takes plain text and applies no chat
template, so a chat-trained reward model would score a text it never saw in training.
"""

from __future__ import annotations

import itertools
import json
import time

import httpx

from llm.providers.base import Completion, ProviderError, api_key, status_error
from llm.providers.compatible import send

PATH = "/pooling"


def reward_messages(prompt: str, answer: str, system: str | None = None) -> tuple[dict, ...]:
    """The conversation a reward model scores: (system,) user prompt, assistant answer."""
    head = ({"role": "system", "content": system},) if system else ()
    return (*head, {"role": "user", "content": prompt}, {"role": "assistant", "content": answer})


def error_detail(text: str) -> str:
    """The message of vLLM's error JSON (either shape), else the body itself."""
    try:
        body = json.loads(text)
    except json.JSONDecodeError:
        return text
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
    return text


def parse_score(data: object) -> float:
    """The reward in a Pooling API response: ``data[0].data`` is ``[reward]`` (one label) or the reward itself."""
    value = data["data"][0]["data"]  # type: ignore[index]
    while isinstance(value, list):
        if len(value) != 1:
            raise ValueError(f"{len(value)} outputs, not one reward: is this a one-label reward model?")
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("the reward is not a number")
    return float(value)


class RewardProvider:
    """A reward model behind vLLM's ``/pooling`` (``base_url`` without the path, e.g. http://127.0.0.1:8000)."""

    provider = "reward"

    def __init__(self, model: str, base_url: str, *, timeout: float = 60.0,
                 api_key_env: str = "PREFLAB_LOCAL_API_KEY", transport: httpx.AsyncBaseTransport | None = None,
                 max_connections: int = 128, connections_per_pool: int = 8) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        key = api_key(api_key_env, required=False)
        self._headers = {"content-type": "application/json", **({"authorization": f"Bearer {key}"} if key else {})}
        self._timeout = {"timeout": httpx.Timeout(timeout).as_dict()}
        per = max(1, min(connections_per_pool, max_connections))  # several small pools: see CompatibleProvider
        limits = httpx.Limits(max_connections=per, max_keepalive_connections=per)
        if transport is not None:
            self._transports = [transport]
        else:
            ssl_context = httpx.create_ssl_context()  # loaded once (each load reads the CA bundle), not per pool
            self._transports = [httpx.AsyncHTTPTransport(limits=limits, verify=ssl_context)
                                for _ in range(max(1, max_connections // per))]
        self._next = itertools.cycle(self._transports)

    @property
    def spec(self) -> str:
        return f"reward:{self.base_url}#{self.model}"

    def body(self, messages: tuple[dict, ...]) -> dict:
        """The JSON body for one answer (the cache key's params come from it too)."""
        return {"model": self.model, "messages": list(messages), "task": "classify", "use_activation": False}

    async def score(self, messages: tuple[dict, ...]) -> Completion:
        """One reward as a :class:`Completion` (``text`` is the reward as written by ``repr``, so the call
        cache stores it like a verdict); transport failures, 429/5xx and malformed bodies are retryable."""
        req = httpx.Request("POST", self.base_url + PATH, content=json.dumps(self.body(messages)).encode(),
                            headers=self._headers, extensions=self._timeout)
        t0 = time.perf_counter()
        resp = await send(next(self._next), req, self.base_url)
        if resp.status_code != 200:
            raise status_error(resp.status_code, resp.headers, error_detail(resp.text))
        try:
            data = resp.json()
            reward = parse_score(data)
        except (json.JSONDecodeError, KeyError, IndexError, TypeError) as e:
            raise ProviderError(f"malformed response body ({type(e).__name__}: {e})", retryable=True,
                                kind="malformed") from None
        except ValueError as e:
            raise ProviderError(f"{self.model}: {e}", retryable=False, kind="not-a-reward-model") from None
        usage = data.get("usage") or {}
        return Completion(repr(reward), None, int(usage.get("prompt_tokens") or 0), 0, time.perf_counter() - t0,
                          {"served": {"model": data.get("model")}})

    async def aclose(self) -> None:
        for transport in self._transports:
            await transport.aclose()


def parse_reward_spec(spec: str) -> tuple[str, str]:
    """``reward:URL#MODEL`` (or ``URL#MODEL``) -> (base URL, model)."""
    body = spec.removeprefix("reward:")
    url, sep, model = body.rpartition("#")
    if not sep or not url.startswith(("http://", "https://")) or not model:
        raise ValueError(f"--reward-model {spec!r}: write reward:http://HOST:PORT#MODEL (the vLLM server's base "
                         "URL and the served model name)")
    return url, model
