"""The conversation store: one SQLite database (<data dir>/conversations.sqlite3) shared by the app and the CLI.

Why SQLite in WAL mode, one transaction per message: a crash (or a killed terminal) loses at most the reply being
generated, readers (`localspec sessions` in another terminal) never block the writer, and two processes can record
at once. Every query is parameterised: titles, message text and IDs come from users and models.
"""

from __future__ import annotations

import builtins
import json
import re
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from localspec.conversations.migrations import SCHEMA_VERSION, upgrade
from localspec.errors import LocalspecError
from localspec.private_files import precreate, private_dir

__all__ = ["Conversation", "ConversationError", "ConversationStore", "GENERATION_CHARS", "HISTORY_CALLS", "HISTORY_CHARS",
           "SCHEMA_VERSION", "default_db_path", "find_saved", "open_store", "title_from"]

TITLE_CHARS = 60

# The tool-call history (what history drafting learns from): the newest calls across all conversations, at most
# HISTORY_CALLS of them and HISTORY_CHARS characters of call text together (a call that wrote a file holds the file);
# older ones are deleted as new ones come. Each call belongs to its conversation: deleting that deletes it.
HISTORY_CALLS = 2000
HISTORY_CHARS = 4_000_000
# The generations recall drafts again (speculative/sources/recall.py), the newest first, at most GENERATION_CHARS
# characters of prompt tail and reply together; older ones go as new ones come, and with their conversation.
GENERATION_CHARS = 1_000_000


class ConversationError(LocalspecError):
    """The store cannot be opened or written, or a conversation ID names nothing."""


def default_db_path() -> Path:
    from localspec.models.paths import get_paths

    return get_paths().data_dir / "conversations.sqlite3"


def open_store(path: Path | str | None = None) -> "ConversationStore":
    return ConversationStore(path if path is not None else default_db_path())


def find_saved(resume: str | None = None, latest: bool = False, *, messages: bool = True) -> "Conversation | None":
    """The conversation a user asked to continue: `resume` (an ID or unique prefix) or the latest one; None when
    neither was asked for. ConversationError when it does not exist."""
    if not resume and not latest:
        return None
    with open_store() as store:
        if resume:
            return store.get(resume, messages=messages)
        found = store.list(limit=1)
        if not found:
            raise ConversationError("there is no saved conversation yet to continue")
        return store.get(found[0].id, messages=messages)


