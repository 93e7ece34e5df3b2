"""What ``mcp-ref-fs`` was asked to serve: roots, mode and limits, from the command line."""

from __future__ import annotations

from typing import Any

# Defaults chosen so one answer never floods a model's context, yet real files fit.
DEFAULT_MAX_READ_BYTES = 1024 * 1024  # text returned by one read (read_text_file, each file of read_multiple_files)
DEFAULT_MAX_MEDIA_BYTES = 32 * 1024 * 1024  # read_media_file and resources/read of one binary file
DEFAULT_MAX_ENTRIES = 1000  # entries of one listing, tree, search or grep answer
DEFAULT_SEARCH_SECONDS = 30.0  # wall time of one search_files or grep_files walk
DEFAULT_TASK_SEARCH_SECONDS = 600.0  # the same, once the call runs as a task (tasks extension)
MIN_ANSWER_BYTES = 2_000  # --max-answer-bytes: room for a page of data and its cue
# tools/call and completion/complete per second, after a burst of RATE_BURST_SECONDS of them: a
# model's host makes a few calls a second at most; a runaway loop makes thousands.
DEFAULT_MAX_CALLS_PER_SECOND = 200.0
RATE_BURST_SECONDS = 10


class Config:
    """The server's settings (immutable). ``roots`` are the directories as the user gave them.

    A plain class rather than a frozen dataclass: making the dataclass cost ~0.7 ms of every start.
    Equality, ``repr`` and ``replace`` behave as the dataclass's did.
    """

    __slots__ = ("roots", "read_only", "modern_only", "max_read_bytes", "max_media_bytes", "max_entries",
                 "search_seconds", "task_search_seconds", "confinement", "max_answer_bytes",
                 "max_calls_per_second")

    roots: tuple[str, ...]
    read_only: bool
    modern_only: bool
    max_read_bytes: int
    max_media_bytes: int
    max_entries: int
    search_seconds: float
    task_search_seconds: float
    confinement: str | None  # None: automatic (openat2 where available, else walk)
    max_answer_bytes: int | None  # None: the budget measured for the client (answers.answer_budget)
    max_calls_per_second: float  # 0: no rate limit

    def __init__(self, roots: tuple[str, ...], read_only: bool = False, modern_only: bool = False,
                 max_read_bytes: int = DEFAULT_MAX_READ_BYTES, max_media_bytes: int = DEFAULT_MAX_MEDIA_BYTES,
                 max_entries: int = DEFAULT_MAX_ENTRIES, search_seconds: float = DEFAULT_SEARCH_SECONDS,
                 task_search_seconds: float = DEFAULT_TASK_SEARCH_SECONDS, confinement: str | None = None,
                 max_answer_bytes: int | None = None,
                 max_calls_per_second: float = DEFAULT_MAX_CALLS_PER_SECOND) -> None:
        values = locals()
        for name in self.__slots__:
            object.__setattr__(self, name, values[name])

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def replace(self, **changes: Any) -> Config:
        """A copy with ``changes`` (``dataclasses.replace``)."""
        return Config(**{**{name: getattr(self, name) for name in self.__slots__}, **changes})

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Config is immutable: cannot assign {name!r} (use replace)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Config is immutable: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        return self._values() == other._values() if type(other) is Config else NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return "Config(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__) + ")"
