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
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--api-key", default=os.environ.get(ENV_API_KEY), metavar="KEY",
                   help="require 'Authorization: Bearer KEY' (env LOCALSPEC_API_KEY); needed off loopback")
    p.add_argument("--model-name", metavar="ID", help="model id clients send (default: pair name or target file name)")
    p.add_argument("--max-queue", type=int, default=16, metavar="N",
                   help="requests that may wait for the engine; more get HTTP 503 with Retry-After")
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


def validate_serve_args(args) -> None:
    if not is_loopback(args.host) and not args.api_key:
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

    compute = ComputeThread("localspec-engine")
    opened = compute.call(open_from_args, args)  # where it will generate: runtime/compute_thread.py says why
    pair, engine, config = opened.pair, opened.engine, opened.config
    compute.call(warm_up, pair.target)  # as every front end does (agent/backend.py): not in the first request
    target = Path(pair.target.path)
    model_id = args.model_name or config.pair or target.stem  # the demo's pair name is "demo", as everywhere
    service = ChatService(pair, engine, model_id=model_id, defaults=config.params, fmt=fmt,
                          max_waiting=args.max_queue, aliases=(target.name, target.stem), compute=compute)
    draft = Path(pair.draft.path).name if pair.draft is not None else "none"
    print(f"localspec serve: http://{args.host}:{args.port}/v1  model '{model_id}' ({target.name}, draft {draft}, "
          f"tool format {service.fmt.name}){'  API key required' if args.api_key else ''}", file=sys.stderr)
    try:
        serve_forever(create_app(service, args.api_key), args.host, args.port)
    finally:
        service.close()
    return 0


def _serve_remote(args, remote, serve_forever, create_app) -> int:
    """Clients of this server answered by the OpenAI-compatible backend behind it (serve/forward.py)."""
    from localspec.agent.backend import connect
    from localspec.serve.forward import RemoteChatService

    backend = connect(remote).backend  # as every front end connects (agent/backend.py)
    service = RemoteChatService(backend, model_id=args.model_name, max_waiting=args.max_queue)
    print(f"localspec serve: http://{args.host}:{args.port}/v1  model '{service.model_id}' (answered by "
          f"{backend.base_url}, model {backend.model}){'  API key required' if args.api_key else ''}",
          file=sys.stderr)
    try:
        serve_forever(create_app(service, args.api_key), args.host, args.port)
    finally:
        service.close()
    return 0
