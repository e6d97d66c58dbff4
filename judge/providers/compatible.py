"""OpenAI-compatible servers (vLLM, llama.cpp server, Ollama, LM Studio) through httpx and a base URL.

``/v1/chat/completions`` with ``logprobs``/``top_logprobs`` for chat models, ``/v1/completions`` with
``logprobs=k`` for base models. The API key, if the server wants one, comes from an environment variable.
"""

from __future__ import annotations

import itertools
import json
import time

import httpx

from judge.providers.base import (
    Completion,
    JudgeRequest,
    ProviderError,
    api_key,
    logprob_content,
    status_error,
)


class CompatibleProvider:
    """A judge served by an OpenAI-compatible HTTP server."""

    provider = "local"
    supports_logprobs = True
    price_in = 0.0
    price_out = 0.0

    def __init__(self, model: str, base_url: str, *, completions: bool = False, timeout: float = 60.0,
                 api_key_env: str = "PREFLAB_LOCAL_API_KEY", transport: httpx.AsyncBaseTransport | None = None,
                 max_connections: int = 128, connections_per_pool: int = 8) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.completions = completions
        key = api_key(api_key_env, required=False)
        self._headers = {"content-type": "application/json", **({"authorization": f"Bearer {key}"} if key else {})}
        self._timeout = {"timeout": httpx.Timeout(timeout).as_dict()}
        # Requests go straight to httpx transports: the client layer (redirects, cookies, auth hooks) is
        # unused here and costs about a quarter of the CPU per call. httpcore's pool also scans every
        # connection for every queued request, so several small pools (round-robin) beat one big one.
        per = max(1, min(connections_per_pool, max_connections))
        limits = httpx.Limits(max_connections=per, max_keepalive_connections=per)
        ssl_context = httpx.create_ssl_context()  # loaded once, not once per pool
        self._transports = [transport] if transport is not None else [
            httpx.AsyncHTTPTransport(limits=limits, verify=ssl_context) for _ in range(max(1, max_connections // per))]
        self._next = itertools.cycle(self._transports)

    def body(self, req: JudgeRequest) -> tuple[str, dict]:
        """The endpoint path and JSON body for a request."""
        common = {"model": self.model, "max_tokens": req.max_tokens, "temperature": req.temperature}
        if req.seed is not None:
            common["seed"] = req.seed
        if self.completions:
            prompt = req.prompt if req.prompt is not None else "\n\n".join(m["content"] for m in req.messages)
            extra = {"logprobs": req.top_logprobs} if req.logprobs else {}
            return "/completions", {**common, "prompt": prompt, **extra}
        extra = {"logprobs": True, "top_logprobs": req.top_logprobs} if req.logprobs else {}
        return "/chat/completions", {**common, "messages": list(req.messages), **extra}

    async def complete(self, request: JudgeRequest) -> Completion:
        """POST one request; map transport failures and bad bodies to retryable :class:`ProviderError`."""
        path, body = self.body(request)
        req = httpx.Request("POST", self.base_url + path, content=json.dumps(body).encode(), headers=self._headers,
                            extensions=self._timeout)
        t0 = time.perf_counter()
        try:
            resp = await next(self._next).handle_async_request(req)
            try:
                await resp.aread()
            finally:
                await resp.aclose()
        except httpx.TimeoutException as e:
            raise ProviderError(f"timeout: {type(e).__name__}", retryable=True, kind="timeout") from None
        except httpx.TransportError as e:  # connection refused/reset, server disconnected
            raise ProviderError(f"connection error: {type(e).__name__}: {e}", retryable=True, kind="connection") from None
        if resp.status_code != 200:
            raise status_error(resp.status_code, resp.headers, resp.text)
        try:
            data = resp.json()
            choice = data["choices"][0]
            text = choice["message"]["content"] if "message" in choice else choice["text"]
        except (json.JSONDecodeError, KeyError, IndexError, TypeError) as e:
            raise ProviderError(f"malformed response body ({type(e).__name__})", retryable=True, kind="malformed") from None
        usage = data.get("usage") or {}
        return Completion(text or "", logprob_content(choice.get("logprobs")),
                          int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)),
                          time.perf_counter() - t0, data)

    async def aclose(self) -> None:
        """Close the connection pools."""
        for transport in self._transports:
            await transport.aclose()
