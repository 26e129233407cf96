"""Remote backends: run against an OpenAI-compatible server (vLLM, llama-server, `localspec serve`) instead of local
models, with speculative statistics taken only from what the server reports."""

from localspec.remote.backend import Done, RemoteBackend, RemoteError, TextDelta, ToolCallEvent

__all__ = ["Done", "RemoteBackend", "RemoteError", "TextDelta", "ToolCallEvent"]
