"""The tools that change the disk: write_file, edit_file, create_directory, move_file, delete_file.

A part of :class:`.tools.FsTools`, which registers them. Each is one sandbox operation, like the
other tools; ``write_file`` and ``edit_file`` replace a file's content through :mod:`.rewrite`
(the one write path: atomic, refused when the server's user may not write the file, keeping the
owner, permission bits and extended attributes). What this module adds is order:

* **One rewrite of a file at a time.** Both hold the server's lock of the file (by device and
  inode, so another spelling of the path, or a link to it, is the same file) from the moment they
  look at it until their new content is in place. Two edits of one file sent back to back both
  apply, the second to the first one's result.
* **Nothing lost to another program.** An edit writes only if the file is still the one it read:
  :mod:`.rewrite` compares device, inode, size and times just before the rename. When another
  program wrote the file meanwhile, the edits are applied again to its new content if each still
  matches exactly once (the answer says so); if not, nothing is written and the tool error says
  that the file changed while it was being edited. ``write_file`` replaces the content whatever
  it is, so it writes again, with the owner and permissions of the file as it now is. Either gives
  up after ``MAX_ATTEMPTS`` reads of a file that keeps changing.
* **Off the event loop.** Matching and the diff (:mod:`.edits`, :mod:`.diffs`) run in a worker thread marked
  long (:mod:`.offload`), stop at a cancellation between edits and between diff regions, and
  within ``--search-seconds``; a rewrite (a write, two ``fsync``) and the ``fsync`` of a directory
  after creating, moving or deleting run in a worker thread too. A rewrite whose request is
  cancelled before its commit writes nothing.
"""

from __future__ import annotations

import contextlib
import stat
from typing import TYPE_CHECKING, Any, AsyncIterator

from mcp_ref import InputRequired, ToolError, ToolResult, elicit_form

from . import content
from .definitions import MAX_EDITS, PATH, output, schema, tool
from .answers import answer, binary_file, first_bytes, not_utf8, utf8
from .offload import Stop, Stopped, off_loop, read_start
from .rewrite import FileLocks, Snapshot, snapshot
from .root import FileChanged, Location, NotFound, sandboxed

if TYPE_CHECKING:
    from mcp_ref import RequestContext

    from . import diffs, edits
    from .config import Config
    from .root import Sandbox

SNIFF_BYTES = 8192  # the start of a file that decides whether it is text
MAX_ATTEMPTS = 3  # reads of a file that keeps changing under a write before it gives up