def title_from(text: str) -> str:
    """A title from a first message: its first non-empty line, whitespace collapsed, at most TITLE_CHARS."""
    line = next((ln for ln in (text or "").splitlines() if ln.strip()), "")
    line = re.sub(r"\s+", " ", line).strip()
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class Conversation:
    id: str
    title: str
    created: float
    updated: float
    pair: str | None = None
    workspace: str | None = None
    system: str | None = None
    params: dict = field(default_factory=dict)
    message_count: int = 0
    messages: list[dict] | None = None  # loaded on request (get(), list(messages=True))
    turns: list[dict] | None = None

    @property
    def display_title(self) -> str:
        return self.title or "(untitled)"

    def history(self) -> list[dict]:
        """The chat-template messages to continue from: the system prompt first, then every stored message."""
        system = [{"role": "system", "content": self.system}] if self.system else []
        return system + [dict(m) for m in self.messages or []]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (`localspec sessions --json`, JSON export)."""
        out: dict[str, Any] = {
            "id": self.id, "title": self.title, "created": iso(self.created), "updated": iso(self.updated),
            "pair": self.pair, "workspace": self.workspace, "system": self.system, "params": self.params,
            "message_count": self.message_count}
        if self.messages is not None:
            out["messages"] = self.messages
        if self.turns is not None:
            out["turns"] = self.turns
        return out


class ConversationStore:  # `builtins.list` below: the method list() shadows the name in the class body
    """Thread-safe (one connection, one lock): the app records from its worker threads and reads on the UI thread."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            # Private (0700 folder, 0600 files): the store holds everything the agent read. SQLite gives its -wal
            # and -shm files the database's mode, so a private database keeps them private too.
            private_dir(self.path.parent)
            precreate(self.path, companions=("-wal", "-shm", "-journal"))
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=10.0)
        except (OSError, sqlite3.Error) as exc:
            raise ConversationError(f"cannot open the conversation store {self.path}: {_why(exc)}") from None
        try:
            self._setup()
        except sqlite3.Error as exc:
            self._db.close()
            raise ConversationError(f"cannot open the conversation store {self.path}: {_why(exc)}") from None

    def _setup(self) -> None:
        db = self._db
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a committed message survives a crash of the app
        db.execute("PRAGMA foreign_keys=ON")
        upgrade(db)  # conversations/migrations.py: a database of an earlier version is upgraded in place

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> "ConversationStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- writing ------------------------------------------------------------------------------------------------
    def create(self, *, title: str = "", pair: str | None = None, workspace: str | None = None,
               system: str | None = None, params: dict | None = None) -> str:
        now = time.time()
        for _ in range(8):
            cid = secrets.token_hex(4)
            try:
                self._write("INSERT INTO conversations (id, title, created, updated, pair, workspace, system, params) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            (cid, title_from(title), now, now, pair, workspace, system, _dump(params or {})))
                return cid
            except sqlite3.IntegrityError:
                continue  # an ID collision: draw another
        raise ConversationError("could not allocate a conversation ID")

    def add_message(self, cid: str, message: dict, *, stats: dict | None = None,
                    meta: dict | None = None) -> None:
        """Append one message, give an untitled conversation its title and apply `meta` (pair, workspace, system,
        params as they are now), all in one transaction."""
        meta = _fields(meta or {})
        role = str(message.get("role", ""))
        content = message.get("content")
        text = content if isinstance(content, str) else ("" if content is None else _dump(content))
        now = time.time()

        def tx(db):
            db.execute("INSERT INTO messages (conversation, role, content, data, stats, created) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       (cid, role, text, _dump(message), _dump(stats) if stats else None, now))
            db.execute("UPDATE conversations SET updated = ?, title = CASE WHEN title = '' AND ? = 'user' "
                       "THEN ? ELSE title END WHERE id = ?", (now, role, title_from(text), cid))
            if meta:
                db.execute(f"UPDATE conversations SET {', '.join(f'{n} = ?' for n in meta)} WHERE id = ?",
                           (*meta.values(), cid))
        self._transaction(tx, cid)

    def add_turn(self, cid: str, *, finish_reason: str | None, steps: int | None = None, error: str | None = None,
                 stats: dict | None = None) -> None:
        now = time.time()

        def tx(db):
            db.execute("INSERT INTO turns (conversation, finish_reason, steps, error, stats, created) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       (cid, finish_reason, steps, error, _dump(stats) if stats else None, now))
            db.execute("UPDATE conversations SET updated = ? WHERE id = ?", (now, cid))
        self._transaction(tx, cid)

    def update(self, cid: str, **fields: Any) -> None:
        """Change pair, workspace, system or params (what the conversation runs with now)."""
        columns = _fields(fields)
        if columns:
            self._write(f"UPDATE conversations SET {', '.join(f'{n} = ?' for n in columns)} WHERE id = ?",
                        (*columns.values(), cid), must_change=cid)

    def rename(self, cid: str, title: str) -> str:
        title = re.sub(r"\s+", " ", title or "").strip()
        if not title:
            raise ConversationError("a title cannot be empty")
        self._write("UPDATE conversations SET title = ? WHERE id = ?", (title, cid), must_change=cid)
        return title

    def untitle(self, cid: str) -> None:
        """No title until the next question names it (its only question was deleted: its text must not stay)."""
        self._write("UPDATE conversations SET title = '' WHERE id = ?", (cid,), must_change=cid)

    def delete(self, cid: str) -> None:
        self._write("DELETE FROM conversations WHERE id = ?", (cid,), must_change=cid)

    def add_call(self, cid: str, text: str, tool: str | None = None) -> None:
        """Remember a finished tool call of conversation `cid` for history drafting; the oldest calls beyond
        HISTORY_CALLS or HISTORY_CHARS go in the same transaction."""
        now = time.time()

        def tx(db):
            db.execute("INSERT INTO calls (conversation, tool, text, created, after_message) VALUES (?, ?, ?, ?, "
                       f"{_NEWEST_MESSAGE})", (cid, tool, text, now, cid))
            db.execute("DELETE FROM calls WHERE id IN (SELECT id FROM (SELECT id, "
                       "ROW_NUMBER() OVER (ORDER BY id DESC) AS n, "
                       "SUM(LENGTH(text)) OVER (ORDER BY id DESC) AS chars FROM calls) "
                       "WHERE n > ? OR chars > ?)", (HISTORY_CALLS, HISTORY_CHARS))
        self._transaction(tx, cid)

    def add_generation(self, cid: str, prompt: str, output: str, vocab: str = "",
                       tokens: Sequence[int] = ()) -> None:
        """Remember a finished generation of conversation `cid` for recall drafting (the prompt's tail, the reply,
        and its tokens in vocabulary `vocab`); the oldest beyond GENERATION_CHARS go in the same transaction."""
        now = time.time()
        toks = json.dumps([int(t) for t in tokens]) if vocab and tokens else None

        def tx(db):
            db.execute("INSERT INTO generations (conversation, prompt, output, vocab, tokens, created, after_message) "
                       f"VALUES (?, ?, ?, ?, ?, ?, {_NEWEST_MESSAGE})", (cid, prompt, output, vocab, toks, now, cid))
            db.execute("DELETE FROM generations WHERE id IN (SELECT id FROM (SELECT id, "
                       "SUM(LENGTH(prompt) + LENGTH(output)) OVER (ORDER BY id DESC) AS chars FROM generations) "
                       "WHERE chars > ?)", (GENERATION_CHARS,))
        self._transaction(tx, cid)

    def delete_messages(self, cid: str, start: int, stop: int | None = None) -> int:
        """Delete the conversation's messages from position `start` up to `stop` (exclusive; None: to the end), in
        the order messages() gives them, in one transaction (the app's edit, regenerate and delete). Returns how
        many went.

        What drafting remembered from the first deleted message on goes with them: the calls and generations kept
        after the message before it (a reply's generation is kept before the reply is, and later generations hold
        the tail of a prompt that quoted the deleted text), so recall and `serve --draft-from-history` never draft
        from a deleted message again. Kept messages after a deleted range lose only their drafting hints."""
        if start < 0 or (stop is not None and stop < start):
            raise ValueError(f"bad message range {start}:{stop}")
        gone = 0

        def tx(db):
            nonlocal gone
            rows = db.execute("SELECT id, created FROM messages WHERE conversation = ? ORDER BY id",
                              (cid,)).fetchall()
            ids = [r[0] for r in rows[start:stop]]
            if ids:
                _forget_from(db, cid, rows[start - 1] if start > 0 else None)
            db.executemany("DELETE FROM messages WHERE id = ?", [(i,) for i in ids])
            db.execute("UPDATE conversations SET updated = ? WHERE id = ?", (time.time(), cid))
            gone = len(ids)
        self._transaction(tx, cid)
        return gone

    # -- reading ------------------------------------------------------------------------------------------------
    def recent_calls(self, limit: int = HISTORY_CALLS) -> list[str]:
        """The newest `limit` remembered tool calls' text, oldest first (what history drafting starts from)."""
        rows = self._read("SELECT text FROM calls ORDER BY id DESC LIMIT ?", (int(limit),))
        return [text for (text,) in reversed(rows)]

    def recent_generations(self) -> builtins.list[dict]:
        """The remembered generations, oldest first: {"prompt", "output"}, and "vocab" and "tokens" where kept."""
        out: builtins.list[dict] = []
        for prompt, output, vocab, tokens in self._read("SELECT prompt, output, vocab, tokens FROM generations "
                                                        "ORDER BY id"):
            row: dict = {"prompt": prompt, "output": output}
            if vocab and tokens:
                try:
                    row.update(vocab=vocab, tokens=[int(t) for t in json.loads(tokens)])
                except (ValueError, TypeError):
                    pass  # damaged tokens: the text is read instead
            out.append(row)
        return out

    def resolve(self, ref: str) -> str:
        """A full ID, or a unique prefix of one (what a user types after `--resume`)."""
        ref = (ref or "").strip()
        if not ref:
            raise ConversationError("no conversation ID given")
        prefix = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self._read("SELECT id FROM conversations WHERE id = ? OR id LIKE ? ESCAPE '\\' LIMIT 3",
                          (ref, prefix))
        ids = [r[0] for r in rows]
        if ref in ids:
            return ref
        if not ids:
            raise ConversationError(f"no conversation {ref!r} (`localspec sessions` lists them)")
        if len(ids) > 1:
            raise ConversationError(f"{ref!r} matches several conversations: give more of the ID")
        return ids[0]

    def get(self, ref: str, *, messages: bool = True, turns: bool = False) -> Conversation:
        cid = self.resolve(ref)
        rows = self._read(_SELECT + " WHERE c.id = ?", (cid,))
        if not rows:
            raise ConversationError(f"no conversation {ref!r} (`localspec sessions` lists them)")
        conv = _conversation(rows[0])
        if messages:
            conv.messages = self.messages(cid)
        if turns:
            conv.turns = self.turns(cid)
        return conv

    def latest(self) -> Conversation | None:
        found = self.list(limit=1)
        return self.get(found[0].id) if found else None

    def list(self, search: str | None = None, *, limit: int | None = None,
             messages: bool = False) -> builtins.list[Conversation]:
        """Newest activity first; `search` matches titles and message text (case-insensitive, a plain
        substring)."""
        sql, args = _SELECT, builtins.list[Any]()
        if search:
            like = "%" + search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            sql += (" WHERE c.title LIKE ? ESCAPE '\\' OR EXISTS (SELECT 1 FROM messages m WHERE m.conversation = c.id"
                    " AND m.content LIKE ? ESCAPE '\\')")
            args += [like, like]
        sql += " ORDER BY c.updated DESC, c.rowid DESC"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(int(limit))
        out = [_conversation(r) for r in self._read(sql, tuple(args))]
        if messages:
            for conv in out:
                conv.messages = self.messages(conv.id)
        return out

    def messages(self, cid: str) -> builtins.list[dict]:
        rows = self._read("SELECT data, stats FROM messages WHERE conversation = ? ORDER BY id", (cid,))
        out = []
        for data, stats in rows:
            msg = _load(data, {})
            msg.setdefault("content", "")
            out.append(msg)
        return out

    def message_stats(self, cid: str) -> builtins.list[dict | None]:
        """Per message (same order as messages()): the statistics of the step that wrote it, or None."""
        return [_load(s, None) for (s,) in self._read("SELECT stats FROM messages WHERE conversation = ? "
                                                     "ORDER BY id", (cid,))]

    def turns(self, cid: str) -> builtins.list[dict]:
        rows = self._read("SELECT finish_reason, steps, error, stats, created FROM turns WHERE conversation = ? "
                          "ORDER BY id", (cid,))
        return [{"finish_reason": f, "steps": n, "error": e, "stats": _load(s, None), "time": iso(t)}
                for f, n, e, s, t in rows]

    # -- plumbing -----------------------------------------------------------------------------------------------
    def _read(self, sql: str, args: tuple = ()) -> builtins.list[tuple]:
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                raise ConversationError(f"conversation store {self.path}: {_why(exc)}") from None

    def _write(self, sql: str, args: tuple, *, must_change: str | None = None) -> None:
        with self._lock:
            try:
                cur = self._db.execute(sql, args)
            except sqlite3.IntegrityError:
                raise
            except sqlite3.Error as exc:
                raise ConversationError(f"conversation store {self.path}: {_why(exc)}") from None
        if must_change is not None and cur.rowcount == 0:
            raise ConversationError(f"no conversation {must_change!r} (`localspec sessions` lists them)")

    def _transaction(self, body, cid: str) -> None:
        with self._lock:
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
                try:
                    if db.execute("SELECT 1 FROM conversations WHERE id = ?", (cid,)).fetchone() is None:
                        raise ConversationError(f"no conversation {cid!r} (it was deleted)")
                    body(db)
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise ConversationError(f"conversation store {self.path}: {_why(exc)}") from None


# The newest message of the conversation named by the statement's last parameter: what a call or generation
# follows (migrations.py, version 4).
_NEWEST_MESSAGE = "(SELECT MAX(id) FROM messages WHERE conversation = ?)"


def _forget_from(db, cid: str, before: tuple | None) -> None:
    """Delete the conversation's calls and generations kept after message `before` (id, created) was; all of
    them when None. Rows from before schema 4 name no message: their time decides."""
    for table in ("calls", "generations"):  # fixed names, never input
        if before is None:
            db.execute(f"DELETE FROM {table} WHERE conversation = ?", (cid,))
        else:
            db.execute(f"DELETE FROM {table} WHERE conversation = ? AND (after_message >= ? OR "
                       "(after_message IS NULL AND created >= ?))", (cid, *before))


_SELECT = ("SELECT c.id, c.title, c.created, c.updated, c.pair, c.workspace, c.system, c.params, "
           "(SELECT COUNT(*) FROM messages m WHERE m.conversation = c.id) FROM conversations c")


def _conversation(row: tuple) -> Conversation:
    cid, title, created, updated, pair, workspace, system, params, count = row
    return Conversation(cid, title, created, updated, pair, workspace, system, _load(params, {}), count)


def _fields(fields: dict) -> dict:
    """Column values for the conversation's settings; the names are checked because they end up in SQL text."""
    bad = set(fields) - {"pair", "workspace", "system", "params"}
    if bad:
        raise ValueError(f"unknown conversation field(s): {', '.join(sorted(bad))}")
    return {n: _dump(v) if n == "params" else v for n, v in sorted(fields.items())}


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _load(text: str | None, default: Any) -> Any:
    if text is None:
        return default
    try:
        return json.loads(text)
    except ValueError:
        return default


def _why(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
