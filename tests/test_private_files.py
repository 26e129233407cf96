"""What localspec keeps for the user stays theirs (issue 27): folders 0700 and files 0600 (conversation store with
its -wal/-shm, which holds the call history too; exports, MCP server logs), older ones tightened on open with one notice,
and no file written on the user's behalf is written through a symbolic link (a dangling one included)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from localspec import private_files
from localspec.conversations import ConversationStore, export, open_store
from localspec.conversations.exports import ExportExists

ROOT = Path(__file__).resolve().parent.parent


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path, follow_symlinks=False).st_mode)


def others_can_read(path: Path) -> bool:
    return bool(mode(path) & 0o077)



@pytest.fixture(autouse=True)
def loose_umask():
    """The usual umask (files 0644, folders 0755): what the issue found everything created with."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def localspec(*argv: str, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALSPEC_") or k == "LOCALSPEC_TEST_CACHE"}
    env.update(LOCALSPEC_HOME=str(home), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", "import os, sys; os.umask(0o022); from localspec.cli import main; "
                           "sys.exit(main())", *argv], capture_output=True, text=True, env=env, timeout=120)


def seed(home: Path) -> str:
    with open_store() as store:
        cid = store.create(title="secret plans")
        store.add_message(cid, {"role": "user", "content": "the contents of ~/.aws/credentials"})
        store.add_message(cid, {"role": "assistant", "content": "noted"})
    return cid


# ---- private by default ---------------------------------------------------------------------------------------

def test_the_conversation_store_and_its_wal_are_private(home):
    with open_store() as store:
        cid = store.create(title="x")
        store.add_message(cid, {"role": "user", "content": "hello"})
        data = home / "data"
        files = [data / "conversations.sqlite3", data / "conversations.sqlite3-wal", data / "conversations.sqlite3-shm"]
        assert all(f.exists() for f in files)
        assert mode(data) == 0o700 and [mode(f) for f in files] == [0o600] * 3


def test_exports_and_mcp_logs_are_private(home, tmp_path):
    """(The tool-call history lives in the conversation store, tested above; the JSONL transcript is gone.)"""
    from localspec.mcp.connection import Connection
    from localspec.mcp.servers_file import ServerConfig

    cid = seed(home)
    with open_store() as store:
        conv = store.get(cid, turns=True)
    default = export(conv, "md")
    chosen = export(conv, "json", tmp_path / "new-folder" / "out.json")
    logs = home / "logs"
    conn = Connection(ServerConfig(name="srv", command="true"), runner=None, log_dir=logs / "mcp", log_root=logs)
    conn._open_log().write("server said something\n")
    conn._close_log()
    for folder in (home / "data", home / "data" / "exports", tmp_path / "new-folder", logs, logs / "mcp"):
        assert mode(folder) == 0o700, folder
    for f in (default, chosen, logs / "mcp" / "srv.log"):
        assert mode(f) == 0o600, f


@pytest.mark.slow  # the CLI in subprocesses
def test_an_old_install_is_tightened_on_open_with_one_notice(home):
    data = home / "data"
    (data / "transcripts").mkdir(parents=True)
    seed(home)  # (creates the store private)
    for path in (data, data / "transcripts"):
        path.chmod(0o755)
    for name in ("conversations.sqlite3", "conversations.sqlite3-wal"):
        if (data / name).exists():
            (data / name).chmod(0o644)
    (data / "transcripts" / "old.jsonl").write_text("{}\n")
    (data / "transcripts" / "old.jsonl").chmod(0o644)
    proc = localspec("sessions", home=home)
    assert proc.returncode == 0, proc.stderr
    notices = [ln for ln in proc.stderr.splitlines() if "could be read by other users" in ln]
    assert len(notices) == 1, proc.stderr  # once, however many paths were tightened
    assert mode(data) == 0o700 and mode(data / "conversations.sqlite3") == 0o600
    proc = localspec("sessions", home=home)
    assert "could be read by other users" not in proc.stderr  # said once: nothing left to tighten


# ---- writes never follow links ----------------------------------------------------------------------------------

@pytest.fixture
def conv(home):
    cid = seed(home)
    with open_store() as store:
        return store.get(cid, turns=True)


