"""What ``mcp-ref-fs`` was asked to serve: roots, mode and limits, from the command line."""

from __future__ import annotations

from dataclasses import dataclass, field

# Defaults chosen so one answer never floods a model's context, yet real files fit.
DEFAULT_MAX_READ_BYTES = 1024 * 1024  # text returned by one read (read_text_file, each file of read_multiple_files)
DEFAULT_MAX_MEDIA_BYTES = 32 * 1024 * 1024  # read_media_file and resources/read of one binary file
DEFAULT_MAX_ENTRIES = 1000  # entries of one listing, tree, search or grep answer
DEFAULT_SEARCH_SECONDS = 30.0  # wall time of one search_files or grep_files walk
DEFAULT_TASK_SEARCH_SECONDS = 600.0  # the same, once the call runs as a task (tasks extension)


@dataclass(frozen=True)
class Config:
    """The server's settings. ``roots`` are the directories as the user gave them."""

    roots: tuple[str, ...]
    read_only: bool = False
    modern_only: bool = False
    max_read_bytes: int = DEFAULT_MAX_READ_BYTES
    max_media_bytes: int = DEFAULT_MAX_MEDIA_BYTES
    max_entries: int = DEFAULT_MAX_ENTRIES
    search_seconds: float = DEFAULT_SEARCH_SECONDS
    task_search_seconds: float = DEFAULT_TASK_SEARCH_SECONDS
    confinement: str | None = field(default=None)  # None: automatic (openat2 where available, else walk)
