"""The server's command-line options, defined once: parsed when serving (``__main__``) and passed
through into the command a host runs by ``print-config`` and ``install`` (``hosts.hostconfig``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from .config import (
    DEFAULT_MAX_CALLS_PER_SECOND,
    DEFAULT_MAX_ENTRIES,
    DEFAULT_MAX_MEDIA_BYTES,
    DEFAULT_MAX_READ_BYTES,
    DEFAULT_SEARCH_SECONDS,
    DEFAULT_TASK_SEARCH_SECONDS,
    MIN_ANSWER_BYTES,
)

if TYPE_CHECKING:
    import argparse

PER_HOST = "per host"  # --max-answer-bytes' default: the budget measured for the client (answers.py)


def _bad_value(message: str) -> Exception:
    """The error argparse words as ``argument --flag: message`` (argparse is imported only then:
    a plain command line never needs it, see ``plain_command_line``)."""
    from argparse import ArgumentTypeError

    return ArgumentTypeError(message)


def positive_int(text: str) -> int:
    """A positive integer option value. Every bad value gets the same message (argparse would
    name this function for one that is not a number)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise _bad_value(f"must be a positive integer, not {text!r}")
    return value


def answer_bytes(text: str) -> int:
    value = int(text)
    if value < MIN_ANSWER_BYTES:
        raise _bad_value(f"must be at least {MIN_ANSWER_BYTES} (room for a page and its cue)")
    return value


def positive_float(text: str) -> float:
    """A positive, finite number of seconds; the same message for every bad value."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise _bad_value(f"must be a positive number of seconds, not {text!r}")
    return value


def rate(text: str) -> float:
    value = float(text)
    if not 0 <= value < float("inf"):
        raise _bad_value("must be a number of calls per second, 0 or more (0: no limit)")
    return value


# (flag, argparse keywords, help, default). Switches have no value.
SERVER_OPTIONS: tuple[tuple[str, dict[str, Any], str, Any], ...] = (
    ("--read-only", {"action": "store_true"}, "refuse every tool that would change the disk (they stay listed)", False),
    ("--modern-only", {"action": "store_true"}, "serve only 2026-07-28 clients; answer initialize with an error", False),
    ("--max-read-bytes", {"type": positive_int, "metavar": "N"}, "most text one read returns", DEFAULT_MAX_READ_BYTES),
    ("--max-media-bytes", {"type": positive_int, "metavar": "N"},
     "largest file read_media_file, resources/read and edit_file handle, and grep_files searches",
     DEFAULT_MAX_MEDIA_BYTES),
    ("--max-entries", {"type": positive_int, "metavar": "N"}, "most entries in one listing, tree, search or grep", DEFAULT_MAX_ENTRIES),
    ("--max-answer-bytes", {"type": answer_bytes, "metavar": "N"},
     "most text in one answer of a tool that returns text (the rest comes in pages, with a cue naming the next "
     "call); by default measured for the client that says who it is, 10000 for any other", PER_HOST),
    ("--search-seconds", {"type": positive_float, "metavar": "S"}, "time limit of one directory_tree, search or grep",
     DEFAULT_SEARCH_SECONDS),
    ("--task-search-seconds", {"type": positive_float, "metavar": "S"},
     "time limit of one tree, search or grep that runs as a task, polled by a client that declared the tasks extension",
     DEFAULT_TASK_SEARCH_SECONDS),
    ("--max-calls-per-second", {"type": rate, "metavar": "N"},
     "pace tool calls and completion requests to N a second after a burst of 10 s worth: no host's model calls that "
     "often, a runaway loop does (0: no limit)", DEFAULT_MAX_CALLS_PER_SECOND),
)


def add_server_options(parser: argparse.ArgumentParser, *, for_host: bool = False) -> None:
    """Add the server's options. ``for_host``: no defaults (only what the user gave is passed on)."""
    for flag, keywords, help_text, default in SERVER_OPTIONS:
        switch = keywords.get("action") == "store_true"
        if for_host:
            unset: dict[str, Any] = {} if switch else {"default": None}
            parser.add_argument(flag, **keywords, help=f"passed to the server: {help_text}", **unset)
        else:
            shown = "" if switch or default == PER_HOST else f" (default {default:g})" if isinstance(default, float) \
                else f" (default {default})"
            parser.add_argument(flag, **keywords, default=None if default == PER_HOST else default, help=help_text + shown)


def plain_command_line(argv: Sequence[str]) -> dict[str, Any] | None:
    """What the parser of ``add_server_options`` (``usage.argument_parser``) makes of a plain
    command line, as ``vars`` of its namespace, without importing argparse (with gettext, ~2 ms of
    every start): ROOTs in one run, and options spelled in full, each value the next argument. None
    for anything else (``-h``, ``--version``, ``--``, ``--flag=value``, an abbreviation, a value
    that starts with ``-`` or is refused, ROOTs on both sides of an option): argparse then parses
    it, and words what is wrong. ``tests/fs/test_fs_cli.py`` holds the two to the same answers."""
    values: dict[str, Any] = {"roots": []}
    converters: dict[str, tuple[str, Any]] = {}  # flag -> (name, type; None for a switch)
    for flag, keywords, _help, default in SERVER_OPTIONS:
        name, switch = flag[2:].replace("-", "_"), keywords.get("action") == "store_true"
        values[name] = False if switch else None if default == PER_HOST else default
        converters[flag] = (name, None if switch else keywords["type"])
    roots, run = values["roots"], "before"  # where we are against the ROOTs' one run: before, in, after
    words = iter(argv)
    for word in words:
        if not word.startswith("-"):
            if run == "after":
                return None  # argparse refuses ROOTs after an option that follows ROOTs
            run = "in"
            roots.append(word)
            continue
        if run == "in":
            run = "after"
        if word not in converters:
            return None
        name, convert = converters[word]
        if convert is None:
            values[name] = True
            continue
        value = next(words, None)
        if value is None or value.startswith("-"):
            return None
        try:
            values[name] = convert(value)
        except Exception:  # (ArgumentTypeError, ValueError: argparse words the message)
            return None
    return values


def given_server_options(options: argparse.Namespace) -> list[str]:
    """The server options the user gave, as command-line arguments (for a host's entry)."""
    arguments: list[str] = []
    for flag, keywords, _help, _default in SERVER_OPTIONS:
        value = getattr(options, flag[2:].replace("-", "_"))
        if keywords.get("action") == "store_true":
            if value:
                arguments.append(flag)
        elif value is not None:
            arguments += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return arguments