def test_export_refuses_a_dangling_link_and_force_replaces_it(conv, tmp_path):
    victim = tmp_path / "victim" / ".bashrc"  # what a planted link points at: must never be created or written
    victim.parent.mkdir()
    link = tmp_path / "out.md"
    link.symlink_to(victim)
    with pytest.raises(ExportExists, match="symbolic link"):
        export(conv, "md", link)
    assert not victim.exists() and link.is_symlink()
    export(conv, "md", link, overwrite=True)
    assert not victim.exists() and not link.is_symlink() and "secret plans" in link.read_text()
    assert mode(link) == 0o600


def test_force_never_writes_through_a_link_to_an_existing_file(conv, tmp_path):
    victim = tmp_path / "important.txt"
    victim.write_text("keep me\n")
    link = tmp_path / "out.json"
    link.symlink_to(victim)
    with pytest.raises(ExportExists):
        export(conv, "json", link)
    export(conv, "json", link, overwrite=True)
    assert victim.read_text() == "keep me\n" and not link.is_symlink()


def test_a_link_to_a_folder_is_not_a_folder_to_export_into(conv, tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "exports-link"
    link.symlink_to(target, target_is_directory=True)
    with pytest.raises(ExportExists):
        export(conv, "md", link)
    assert list(target.iterdir()) == []


def test_default_names_step_over_planted_links(conv, home, tmp_path):
    from localspec.conversations import default_export_path

    victim = tmp_path / "victim"
    first = default_export_path(conv, "md")
    first.parent.mkdir(parents=True, exist_ok=True)
    first.symlink_to(victim)
    written = export(conv, "md")
    assert written.name.endswith("-2.md") and not victim.exists() and first.is_symlink()


@pytest.mark.slow  # the CLI in subprocesses
def test_sessions_export_cli_refuses_links_in_one_line(conv, home, tmp_path):
    victim = tmp_path / "victim"
    link = tmp_path / "x.md"
    link.symlink_to(victim)
    proc = localspec("sessions", "export", conv.id, "-o", str(link), home=home)
    assert proc.returncode == 1 and "symbolic link" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    proc = localspec("sessions", "export", conv.id, "-o", str(link), "--force", home=home)
    assert proc.returncode == 0, proc.stderr
    assert not victim.exists() and not link.is_symlink() and mode(link) == 0o600


def test_appends_and_the_store_refuse_links_and_fifos(tmp_path):
    victim = tmp_path / "victim"
    link = tmp_path / "log"
    link.symlink_to(victim)
    with pytest.raises(OSError):
        private_files.open_append(link)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError):
        private_files.open_append(tmp_path / "fifo")  # no reader: fails at once, never blocks
    db = tmp_path / "db.sqlite3"
    db.symlink_to(victim)
    from localspec.conversations import ConversationError

    with pytest.raises(ConversationError):
        ConversationStore(db)
    assert not victim.exists()


def test_the_old_history_file_is_removed_never_followed(home, tmp_path):
    from localspec.agent.drafting_memory import call_history

    victim = tmp_path / "victim"
    victim.write_text("someone else's file\n")
    history_file = home / "data" / "history" / "tool_calls.jsonl"
    history_file.parent.mkdir(parents=True)
    history_file.symlink_to(victim)
    history = call_history()  # the old file goes: the link itself, never what it points at
    history.add("text", "tool")  # no conversation: kept in memory only
    assert history.calls == ["text"] and not history_file.is_symlink()
    assert victim.read_text() == "someone else's file\n"


def test_config_writes_replace_a_link_never_its_target(home, tmp_path):
    from localspec.settings.config_toml import set_config_value

    victim = tmp_path / "victim.toml"
    victim.write_text("# mine\n")
    cfg = home / "config" / "config.toml"
    cfg.parent.mkdir(parents=True)
    set_config_value("theme", "textual-light")
    assert mode(cfg) == 0o600
    cfg.unlink()
    cfg.symlink_to(victim)
    set_config_value("theme", "textual-dark")
    assert victim.read_text() == "# mine\n" and not cfg.is_symlink()


def test_a_fresh_install_is_private_whatever_creates_the_data_folder_first(home, capsys):
    """Pulling a model before any conversation: the data folder is created 0700, so opening the store later has
    nothing to tighten and says nothing."""
    from localspec.models.paths import get_paths
    from localspec.models.registry import update_registry

    with update_registry(get_paths().registry_file):
        pass
    assert mode(home / "data") == 0o700 and mode(home / "data" / "registry.json") == 0o600
    before = len(private_files.tightened())
    seed(home)
    assert len(private_files.tightened()) == before and "could be read" not in capsys.readouterr().err
