"""OpenAI response objects: chat.completion, chat.completion.chunk, the model list; plus our `localspec` field."""

from __future__ import annotations

import time
import uuid
from typing import Any

from localspec.serve.generate import DoneEvent


def new_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex[:24]}"


def usage(done: DoneEvent) -> dict:
    """OpenAI's usage, with its `prompt_tokens_details.cached_tokens`: the prompt tokens this request did not compute
    (the previous request's common prefix, or a saved system prompt + tools prefix)."""
    return {"prompt_tokens": done.prompt_tokens, "completion_tokens": done.completion_tokens,
            "total_tokens": done.prompt_tokens + done.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": done.stats.reused_prefix_tokens}}


def spec_stats(done: DoneEvent) -> dict:
    """The `localspec` field: drafted, accepted, acceptance_rate, mean_accepted_length, drafters, timings..."""
    return done.stats.to_dict()


def completion(rid: str, created: int, model_id: str, done: DoneEvent) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": done.content if done.content or not done.tool_calls else None,
               "refusal": None}
    if done.reasoning:  # llama-server's --reasoning-format deepseek
        message["reasoning_content"] = done.reasoning
    if done.tool_calls:
        message["tool_calls"] = done.tool_calls
    return {"id": rid, "object": "chat.completion", "created": created, "model": model_id,
            "system_fingerprint": None,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": done.finish_reason}],
            "usage": usage(done), "localspec": spec_stats(done)}


def chunk(rid: str, created: int, model_id: str, delta: dict | None, finish_reason: str | None = None,
          **extra) -> dict:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None,
                                         "finish_reason": finish_reason}]
    return {"id": rid, "object": "chat.completion.chunk", "created": created, "model": model_id,
            "system_fingerprint": None, "choices": choices, **extra}


def stream_calls_delta(calls: list[dict]) -> dict:
    return {"tool_calls": [{"index": i, **c} for i, c in enumerate(calls)]}


def model_card(model_id: str, created: int, **meta) -> dict:
    return {"id": model_id, "object": "model", "created": created, "owned_by": "localspec", **meta}


def now() -> int:
    return int(time.time())
