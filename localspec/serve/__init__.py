"""`localspec serve`: the speculative engine behind an OpenAI-compatible HTTP API (part of every install).

Only app.py and runner.py touch the ASGI stack (imported lazily; the command is localspec/commands/serve.py); the
rest is plain Python so the request handling, queue and metrics can be used and tested without a server.
"""
