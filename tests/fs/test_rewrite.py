"""Unit tests of the write path (mcp_ref_fs.rewrite, through Sandbox.replace_file, and the tools of
mcp_ref_fs.writing): what the wire tests in test_fs_writes.py cannot reach (a failure injected at
one system call, a clock moved).

Every test runs under both act steps (``*at`` calls, and the path-based one Windows uses): the
first makes new files without a name (``O_TMPFILE``), the second under a temporary name.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from mcp_ref_fs import _act, _platform, rewrite
from mcp_ref_fs.root import FileChanged, FsError, Refused, Sandbox
from mcp_ref_fs.watch import Watcher

OLD = b"the old contents\n"
NEW = b"the new contents\n"


def temporaries(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if _act.is_temporary(name))


@pytest.fixture(params=["at", "paths"])
def sandbox(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Sandbox]:
    root = tmp_path.resolve() / "root"
    root.mkdir()
    (root / "file.txt").write_bytes(OLD)
    opened = Sandbox.open([str(root)], act=_platform.choose_act(request.param))
    yield opened
    opened.close()


def root_of(sandbox: Sandbox) -> Path:
    return Path(sandbox.roots[0].real)


def write(sandbox: Sandbox, path: str, data: bytes = NEW, **options: Any) -> None:
    with sandbox.replace_file(path, **options) as replacing:
        replacing.write(data)
        replacing.commit()


# --- the check just before the commit -------------------------------------------------------------------


@pytest.mark.req("FS-EDIT-CHANGED-MEANWHILE")
@pytest.mark.parametrize("change", ["append", "replace", "delete", "touch"])
def test_a_commit_writes_nothing_when_the_file_changed_since_it_was_read(sandbox: Sandbox, change: str) -> None:
    target = root_of(sandbox) / "file.txt"
    seen = rewrite.snapshot(target.stat())
    replacing = sandbox.replace_file("file.txt", expect=seen)
    replacing.write(NEW)
    if change == "append":
        with open(target, "ab") as other:
            other.write(b"another program's line\n")
    elif change == "replace":
        (root_of(sandbox) / "other.txt").write_bytes(b"another file\n")
        os.replace(root_of(sandbox) / "other.txt", target)
    elif change == "delete":
        target.unlink()
    else:
        os.utime(target, ns=(seen[3] + 1, seen[3] + 1))  # same size, same inode: only the times say
    with pytest.raises(FileChanged, match="nothing was written"):
        replacing.commit()
    assert not target.exists() if change == "delete" else target.read_bytes() != NEW
    assert temporaries(root_of(sandbox)) == []


@pytest.mark.req("FS-EDIT-CHANGED-MEANWHILE")
def test_a_rewrite_of_a_file_that_is_no_longer_the_one_read_does_not_start(sandbox: Sandbox) -> None:
    target = root_of(sandbox) / "file.txt"
    seen = rewrite.snapshot(target.stat())
    target.write_bytes(b"rewritten in place by another program\n")
    with pytest.raises(FileChanged):
        sandbox.replace_file("file.txt", expect=seen)
    assert temporaries(root_of(sandbox)) == []


@pytest.mark.req("FS-EDIT-CHANGED-MEANWHILE")
def test_a_new_file_another_program_creates_meanwhile_is_never_overwritten(sandbox: Sandbox) -> None:
    target = root_of(sandbox) / "new.txt"
    replacing = sandbox.replace_file("new.txt")
    replacing.write(NEW)
    target.write_bytes(b"created by another program\n")
    with pytest.raises(FileChanged, match="created by another program"):
        replacing.commit()
    assert target.read_bytes() == b"created by another program\n" and temporaries(root_of(sandbox)) == []


# --- permissions and what the new file keeps --------------------------------------------------------------


@pytest.mark.req("FS-ATOMIC-WRITE")
def test_a_rewritten_file_loses_its_set_user_and_group_id_bits_and_keeps_its_owner(tmp_path: Path) -> None:
    tree = tmp_path / "root"
    tree.mkdir()
    tool = tree / "tool"
    tool.write_text("#!/bin/sh\necho hi\n")
    os.chmod(tool, 0o6755)
    if os.geteuid() == 0:
        os.chown(tool, 1234, 1234)
    sandbox = Sandbox.open([str(tree)])
    with sandbox.replace_file("tool") as replacement:
        replacement.write(b"#!/bin/sh\nid\n")
        replacement.commit()
    info = tool.stat()
    assert stat.S_IMODE(info.st_mode) == 0o755  # setuid and setgid gone, the rest kept
    if os.geteuid() == 0:
        assert (info.st_uid, info.st_gid) == (1234, 1234)  # not handed to the server's user


@pytest.mark.req("FS-WRITE-PERMISSIONS")
@pytest.mark.parametrize(("code", "says"), [
    (errno.EACCES, "Permission denied"), (errno.EPERM, "Permission denied"), (errno.EROFS, "read-only file system"),
    (errno.ETXTBSY, "program that is running"), (errno.EAGAIN, "held by another program"),
])
def test_a_file_the_server_may_not_open_for_writing_is_refused_before_anything_is_created(
        sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, code: int, says: str) -> None:
    def refused(held: Any, name: str) -> int:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(sandbox.act, "open_for_writing", refused)
    with pytest.raises(Refused, match=says):
        write(sandbox, "file.txt")
    assert (root_of(sandbox) / "file.txt").read_bytes() == OLD and sorted(os.listdir(root_of(sandbox))) == ["file.txt"]


@pytest.mark.req("FS-REWRITE-KEEPS")
def test_an_extended_attribute_the_new_file_cannot_take_refuses_the_rewrite_naming_it(
        sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    target = root_of(sandbox) / "file.txt"
    try:
        os.setxattr(target, "user.kept", b"value")
    except OSError as error:
        pytest.skip(f"the file system refuses user extended attributes ({error.strerror})")
    real = os.setxattr

    def setxattr(fd: Any, name: str, value: bytes, *args: Any) -> None:
        if name == "user.kept":
            raise OSError(errno.E2BIG, os.strerror(errno.E2BIG))
        real(fd, name, value, *args)

    monkeypatch.setattr(os, "setxattr", setxattr)
    with pytest.raises(Refused, match="extended attribute user.kept"):
        write(sandbox, "file.txt")
    assert target.read_bytes() == OLD and os.getxattr(target, "user.kept") == b"value"
    assert temporaries(root_of(sandbox)) == []


@pytest.mark.req("FS-REWRITE-KEEPS")
def test_set_user_id_bits_are_not_carried_to_new_content(sandbox: Sandbox) -> None:
    target = root_of(sandbox) / "file.txt"
    target.chmod(0o6755)
    write(sandbox, "file.txt")
    assert stat.S_IMODE(target.stat().st_mode) == 0o755


@pytest.mark.req("FS-REWRITE-KEEPS")
def test_security_attributes_are_left_to_the_system_and_the_others_are_carried(monkeypatch: pytest.MonkeyPatch) -> None:
    listed = {"user.a": b"1", "security.capability": b"\x01", "security.selinux": b"label", "trusted.b": b"2"}
    monkeypatch.setattr(os, "listxattr", lambda fd: list(listed))
    monkeypatch.setattr(os, "getxattr", lambda fd, name: listed[name])
    assert rewrite._read_xattrs(0, "f") == [("user.a", b"1"), ("trusted.b", b"2")]


@pytest.mark.req("FS-REWRITE-KEEPS")
def test_a_rewrite_keeps_the_files_group_when_the_new_file_would_get_another(sandbox: Sandbox) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs a group other than the suite's own, which only root can give a file")
    target = root_of(sandbox) / "file.txt"
    os.chown(target, -1, 65534)
    write(sandbox, "file.txt")
    assert target.stat().st_gid == 65534


@pytest.mark.req("FS-WRITE-PERMISSIONS")
def test_another_failure_to_open_the_file_for_writing_is_reported_as_itself(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(held: Any, name: str) -> int:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(sandbox.act, "open_for_writing", failing)
    with pytest.raises(FsError, match="Input/output error"):
        write(sandbox, "file.txt")
    assert sorted(os.listdir(root_of(sandbox))) == ["file.txt"]


def test_a_new_file_that_cannot_be_created_leaves_nothing_and_says_why(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: Any) -> int:
        raise OSError(errno.EACCES, os.strerror(errno.EACCES))  # a directory the server's user may not write

    monkeypatch.setattr(sandbox.act, "create_unnamed", refused)
    monkeypatch.setattr(sandbox.act, "create", refused)
    with pytest.raises(Refused, match="Permission denied"):
        write(sandbox, "new.txt")
    assert sorted(os.listdir(root_of(sandbox))) == ["file.txt"]


@pytest.mark.req("FS-REWRITE-KEEPS")
@pytest.mark.parametrize(("listed", "read", "outcome"), [
    (OSError(errno.EOPNOTSUPP, "no xattrs here"), None, []),  # a file system without extended attributes
    (["user.gone"], OSError(errno.ENODATA, "removed meanwhile"), []),
    (["user.secret"], OSError(errno.EACCES, "Permission denied"), Refused),
    (OSError(errno.EIO, "Input/output error"), None, OSError),
])
def test_extended_attributes_that_cannot_be_read_are_skipped_only_when_nothing_is_lost(
        monkeypatch: pytest.MonkeyPatch, listed: Any, read: Any, outcome: Any) -> None:
    def listxattr(fd: int) -> list[str]:
        if isinstance(listed, OSError):
            raise listed
        return listed

    def getxattr(fd: int, name: str) -> bytes:
        raise read

    monkeypatch.setattr(os, "listxattr", listxattr)
    monkeypatch.setattr(os, "getxattr", getxattr)
    if isinstance(outcome, list):
        assert rewrite._read_xattrs(0, "f") == outcome
    else:
        with pytest.raises(outcome):
            rewrite._read_xattrs(0, "f")


@pytest.mark.req("FS-REWRITE-KEEPS")
def test_an_acl_the_new_file_inherited_that_cannot_be_removed_fails_the_commit(
        sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    def removexattr(fd: Any, name: str, *args: Any) -> None:
        raise OSError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(os, "removexattr", removexattr)
    with pytest.raises(Refused, match="Permission denied"):
        write(sandbox, "file.txt")
    assert (root_of(sandbox) / "file.txt").read_bytes() == OLD and temporaries(root_of(sandbox)) == []


@pytest.mark.req("FS-REWRITE-KEEPS")
def test_without_extended_attribute_calls_a_rewrite_carries_none_and_still_works(
        sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rewrite, "_XATTRS", False)  # macOS, Windows
    write(sandbox, "file.txt")
    assert (root_of(sandbox) / "file.txt").read_bytes() == NEW


# --- temporary files ---------------------------------------------------------------------------------------


@pytest.mark.req("FS-NO-STALE-TEMPORARIES")
def test_stale_temporaries_are_swept_once_per_directory_and_young_or_foreign_ones_stay(
        sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rewrite, "_swept", set())
    root = root_of(sandbox)
    old, young = root / ".mcp-ref-00000000000000aa.tmp", root / ".mcp-ref-00000000000000bb.tmp"
    foreign, directory = root / ".mcp-ref-not-ours.tmp", root / ".mcp-ref-00000000000000cc.tmp"
    for path in (old, young, foreign):
        path.write_text("left\n")
    directory.mkdir()
    hour_ago = time.time() - rewrite.STALE_SECONDS - 60
    for path in (old, foreign, directory):
        os.utime(path, (hour_ago, hour_ago))
    write(sandbox, "file.txt")
    assert not old.exists() and young.exists() and foreign.exists() and directory.is_dir()
    late = root / ".mcp-ref-00000000000000dd.tmp"
    late.write_text("left later\n")
    os.utime(late, (hour_ago, hour_ago))
    write(sandbox, "file.txt")
    assert late.exists()  # the directory was swept already in this run


@pytest.mark.req("FS-NO-STALE-TEMPORARIES")
def test_a_sweep_that_cannot_look_or_remove_is_quiet_and_remembers_only_so_many_directories(
        sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rewrite, "_swept", set())
    monkeypatch.setattr(rewrite, "_SWEPT_MAX", 1)
    act = sandbox.act
    root = root_of(sandbox)
    stale = root / ".mcp-ref-00000000000000ee.tmp"
    stale.write_text("left\n")
    hour_ago = time.time() - rewrite.STALE_SECONDS - 60
    os.utime(stale, (hour_ago, hour_ago))

    def fails(*args: Any) -> Any:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    held = act.open_root(str(root))
    try:
        for name in ("stat_dir", "scandir", "unlink"):
            with monkeypatch.context() as patched:
                patched.setattr(act, name, fails)
                rewrite._swept.clear()
                rewrite.sweep(act, held)  # quiet
        assert stale.exists()
        rewrite._swept.clear()
        rewrite._swept.add((-1, -1))  # another directory, remembered: the set is full
        rewrite.sweep(act, held)
        assert not stale.exists() and len(rewrite._swept) == 1
    finally:
        act.close(held)


@pytest.mark.req("FS-NO-STALE-TEMPORARIES")
def test_listings_and_walks_never_show_a_temporary_file_of_the_servers_naming(sandbox: Sandbox) -> None:
    root = root_of(sandbox)
    names = [".mcp-ref-0123456789abcdef.tmp", ".mcp-ref-0123456789ABCDEF.tmp", ".mcp-ref-0123.tmp", ".mcp-ref-x", "a.txt"]
    for name in names:
        (root / name).write_text("x\n")
    shown = [".mcp-ref-0123.tmp", ".mcp-ref-0123456789ABCDEF.tmp", ".mcp-ref-x", "a.txt", "file.txt"]
    assert [entry.name for entry in sandbox.list_directory(".")[1]] == shown
    assert [entry.name for entry in sandbox.list_directory_page(".", largest_first=True)[1]] == \
        sorted(shown, key=lambda name: (-(root / name).stat().st_size, name))
    assert [components[-1] for components, _entry in sandbox.walk(".")] == shown
    assert sandbox.list_directory_page(".", sizes=False, most=10)[2] == len(shown)


@pytest.mark.req("FS-NO-STALE-TEMPORARIES")
def test_the_watch_announces_nothing_about_a_temporary_file_of_the_servers_naming(sandbox: Sandbox) -> None:
    class Change:
        name = "added"

    watcher = Watcher.__new__(Watcher)
    watcher.sandbox = sandbox
    root = str(root_of(sandbox))
    watcher._inside = lambda path: sandbox.locate(path)  # type: ignore[method-assign]
    confined = list(watcher._confined([(Change(), f"{root}/.mcp-ref-0123456789abcdef.tmp"), (Change(), f"{root}/a.txt")]))
    assert [path for _change, path, _location in confined] == [f"{root}/a.txt"]


# --- durability ---------------------------------------------------------------------------------------------


@pytest.mark.req("FS-DURABLE-DIRECTORIES")
def test_a_directory_that_cannot_be_synced_does_not_fail_a_create_move_or_delete(
        sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[Any] = []

    def sync(held: Any) -> None:
        synced.append(held)
        raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))  # some file systems refuse to sync a directory

    monkeypatch.setattr(sandbox.act, "sync", sync)
    sandbox.make_directories("a/b")
    sandbox.move("file.txt", "a/b/moved.txt")
    sandbox.delete("a/b/moved.txt")
    root = root_of(sandbox)
    assert (root / "a" / "b").is_dir() and not (root / "file.txt").exists() and not (root / "a" / "b" / "moved.txt").exists()
    assert len(synced) == 5  # root and a (created in them), b and the root (the move), b (the delete)


# --- writing.py: the tools' retries and limits ---------------------------------------------------------


def _tools(sandbox: Sandbox, **config: Any) -> Any:
    from mcp_ref import Server
    from mcp_ref_fs.config import Config
    from mcp_ref_fs.tools import FsTools

    return FsTools(Server("rewrite", "0"), sandbox, Config(roots=(sandbox.roots[0].real,), **config))


@pytest.mark.req("FS-EDIT-CHANGED-MEANWHILE")
async def test_an_edit_of_a_file_that_changes_at_every_attempt_gives_up_and_writes_nothing(
        sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_ref import ToolError
    from mcp_ref_fs import writing

    tools = _tools(sandbox)
    attempts: list[int] = []

    async def always_changed(path: str, data: bytes, *, expect: Any = None) -> None:
        attempts.append(1)
        raise FileChanged("changed")

    monkeypatch.setattr(tools, "_rewrite", always_changed)
    with pytest.raises(ToolError, match=f"{writing.MAX_ATTEMPTS} times in a row"):
        await tools.edit_file(None, {"path": "file.txt", "edits": [{"oldText": "old", "newText": "new"}]})
    with pytest.raises(FileChanged):
        await tools.write_file(None, {"path": "file.txt", "content": "new\n"})
    assert len(attempts) == 2 * writing.MAX_ATTEMPTS
    assert (root_of(sandbox) / "file.txt").read_bytes() == OLD


@pytest.mark.req("FS-EDIT-DIFF-BOUNDED")
async def test_edits_past_the_time_limit_are_refused_and_write_nothing(sandbox: Sandbox) -> None:
    from mcp_ref import ToolError

    tools = _tools(sandbox, search_seconds=-1.0)
    with pytest.raises(ToolError, match="took longer than"):
        await tools.edit_file(None, {"path": "file.txt", "edits": [{"oldText": "old", "newText": "new"}]})
    assert (root_of(sandbox) / "file.txt").read_bytes() == OLD
