"""The Anthropic side of the API fakes: Messages at ``anthropic-version: 2026-10-21`` (no sampling
parameters; ``claude-*-5*`` models think by default, within ``max_tokens``) and Message Batches."""

from __future__ import annotations

import re
import uuid

from tests.judge.fake_base import FakeBase, generation, is_judge_prompt, winner

ANTHROPIC_VERSION = "2026-10-21"
_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
THINKING_TOKENS = 400
ANTHROPIC_PARAMS = {"model", "messages", "max_tokens", "system", "stop_sequences", "stream", "metadata", "thinking",
                    "service_tier", "tools", "tool_choice"}


#: Refused at this API version, even at their default values ("temperature: Extra inputs are not permitted").
SAMPLING = ("temperature", "top_p", "top_k")


def request_problem(body: dict, version: str | None) -> str | None:
    """The ``invalid_request_error`` message Messages answers a request with; None for a valid request."""
    if version != ANTHROPIC_VERSION:
        return f"anthropic-version: {version!r} is not supported by this fake"
    if sampling := next((p for p in SAMPLING if p in body), None):
        return f"{sampling}: Extra inputs are not permitted"
    if missing := next((f for f in ("model", "max_tokens", "messages") if f not in body), None):
        return f"{missing}: Field required"
    if extra := sorted(set(body) - ANTHROPIC_PARAMS):
        return f"{extra[0]}: Extra inputs are not permitted"
    if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
        return "max_tokens: Input should be greater than or equal to 1"
    msgs = body["messages"]
    if not isinstance(msgs, list) or not msgs or msgs[0].get("role") != "user" or any(
            m.get("role") not in ("user", "assistant") for m in msgs):
        return "messages: roles must be user/assistant, starting with user"
    return None


class AnthropicFake(FakeBase):
    """Anthropic's Messages and Message Batches, with their documented refusals."""

    def message(self, body: dict, version: str | None) -> tuple[int, dict]:
        if problem := request_problem(body, version):
            if (param := problem.partition(":")[0]) in SAMPLING:
                self.refusals.append(param)
            return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": problem},
                         "request_id": "req_" + uuid.uuid4().hex[:24]}
        model, budget = str(body["model"]), int(body["max_tokens"])
        thinks = re.search(r"-5(?:-|$)", model) is not None and (body.get("thinking") or {}).get("type") != "disabled"
        if not is_judge_prompt(body["messages"]):
            return generation(True, body, min(budget, THINKING_TOKENS) if thinks else 0)
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
