"""Errors the user can act on. The CLI prints them as one line and exits non-zero (never a traceback)."""


class LocalspecError(Exception):
    """Base class: str(exc) is a complete one-line message for the user."""

    exit_code = 1


class ModelFileError(LocalspecError):
    """A GGUF file is missing, unreadable or corrupt."""


class IncompatibleDraftError(LocalspecError):
    """The draft model cannot be paired with the target (vocabularies differ)."""


class ContextOverflowError(LocalspecError):
    """The prompt plus generation does not fit in the context window."""


class ConfigError(LocalspecError):
    """Invalid catalog, config value or command-line combination."""


class DownloadError(LocalspecError):
    """A model download failed (network, checksum, disk space)."""
