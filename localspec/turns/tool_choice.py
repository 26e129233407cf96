"""What a turn may do about tools, parsed once from whatever the user or the client wrote (the app's /tool NAME,
`run --tool-choice`, an OpenAI request's `tool_choice`) and passed as this one value down to the turn engine and
back out to a server (remote/turns.py)."""

from __future__ import annotations

from dataclasses import dataclass

from localspec.errors import ConfigError

AUTO, REQUIRED, NONE = "auto", "required", "none"
MODES = (AUTO, REQUIRED, NONE)


@dataclass(frozen=True)
class ToolChoice:
    """`mode` "auto": free text, then a call where the model writes the format's trigger; "required": the turn starts
    inside a call; "none": no call (text up to a trigger is the answer). `name`: the one tool a required call must
    use (a named choice)."""

    mode: str = AUTO
    name: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"tool choice mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.name is not None and self.mode != REQUIRED:
            raise ValueError("only a required tool choice names a tool")

    @classmethod
    def parse(cls, value: ToolChoice | str | dict | None) -> ToolChoice:
        """"auto", "required", "none", a tool's name, or OpenAI's {"type": "function", "function": {"name": ...}};
        None is "auto". Whether a named tool exists is for whoever holds the tools to say."""
        if isinstance(value, ToolChoice):
            return value
        if value is None:
            return cls()
        if isinstance(value, dict):
            name = (value.get("function") or {}).get("name")
            if not isinstance(name, str) or not name:
                raise ConfigError('a tool_choice object must look like {"type": "function", "function": {"name": '
                                  '...}}')
            return cls(REQUIRED, name)
        if isinstance(value, str) and value:
            return cls(value) if value in MODES else cls(REQUIRED, value)
        raise ConfigError(f"invalid tool_choice {value!r}: use auto, required, none or a tool name")

    @property
    def calls(self) -> bool:
        """A call may be made (auto or required)."""
        return self.mode != NONE

    def openai(self) -> str | dict:
        """As an OpenAI request writes it."""
        if self.name is not None:
            return {"type": "function", "function": {"name": self.name}}
        return self.mode

    def __str__(self) -> str:
        return self.name if self.name is not None else self.mode
