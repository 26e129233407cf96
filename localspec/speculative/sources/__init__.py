"""Candidate sources: each proposes a continuation of the context from one kind of evidence (earlier tool calls,
earlier generations, n-grams and text of the context, spans of the request, tool names, copies across JSON
escaping, the draft model). `table.py` is the open list the hybrid asks them from."""