class WritingTools:
    """The handlers of the tools that change the disk, mixed into ``FsTools``, which provides the
    sandbox, the configuration and the locks."""

    sandbox: Sandbox
    config: Config
    locks: FileLocks

    # --- one rewrite of a file at a time ---------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _holding(self, path: str) -> AsyncIterator[None]:
        """Hold the lock of the file ``path`` names (none while no file exists there). A rewrite
        waited for may have replaced the file (a new inode): the new one's lock is taken then."""
        while True:
            key = await self._file_key(path)
            if key is None:
                yield
                return
            async with self.locks.hold(key):
                if await self._file_key(path) == key:
                    yield
                    return

    async def _file_key(self, path: str) -> tuple[int, int] | None:
        try:
            _location, info = await sandboxed(self.sandbox.stat, path)
        except NotFound:
            return None
        return (info.st_dev, info.st_ino) if stat.S_ISREG(info.st_mode) else None

    async def _rewrite(self, path: str, data: bytes, *, expect: Snapshot | None = None) -> Location:
        """Make ``data`` the content of ``path`` (:mod:`.rewrite`), in a worker thread; where it is."""

        def work(stop: Stop) -> Location:
            with self.sandbox.replace_file(path, expect=expect) as rewrite:
                rewrite.write(data)
                stop.check()  # cancelled: nothing is written
                rewrite.commit()
            return rewrite.location

        return await off_loop(work)

    # --- the tools ----------------------------------------------------------------------------------

    @tool(
        "write_file",
        "Write File",
        "Create a file or replace an existing one with new UTF-8 text. Existing content is overwritten without "
        "warning. The replacement is atomic: readers see the old or the new file, never a mix. The file's directory "
        "must exist. Only works within allowed directories.",
        schema({"path": PATH, "content": {"type": "string", "description": "The complete new contents"}}, ["path", "content"]),
        {"readOnlyHint": False, "idempotentHint": True, "destructiveHint": True, "openWorldHint": False},
        output(),
        mutates=True,
    )
    async def write_file(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        path = arguments["path"]
        data = utf8(arguments["content"], "content")
        for attempt in range(1, MAX_ATTEMPTS + 1):
            async with self._holding(path):
                try:
                    location = await self._rewrite(path, data)
                except FileChanged:
                    if attempt == MAX_ATTEMPTS:
                        raise
                    continue
            break
        return answer(f"Successfully wrote to {location.display}")

    @tool(
        "edit_file",
        "Edit File",
        "Replace text in a file and return a unified diff of the change. Each edit's oldText must match exactly "
        "once (exactly, or line by line ignoring leading and trailing whitespace, in which case the indentation of "
        "the file is kept); newText is inserted literally. Edits apply in order. With dryRun the diff is shown "
        "and nothing is written. Line endings and a byte-order mark are preserved. Only works within allowed directories.",
        schema({
            "path": PATH,
            "edits": {"type": "array", "minItems": 1, "maxItems": MAX_EDITS, "items": schema({
                "oldText": {"type": "string", "description": "Text to find; must match exactly once"},
                "newText": {"type": "string", "description": "Text to put in its place"},
            }, ["oldText", "newText"])},
            "dryRun": {"type": "boolean", "default": False, "description": "Show the diff without writing"},
        }, ["path", "edits"]),
        {"readOnlyHint": False, "idempotentHint": False, "destructiveHint": True, "openWorldHint": False},
        output(diff={"type": "string"}, applied={"type": "boolean"}),
        mutates=True,
    )
    async def edit_file(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        path = arguments["path"]
        changes = [(edit["oldText"], edit["newText"]) for edit in arguments["edits"]]
        for number, (old_text, new_text) in enumerate(changes, 1):
            utf8(old_text, f"oldText of edit {number}")
            utf8(new_text, f"newText of edit {number}")
        dry_run = arguments.get("dryRun", False)
        for attempt in range(1, MAX_ATTEMPTS + 1):
            async with self._holding(path):
                bom, original, seen, display = await self._read_for_edit(path)
                edited, diff = await self._edit(original, changes, display, again=attempt > 1)
                if dry_run or edited.text == original:
                    break
                try:
                    await self._rewrite(path, bom + edited.text.encode("utf-8"), expect=seen)
                    break
                except FileChanged:
                    if attempt == MAX_ATTEMPTS:
                        raise ToolError(f"{display} changed while it was being edited, {MAX_ATTEMPTS} times in a row "
                                        "(another program keeps writing it); nothing was written") from None
        applied = not dry_run and edited.text != original
        notes = []
        if attempt > 1:
            notes.append("[The file changed while it was being edited (another program wrote it); the edits were "
                         "applied again to its new content, where each matched exactly once, and the diff shows that.]")
        if diff.blocks:
            notes.append(f"[{diff.blocks} changed region(s) too large to compare line by line are shown whole: "
                         "their old lines removed, then their new lines added.]")
        text = diff.text
        if diff.truncated or len(text.encode("utf-8")) > self.config.max_read_bytes:
            text = first_bytes(text.encode("utf-8"), self.config.max_read_bytes).decode("utf-8")
            notes.append(f"[Truncated: the diff is cut at {self.config.max_read_bytes} bytes (--max-read-bytes).]")
        fence = "`" * 3
        while fence in text:
            fence += "`"
        report = f"{fence}diff\n{text}{fence}\n" if text else "No changes: the edits leave the file as it was.\n"
        if dry_run:
            report = "Dry run, nothing was written:\n" + report
        return answer(report, notes, diff=text, applied=applied)

    async def _read_for_edit(self, path: str) -> tuple[bytes, str, Snapshot, str]:
        """The file's byte-order mark (if any), its text without it, its :func:`.rewrite.snapshot`
        as it was opened, and its path as shown."""
        with await sandboxed(self.sandbox.open_file, path) as opened:
            size = opened.info.st_size
            if size > self.config.max_media_bytes:
                raise ToolError(f"{opened.location.display} has {size} bytes; edit_file handles files up to "
                                f"{self.config.max_media_bytes} bytes")
            raw = await read_start(opened, size)
            try:
                text = content.file_text(raw, raw[:SNIFF_BYTES])  # refused when its start looks binary
            except content.Binary:
                raise binary_file(opened.location, raw) from None
            except content.NotText:
                raise not_utf8(opened.location) from None
            return content.split_bom(raw)[0], text, snapshot(opened.info), opened.location.display

    async def _edit(self, original: str, changes: list[tuple[str, str]], display: str, *,
                    again: bool) -> tuple[edits.Edited, diffs.Diff]:
        """The edits applied (exactly, ``again``: on content that changed since the first read) and
        their diff, in a worker thread."""
        from . import diffs, edits  # imported on first use: start-up does not pay for them

        limit = self.config.search_seconds

        def work(stop: Stop) -> tuple[edits.Edited, diffs.Diff]:
            # The time limit counts from here: waiting for a thread place behind searches is not the edit's time.
            timed = Stop(limit)

            def check() -> None:
                stop.check()
                timed.check()

            edited = edits.edit_text(original, changes, exact_only=again, check=check)
            return edited, diffs.edit_diff(edited, display, max_bytes=self.config.max_read_bytes, check=check)

        try:
            return await off_loop(work, long=True)
        except edits.EditError as error:
            if again:
                raise ToolError(f"{display} changed while it was being edited (another program wrote it), and the edits "
                                f"no longer apply to its new content ({error}); nothing was written: read it again") from None
            raise ToolError(f"{display}: {error}") from None
        except Stopped:  # the time limit (a cancelled request is not answered at all)
            raise ToolError(f"{display}: the edits took longer than {limit:g} s (--search-seconds) and were stopped; "
                            "nothing was written. Send fewer edits per call.") from None

    @tool(
        "create_directory",
        "Create Directory",
        "Create a directory, with any missing parents. An existing directory is not an error. "
        "Only works within allowed directories.",
        schema({"path": PATH}, ["path"]),
        {"readOnlyHint": False, "idempotentHint": True, "destructiveHint": False, "openWorldHint": False},
        output(),
        mutates=True,
    )
    async def create_directory(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        path = arguments["path"]
        location = await off_loop(lambda stop: self.sandbox.make_directories(path))
        return answer(f"Successfully created directory {location.display}")

    @tool(
        "move_file",
        "Move File",
        "Move or rename a file or directory. Fails if the destination exists: it never overwrites. "
        "Both paths must be within allowed directories.",
        schema({"source": PATH, "destination": PATH}, ["source", "destination"]),
        {"readOnlyHint": False, "idempotentHint": False, "destructiveHint": False, "openWorldHint": False},
        output(),
        mutates=True,
    )
    async def move_file(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        source, destination = arguments["source"], arguments["destination"]
        moved_from, moved_to = await off_loop(lambda stop: self.sandbox.move(source, destination))
        return answer(f"Successfully moved {moved_from.display} to {moved_to.display}")

    @tool(
        "delete_file",
        "Delete File",
        "Delete a file, a symbolic link (not its target) or an empty directory, after the user confirms it: the "
        "client is asked to show a confirmation naming the path. Nothing is deleted if the user declines or the "
        "file changed meanwhile. Only works within allowed directories.",
        schema({"path": PATH}, ["path"]),
        {"readOnlyHint": False, "idempotentHint": False, "destructiveHint": True, "openWorldHint": False},
        output(deleted={"type": "boolean"}),
        mutates=True,
    )
    async def delete_file(self, ctx: RequestContext, arguments: dict[str, Any]) -> ToolResult:
        path = arguments["path"]
        identity = await sandboxed(self.sandbox.identity, path)
        location = self.sandbox.locate(path)
        if identity is None:
            raise ToolError(f"No such file or directory: {location.display}")
        if identity[2] == "directory" and await sandboxed(self.sandbox.has_entries, path):
            # Asking the user to confirm what cannot be done would only waste their attention.
            raise ToolError(f"{location.display} is a directory that is not empty; only empty ones are deleted")
        what = {"file": "the file", "directory": "the empty directory", "symlink": "the link"}.get(identity[2], "the entry")
        form = elicit_form(
            f"Delete {what} {location.display}? This cannot be undone.",
            {"type": "object", "properties": {"confirm": {"type": "boolean", "title": "Delete it",
                                                          "description": f"Delete {location.display}"}},
             "required": ["confirm"]},
        )
        state = {"identity": list(identity)}
        # Delete only the very entry the user was shown: its identity travels in the sealed
        # requestState, so a replaced file (or a tampered state) deletes nothing. An answer that
        # comes without that state answers no question of ours (the client skipped the first
        # round): it is ignored and the question asked.
        confirmed = ctx.state.get("identity") if isinstance(ctx.state, dict) else None
        if confirmed is None:
            raise InputRequired({"confirm_delete": form}, state=state)
        reply = ctx.ask("confirm_delete", form, state=state)
        if reply.get("action") != "accept" or not (reply.get("content") or {}).get("confirm"):
            verdict = {"decline": "declined", "cancel": "cancelled"}.get(reply.get("action", ""), "did not confirm")
            return answer(f"Not deleted: the user {verdict} deleting {location.display}.", deleted=False)
        expected = tuple(confirmed)
        await off_loop(lambda stop: self.sandbox.delete(path, expect=expected))  # type: ignore[arg-type]
        return answer(f"Successfully deleted {location.display}", deleted=True)
