"""Remote backends: run against an OpenAI-compatible server (vLLM, llama-server, `localspec serve`) instead of local
models, with speculative statistics taken only from what the server reports."""

from localspec.remote.client import (
                                      RemoteBackend,
                                      RemoteDone,
                                      RemoteError,
                                      RemoteReasoningDelta,
                                      RemoteTextDelta,
                                      RemoteToolCall,
)

__all__ = ["RemoteBackend", "RemoteDone", "RemoteError", "RemoteReasoningDelta", "RemoteTextDelta", "RemoteToolCall"]
