"""`localspec serve`: load a pair once and answer the OpenAI chat API over HTTP (loopback unless an API key is set)."""

from __future__ import annotations

import ipaddress
import os
import sys
from pathlib import Path

from localspec.commands.shared_flags import (
    add_generation_args,
    add_model_args,
    add_remote_args,
    open_from_args,
    remote_config,
)
from localspec.constants import ENV_API_KEY
from localspec.errors import ConfigError


def register(sub) -> None:
    p = sub.add_parser("serve", help="OpenAI-compatible HTTP server on the speculative engine")
    add_model_args(p)
    add_generation_args(p)  # server-side defaults for requests that leave a setting out
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    p.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    p.add_argument("--api-key", action="append", metavar="KEY",
                   help="require 'Authorization: Bearer KEY' (env LOCALSPEC_API_KEY); needed off loopback; repeat it "
                        "for several clients: each key drafts from a memory of its own")
    p.add_argument("--draft-from-history", action="store_true",
                   help="draft from your stored tool calls too (the conversation store); clients can then learn "
                        "what those calls held through the drafting statistics (docs/security.md)")
    p.add_argument("--model-name", metavar="ID", help="model id clients send (default: pair name or target file name)")
    p.add_argument("--max-queue", type=int, default=16, metavar="N",
                   help="requests that may wait for the engine (default 16); more get HTTP 503 with Retry-After")
    p.add_argument("--tool-format", metavar="NAME", help="tool-call format to use instead of the detected one")
    # The backend that answers (default: config.toml backend.kind): with openai, requests go on to that server.
    add_remote_args(p, key_flag="--backend-api-key", key_dest="backend_api_key")
    p.set_defaults(func=cmd_serve)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def api_keys(args) -> list[str]:
    """The keys clients need: every --api-key, else LOCALSPEC_API_KEY, else none."""
    given = [k for k in (getattr(args, "api_key", None) or []) if k]
    env = os.environ.get(ENV_API_KEY)
    return given or ([env] if env else [])


def validate_serve_args(args) -> None:
    if not is_loopback(args.host) and not api_keys(args):
        raise ConfigError(f"refusing to listen on {args.host} without --api-key: anyone who can reach it could use "
                          "the model (or bind 127.0.0.1)")
    if not 0 <= args.port <= 65535:
        raise ConfigError("--port must be between 0 and 65535")
    if args.max_queue < 1:
        raise ConfigError("--max-queue must be >= 1")
    if args.pair and args.target:
        raise ConfigError("give --pair or --target, not both")


def cmd_serve(args) -> int:
    validate_serve_args(args)
    # Imported here, not at the top: this module is loaded to build `localspec --help`, the server only to serve.
    from localspec.agent.backend import warm_up
    from localspec.serve.http_app import create_app
    from localspec.serve.server import serve_forever
    from localspec.serve.service import ChatService

    remote = remote_config(args, key_dest="backend_api_key")
    if remote is not None:
        return _serve_remote(args, remote, serve_forever, create_app)
    fmt = None
    if args.tool_format:
        from localspec.prompting.formats import get_format

        fmt = get_format(args.tool_format)
    from localspec.runtime.compute_thread import ComputeThread

    from localspec.agent.drafting_memory import call_history
    from localspec.speculative import CallHistory, build_engine

    keys = api_keys(args)
    # A server is a shared surface: the owner's stored calls are drafted from only when the owner says so, and
    # each key drafts from its own memory (serve/tenants.py).
    stored = list(call_history().calls) if args.draft_from_history else []
    compute = ComputeThread("localspec-engine")
    # Where it will generate: runtime/compute_thread.py says why.
    opened = compute.call(open_from_args, args, history=CallHistory(stored))
    pair, engine, config = opened.pair, opened.engine, opened.config
    compute.call(warm_up, pair.target)  # as every front end does (agent/backend.py): not in the first request
    target = Path(pair.target.path)
    model_id = args.model_name or config.pair or target.stem  # the demo's pair name is "demo", as everywhere
    service = ChatService(pair, engine, model_id=model_id, defaults=config.params, fmt=fmt,
                          max_waiting=args.max_queue, aliases=(target.name, target.stem), compute=compute,
                          more_engines=lambda: build_engine(pair, config.drafting, history=CallHistory(stored),
                                                            costs=engine.costs),
                          isolated=len(keys) > 1)
    draft = Path(pair.draft.path).name if pair.draft is not None else "none"
    required = f"  API key required ({len(keys)} keys, a drafting memory each)" if len(keys) > 1 else \
        "  API key required" if keys else ""
    print(f"localspec serve: http://{args.host}:{args.port}/v1  model '{model_id}' ({target.name}, draft {draft}, "
          f"tool format {service.fmt.name}){required}"
          f"{'  drafting from your stored tool calls' if args.draft_from_history else ''}", file=sys.stderr)
    try:
        serve_forever(create_app(service, keys), args.host, args.port)
    finally:
        service.close()
    return 0


def _serve_remote(args, remote, serve_forever, create_app) -> int:
    """Clients of this server answered by the OpenAI-compatible backend behind it (serve/forward.py)."""
    from localspec.agent.backend import connect
    from localspec.serve.forward import RemoteChatService

    backend = connect(remote).backend  # as every front end connects (agent/backend.py)
    service = RemoteChatService(backend, model_id=args.model_name, max_waiting=args.max_queue)
    keys = api_keys(args)
    print(f"localspec serve: http://{args.host}:{args.port}/v1  model '{service.model_id}' (answered by "
          f"{backend.base_url}, model {backend.model}){'  API key required' if keys else ''}",
          file=sys.stderr)
    try:
        serve_forever(create_app(service, keys), args.host, args.port)
    finally:
        service.close()
    return 0
