"""The conversation store's tables, and how a database of any earlier version is brought up to this one.

The version lives in SQLite's `PRAGMA user_version`. A schema change is one new function in UPGRADES (from the
version it upgrades) and SCHEMA_VERSION one higher; each upgrade runs in its own transaction together with the new
version number, so a crash in the middle leaves the database at the version before it. A database written by a
newer localspec is refused rather than guessed at. tests/conversations/test_schema.py upgrades a database of every
earlier version (built with that version's own DDL, kept here) and checks that its conversations survive.
"""

from __future__ import annotations

import sqlite3
from typing import Callable

# Version 1: conversations, their messages and their turns (the first released schema).
V1 = """
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    updated REAL NOT NULL,
    pair TEXT,
    workspace TEXT,
    system TEXT,
    params TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    content TEXT NOT NULL DEFAULT '',
    data TEXT NOT NULL,
    stats TEXT,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages(conversation, id);
CREATE TABLE IF NOT EXISTS turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    finish_reason TEXT,
    steps INTEGER,
    error TEXT,
    stats TEXT,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS turns_by_conversation ON turns(conversation, id);
CREATE INDEX IF NOT EXISTS conversations_by_updated ON conversations(updated DESC);
"""

# Version 2: the tool calls history drafting learns from, each tied to the conversation that made it (deleting the
# conversation deletes them). Earlier versions kept them in an unbounded JSONL file beside the database.
V2 = """
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    tool TEXT,
    text TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_by_conversation ON calls(conversation);
"""

# Version 3: the generations recall drafts again (speculative/sources/recall.py): each finished reply with the tail
# of the prompt it continued, and its tokens in the vocabulary named (the same model reads them back without
# tokenising). Tied to their conversation like the calls; drafting code before this kept them in a JSONL file.
V3 = """
CREATE TABLE IF NOT EXISTS generations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    prompt TEXT NOT NULL,
    output TEXT NOT NULL,
    vocab TEXT NOT NULL DEFAULT '',
    tokens TEXT,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS generations_by_conversation ON generations(conversation);
"""

# Version 4: each call and generation also names the newest message of its conversation when it was kept (the
# message it answered, or the assistant message that made the call), so that deleting messages deletes what was
# remembered of them (ConversationStore.delete_messages). Rows kept before have NULL there: their time decides.
V4 = """
ALTER TABLE calls ADD COLUMN after_message INTEGER;
ALTER TABLE generations ADD COLUMN after_message INTEGER
"""

SCHEMA_VERSION = 4


def _to_v1(db: sqlite3.Connection) -> None:
    _script(db, V1)  # a new database (version 0): IF NOT EXISTS also covers one made before versions were kept


def _to_v2(db: sqlite3.Connection) -> None:
    _script(db, V2)


def _to_v3(db: sqlite3.Connection) -> None:
    _script(db, V3)


def _to_v4(db: sqlite3.Connection) -> None:
    _script(db, V4)


# from-version -> the function that brings a database of that version to the next one.
UPGRADES: dict[int, Callable[[sqlite3.Connection], None]] = {0: _to_v1, 1: _to_v2, 2: _to_v3, 3: _to_v4}


class NewerSchema(sqlite3.DatabaseError):
    """The database was written by a newer localspec."""


def version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def upgrade(db: sqlite3.Connection) -> int:
    """Bring `db` (autocommit mode) up to SCHEMA_VERSION, one transaction per step; returns the version it had."""
    start = version(db)
    if start > SCHEMA_VERSION:
        raise NewerSchema(f"written by a newer localspec (schema {start} > {SCHEMA_VERSION})")
    for v in range(start, SCHEMA_VERSION):
        db.execute("BEGIN IMMEDIATE")
        try:
            if version(db) == v:  # another process may have upgraded it while this one waited for the lock
                UPGRADES[v](db)
                db.execute(f"PRAGMA user_version={v + 1}")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    return start


def _script(db: sqlite3.Connection, ddl: str) -> None:
    """Run DDL statements one by one (executescript would commit the enclosing transaction)."""
    for statement in ddl.split(";"):
        if statement.strip():
            db.execute(statement)
