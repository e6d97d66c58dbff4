"""The OpenAI side of the API fakes: chat completions by model family (``gpt-4.1*``, the reasoning
``o4-mini`` and ``gpt-6*``, OpenAI-compatible local servers) and the Batch API's files and batches."""

from __future__ import annotations

import json
import math
import re
import uuid

from tests.judge.fake_base import (
    FakeBase,
    generation,
    is_judge_prompt,
    label_tops,
    openai_error,
    token_entry,
    top_entries,
    winner,
)

REASONING_TOKENS = 300  # what the reasoning models spend before any text
LOCAL_MODELS = ("ignores-logprobs", "spm-pieces", "dup-tokens", "think-first", "reason-first", "vllm-max5")
OPENAI_PARAMS = {"model", "messages", "max_completion_tokens", "max_tokens", "temperature", "top_p", "seed", "stop",
                 "stream", "stream_options", "n", "logprobs", "top_logprobs", "user", "reasoning_effort",
                 "response_format", "presence_penalty", "frequency_penalty", "logit_bias", "service_tier", "store",
                 "metadata"}


class OpenAIFake(FakeBase):
    """OpenAI's chat completions and Batch API, with their documented refusals."""

    batch_max_requests = 50_000
    batch_max_bytes = 200 * 1024 * 1024

    def chat(self, body: dict) -> tuple[int, dict | list[bytes]]:
        model = str(body.get("model", ""))
        msgs = body.get("messages") or []
        if unknown := sorted(set(body) - OPENAI_PARAMS):
            return openai_error(400, f"Unrecognized request argument supplied: {unknown[0]}", unknown[0])
        if not model or not isinstance(msgs, list) or not msgs:
            return openai_error(400, "'messages' and 'model' are required")
        if not is_judge_prompt(msgs) and (model.startswith(("gpt-4.1", "ft:gpt-4.1"))
                                          or not re.match(r"gpt-|o\d|ft:", model)):
            return generation(False, body)
        best = winner(msgs)
        if model.startswith(("o4-mini", "gpt-6")):
            return self._reasoning(model, body, best)
        if model in LOCAL_MODELS:
            return self._local(model, body, best)
        if not model.startswith(("gpt-4.1", "ft:gpt-4.1")):
            return openai_error(404, f"The model `{model}` does not exist or you do not have access to it.", None,
                                "model_not_found")
        if body.get("top_logprobs", 0) > 20:
            return openai_error(400, "Invalid 'top_logprobs': integer above maximum value. Expected a value <= 20, "
                                     f"but got {body['top_logprobs']} instead.", "top_logprobs",
                                "integer_above_max_value")
        n = int(body.get("n", 1))
        choices = []
        for i in range(n):
            label = best if body.get("temperature", 1) == 0 else self.sample(model, msgs, best, i)
            lp = {"content": [token_entry(label, label_tops(label))], "refusal": None} if body.get("logprobs") else None
            choices.append({"index": i, "finish_reason": "stop", "logprobs": lp,
                            "message": {"role": "assistant", "content": label, "refusal": None, "annotations": []}})
        return 200, self._completion(model, choices, 1 * n)

    def _reasoning(self, model: str, body: dict, best: str) -> tuple[int, dict]:
        gpt6 = model.startswith("gpt-6")
        if "max_tokens" in body:
            return openai_error(400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                                     "'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter")
        if "temperature" in body and (gpt6 or body["temperature"] != 1):
            if gpt6:
                return openai_error(400, "Unsupported parameter: 'temperature' is not supported with this model.",
                                    "temperature", "unsupported_parameter")
            return openai_error(400, f"Unsupported value: 'temperature' does not support {body['temperature']} "
                                     "with this model. Only the default (1) value is supported.", "temperature",
                                "unsupported_value")
        if body.get("logprobs") or "top_logprobs" in body:
            if gpt6:
                param = "top_logprobs" if "top_logprobs" in body else "logprobs"
                return openai_error(400, f"Unsupported parameter: '{param}' is not supported with this model.", param,
                                    "unsupported_parameter")
            return openai_error(403, "You are not allowed to request logprobs from this model", None, None)
        if gpt6 and int(body.get("n", 1)) != 1:
            return openai_error(400, "Unsupported parameter: 'n' is not supported with this model.", "n",
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
            content, tokens = best, [token_entry(best, label_tops(best)[:body.get("top_logprobs", 5)])]
        elif model == "spm-pieces":
            content = " " + best
            tops = label_tops(best, "\u2581")
            tops[2]["token"] = "\u0120C"
            tokens = [token_entry("\u2581" + best, tops)]
        elif model == "dup-tokens":  # the winner under two token ids with the same text: 0.35 + 0.2 > 0.4
            content = other
            tops = top_entries([(other, math.log(0.4)), (best, math.log(0.35)), (best, math.log(0.2)),
                                ("C", math.log(0.01))])
            tokens = [token_entry(other, tops)]
        elif model == "think-first":
            pieces = ["<think>", "Both", " answers", " are", " short", ".", "</think>", "\n\n", best]
            tokens = [token_entry(p) for p in pieces[:-1]] + [token_entry(best, label_tops(best))]
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
            first = top_entries([("The", -0.05), ("A", math.log(0.02)), ("B", math.log(0.01)), ("I", math.log(0.005))])
            tokens = [token_entry("The", first)] + [token_entry(p) for p in pieces[1:10]] + [
                token_entry(best, label_tops(best)), token_entry("]]")]
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
            return openai_error(400, "'purpose' must be 'batch' and a file is required", "purpose")
        fid = "file-" + uuid.uuid4().hex[:22]
        self.files[fid] = fields["file"]
        return 200, {"id": fid, "object": "file", "bytes": len(fields["file"]), "created_at": 1764720000,
                     "filename": "preflab-batch.jsonl", "purpose": "batch", "status": "processed",
                     "expires_at": None, "status_details": None}

    def create_batch(self, body: dict) -> tuple[int, dict]:
        fid = body.get("input_file_id")
        if fid not in self.files:
            return openai_error(400, f"Invalid 'input_file_id': '{fid}'. File not found.", "input_file_id")
        if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            return openai_error(400, "endpoint must be /v1/chat/completions and completion_window 24h", "endpoint")
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
            b["errors"] = {"object": "list", "data": [{"code": "batch_too_large",
                                                       "message": f"The input file has {what}.",
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
