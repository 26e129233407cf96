"""The help screen (F1): this app's keys, what every number on the statistics panel means, where files go.

The text is built from plain functions (`help_markdown`) so a test can check it defines every figure the panel
shows, and the folders are the real ones of this run (LOCALSPEC_HOME moves them all).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Markdown

from localspec.terminal import display_text

KEYS = [
    ("Enter", "send the message"),
    ("Ctrl+J", "new line in the message, in every terminal (Shift+Enter and Alt+Enter too where the terminal "
               "reports them apart from Enter: kitty, WezTerm, foot, Ghostty; in others they send)"),
    ("paste", "inserts every pasted line into the message; nothing is sent until Enter"),
    ("Esc, Ctrl+C", "cancel the reply being written; its text so far is kept, marked cancelled (Ctrl+C with "
                    "nothing running only reminds you that Ctrl+Q quits)"),
    ("Ctrl+G", "write the last reply again (after a cancelled or failed one, or one you did not like)"),
    ("↑ (empty prompt)", "focus the last message; ↑/↓ move between messages: e edits one of yours and sends it "
                         "again in place of it and what followed, r regenerates its reply, d deletes it with its "
                         "reply, c copies it, Esc goes back to the prompt"),
    ("/tool NAME [message]", "the next message (or this one) must call the tool NAME: the agent at work with any "
                             "model; /tool alone lists the tools"),
    ("F6, /tools on|off", "tools on or off for this chat (off: no tool definitions in the prompt, a faster first "
                          "token); new chats follow tools.enabled in the settings"),
    ("F1", "this help"),
    ("F2", "models: download (p), use (Enter or u), set the default (s); Home/End first and last"),
    ("F3", "settings: config.toml (context size, threads, drafters, the backend: local or an OpenAI-compatible "
           "server), and this conversation's system prompt, temperature and max tokens"),
    ("F4", "saved conversations: open (Enter), rename (r), delete (d), search titles and messages (/; Esc or ↓ "
           "back to the list), Home/End first and last"),
    ("F5", "tools: built-in and MCP servers' tools, each server's state; Space switches a server off for the session"),
    ("Ctrl+N", "new conversation (the current one stays saved: F4 reopens it)"),
    ("Ctrl+R", "reasoning models: think before answering, or not (default: reasoning.thinking in settings)"),
    ("Ctrl+T", "statistics panel on or off (below 100 columns it folds into a one-line summary)"),
    ("Ctrl+O", "colour each token by who proposed it (legend in the panel)"),
    ("Ctrl+Y", "copy the last reply (c copies a focused message)"),
    ("Ctrl+S", "save (export) the conversation as Markdown or JSON, to a path you choose (default: exports/ in "
               "the data folder)"),
    ("Ctrl+P", "command palette: every command, including the approval mode"),
    ("Ctrl+Q", "quit"),
]

# Every figure on the statistics panel, in the panel's words: a test checks each label the panel shows is here.
FIGURES = [
    ("tokens", "tokens the model wrote this turn (answer and tool calls), and the target passes that wrote them."),
    ("passes", "forward passes of the target model that emitted at least one token. The first token of a reply "
               "comes from the pass over the prompt; processing the prompt (prefill) is otherwise not a pass, and a "
               "last pass that only finds the end of the reply is not counted."),
    ("tokens / pass", "tokens ÷ passes: 1.00 without speculation, higher when drafted tokens were accepted, never "
                      "below 1."),
    ("acceptance", "drafted tokens the target accepted ÷ tokens drafted (– when nothing was drafted)."),
    ("tokens / s", "tokens ÷ generation time, from the first token (prompt processing excluded); the sparkline "
                   "plots it over the turn."),
    ("est. speedup", "how many times faster than the target model alone: tokens × what one token costs with the "
                     "target alone (a single-token pass, judging its row and the loop's own time, measured on this "
                     "machine during the reply) ÷ the reply's generation time, drafting and every drafted pass at "
                     "its measured cost included. Exactly 1.00x when nothing was drafted (that was the target "
                     "alone); – until a step has been measured. Never above tokens / pass (a batched pass costs at "
                     "least a single-token one). When drafting costs more than it saves, the panel says what to "
                     "try; a drafter that switched itself off is listed with its reason."),
    ("first token", "how long the turn waited for its first token (the prompt rendered and read, and the first "
                    "pass), and how many prompt tokens were not read again: kept from the last prompt or restored "
                    "from the saved system prompt and tool definitions. While a long prompt is read, the panel says "
                    "\"reading prompt: N of M tokens\" with the rate."),
    ("draft model", "\"translated\" when the draft model is of another family than the target (another tokenizer): "
                    "its text is tokenized again with the target's vocabulary, and the target checks every token "
                    "as always, so the reply is the same."),
    ("measured by", "with a remote backend: the server that reported the figures (llama-server, vLLM, localspec); "
                    "what it does not report shows as –."),
    ("drafted / accepted", "per drafting source (draft model, schema, history, n-gram): tokens it proposed, and "
                           "how many the target kept."),
    ("Session", "the same figures summed over the turns of this conversation (a new conversation restarts them)."),
]

HEADER = [
    ("workspace", "the folder the tools read, write and run commands in (--workspace)"),
    ("tools", "on: the model may call file and shell tools; off: it only answers"),
    ("approval", "ask: writes and shell commands wait for your yes · read-only: only reading tools run · "
                 "auto: everything runs (change it in the palette or settings)"),
]


def _cell(text: str) -> str:
    """A table cell's text: a `|` in it would end the cell ("/tools on|off"), escaped it is shown."""
    return text.replace("|", "\\|")


def _table(rows: list[tuple[str, str]], head: tuple[str, str]) -> str:
    lines = [f"| {head[0]} | {head[1]} |", "|---|---|"]
    lines += [f"| {_cell(k)} | {_cell(v)} |" for k, v in rows]
    return "\n".join(lines)


def folders() -> list[tuple[str, str]]:
    from localspec.models.paths import get_paths
    from localspec.tui.widgets.top_bar import short_path

    p = get_paths()
    return [
        ("settings", f"`{short_path(p.config_file)}` (`localspec config show`; LOCALSPEC_<KEY> variables override "
                     "it)"),
        ("models", f"`{short_path(p.models_dir)}` (downloads; `{p.registry_file.name}` lists what is installed)"),
        ("conversations and history", f"`{short_path(p.data_dir)}` (saved conversations, with the tool calls that "
                                      "history drafting learns from)"),
        ("cache", f"`{short_path(p.cache_dir)}`"),
        ("logs", f"`{short_path(p.log_dir)}` (LOCALSPEC_LOG=debug writes the debug log there)"),
        ("LOCALSPEC_HOME", "set it to keep all of these under one folder"),
    ]


def help_markdown() -> str:
    return "\n\n".join([
        "# localspec help  (Esc closes)",
        "## Keys", _table(KEYS, ("key", "what it does")),
        "## The statistics panel", _table(FIGURES, ("figure", "what it means")),
        "## The header", _table(HEADER, ("field", "what it means")),
        "## Where files go", _table(folders(), ("what", "where")),
    ])


class HelpScreen(Screen):
    BINDINGS = [
        Binding("escape", "close", "Back"),
        Binding("f1", "close", "Back", show=False),
        Binding("q", "close", "Back", show=False),
    ]

    def __init__(self) -> None:
        super().__init__(id="help")

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Markdown(display_text(help_markdown()), id="help-text")  # folder names can hold anything
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#help-body").focus()

    def action_close(self) -> None:
        self.dismiss()
