"""Pydantic argument models: one per tool. They drive both validation and the JSON Schemas in specs()."""
from __future__ import annotations

from typing import Annotated, Any, Optional

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator


def _no_bool(value: Any) -> Any:
    # Pydantic's lax mode would turn true/false into 1/0; for a line number that is always a mistake.
    if isinstance(value, bool):
        raise ValueError("expected a number, got a boolean")
    return value


# Constraints live inside Annotated so they show up as JSON Schema keywords (minimum, ...).
LineNo = Annotated[int, Field(ge=1), BeforeValidator(_no_bool)]
MaxResults = Annotated[int, Field(ge=1, le=1000), BeforeValidator(_no_bool)]
Seconds = Annotated[float, Field(gt=0, le=600), BeforeValidator(_no_bool)]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadFileArgs(_Args):
    path: str = Field(description="File path, relative to the workspace root.")
    start_line: Optional[LineNo] = Field(None, description="First line to return (1-based, inclusive).")
    end_line: Optional[LineNo] = Field(None, description="Last line to return (1-based, inclusive).")

    @model_validator(mode="after")
    def _range(self) -> "ReadFileArgs":
        if self.start_line is not None and self.end_line is not None and self.end_line < self.start_line:
            raise ValueError(f"end_line ({self.end_line}) must be >= start_line ({self.start_line})")
        return self


class ListDirArgs(_Args):
    path: str = Field(".", description="Directory, relative to the workspace root.")
    glob: Optional[str] = Field(None, description='Only entries whose path (relative to path) matches, e.g. "*.py" '
                                                  'or "**/*.py" to recurse.')


class SearchTextArgs(_Args):
    pattern: str = Field(min_length=1, description="Regular expression (Python-like RE2 syntax; no backreferences or "
                                                    "lookaround) searched line by line.")
    path: str = Field(".", description="File or directory to search, relative to the workspace root.")
    glob: Optional[str] = Field(None, description='Only files matching this glob, e.g. "*.py" (any depth) or '
                                                  '"src/**/*.ts".')
    max_results: Optional[MaxResults] = Field(None, description="Stop after this many matching lines "
                                                                        "(default 100).")


class WriteFileArgs(_Args):
    path: str = Field(description="File path, relative to the workspace root; parent directories are created.")
    content: str = Field(description="The complete new file content.")


class EditFileArgs(_Args):
    path: str = Field(description="File path, relative to the workspace root.")
    old: str = Field(description="Exact text to replace; must occur exactly once in the file.")
    new: str = Field(description="Replacement text.")


class RunShellArgs(_Args):
    command: str = Field(min_length=1, description="Command line for /bin/sh, run in the workspace root.")
    timeout_s: Optional[Seconds] = Field(None, description="Seconds before the command and its "
                                                                        "children are killed (default 60).")
