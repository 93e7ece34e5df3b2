"""The Windows confinement (``mcp_ref_fs._confine_windows``) run on Linux against a fake kernel32,
the sandbox's Windows path rules, and an import of the server as Windows would do it.

What cannot run here is only ``_confine_windows.Kernel32`` (the ``ctypes`` bindings): every
decision above it (which handles are held and released, when a reparse point is followed and
how its final path is judged, how a file is opened without following its name) runs against
``FakeKernel32``, an in-memory tree of directories, files and links (symbolic links and
junctions alike: reparse points with a target) that answers the five calls the way Windows does.
The path-based act step those classes plug into runs the whole sandbox suite on Linux
(tests/fs/test_sandbox.py, ``act=paths``).
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

from mcp_ref_fs import _act, _confine_windows, _platform, winpaths
from mcp_ref_fs._confine_windows import (
    FILE_ATTRIBUTE_DIRECTORY,
    FILE_ATTRIBUTE_REPARSE_POINT,
    FILE_FLAG_OPEN_REPARSE_POINT,
    FILE_SHARE_DELETE,
    IO_REPARSE_TAG_MOUNT_POINT,
    Escape,
    WindowsDirectory,
    WindowsMechanism,
    WindowsPathAct,
)
from mcp_ref_fs.root import AccessDenied, InvalidPath, Location, NotFound, Root, Sandbox, WrongKind, _Escape

# --- a fake kernel32 -------------------------------------------------------------------------------------


class FakeKernel32:
    """``tree``: Windows path -> ``"dir"``, ``"file"`` or ``("link", target)`` (a reparse point whose
    target is absolute or relative to the link's directory). Names compare case-insensitively; the
    spelling in ``tree`` is the real one (what final paths report)."""

    def __init__(self, tree: dict[str, Any]) -> None:
        self.nodes = {winpaths.parse_absolute(path, check=False).key: (winpaths.parse_absolute(path, check=False), node)
                      for path, node in tree.items()}
        self.handles: dict[int, tuple[winpaths.WinPath, Any, int]] = {}
        self.opens: list[tuple[str, int, int]] = []  # (path, share, flags) of every open
        self._next = 100
        self.fail_to_fd = False

    def _resolve(self, path: str, follow_final: bool) -> tuple[winpaths.WinPath, Any]:
        parsed = winpaths.parse_absolute(path, check=False)
        current = winpaths.WinPath(parsed.anchor, ())
        pending, hops = list(parsed.parts), 0
        while pending:
            name = pending.pop(0)
            found = self.nodes.get(winpaths.WinPath(current.anchor, current.parts + (name,)).key)
            if found is None:
                raise FileNotFoundError(errno.ENOENT, f"{path}: not found")
            real, node = found
            if isinstance(node, tuple) and (pending or follow_final):
                hops += 1
                if hops > 63:  # Windows' own limit on reparse points in one open
                    raise OSError(errno.ELOOP, "too many reparse points")
                target = node[1]
                if winpaths.kind(target) == "relative":
                    target_path = winpaths.join_relative(current, target)
                else:
                    target_path = winpaths.parse_absolute(target, check=False)
                current = winpaths.WinPath(target_path.anchor, ())
                pending = list(target_path.parts) + pending
                continue
            if node == "file" and pending:
                raise NotADirectoryError(errno.ENOTDIR, f"{path}: not a directory")
            current = real
        found = self.nodes.get(current.key)
        return current, (found[1] if found else "dir")  # the drive itself is a directory

    def open(self, path: str, access: int, share: int, flags: int) -> int:
        assert path.startswith("\\\\?\\"), "every open uses the literal \\\\?\\ namespace"
        real, node = self._resolve(path, follow_final=not flags & FILE_FLAG_OPEN_REPARSE_POINT)
        self._next += 1
        self.handles[self._next] = (real, node, share)
        self.opens.append((path, share, flags))
        return self._next

    def close(self, handle: int) -> None:
        del self.handles[handle]  # a handle closed twice is a KeyError

    def attributes(self, handle: int) -> int:
        _real, node, _share = self.handles[handle]
        if isinstance(node, tuple):
            return FILE_ATTRIBUTE_REPARSE_POINT | FILE_ATTRIBUTE_DIRECTORY  # a junction is a directory too
        return FILE_ATTRIBUTE_DIRECTORY if node == "dir" else 0x20

    def final_path(self, handle: int) -> str:
        return "\\\\?\\" + str(self.handles[handle][0])

    def to_fd(self, handle: int, flags: int) -> int:
        if self.fail_to_fd:
            raise OSError(errno.EMFILE, "too many open files")
        del self.handles[handle]  # the descriptor owns the handle now
        return 1000 + handle


TREE = {
    "C:\\Work": "dir",
    "C:\\Work\\proj": "dir",
    "C:\\Work\\proj\\src": "dir",
    "C:\\Work\\proj\\src\\deep": "dir",
    "C:\\Work\\proj\\src\\main.py": "file",
    "C:\\Work\\proj\\notes.txt": "file",
    "C:\\Work\\proj\\to_src": ("link", "C:\\Work\\proj\\src"),  # a junction inside the root
    "C:\\Work\\proj\\rel_src": ("link", "src"),  # a relative symbolic link inside
    "C:\\Work\\proj\\to_file": ("link", "notes.txt"),
    "C:\\Work\\proj\\out": ("link", "C:\\Work\\secret"),  # leaving the root
    "C:\\Work\\proj\\dangling": ("link", "C:\\Work\\proj\\nowhere"),
    "C:\\Work\\proj\\self": ("link", "C:\\Work\\proj"),
    "C:\\Work\\proj\\loop1": ("link", "C:\\Work\\proj\\loop2"),
    "C:\\Work\\proj\\loop2": ("link", "C:\\Work\\proj\\loop1"),
    "C:\\Work\\secret": "dir",
    "C:\\Work\\secret\\key.txt": "file",
}


@pytest.fixture
def kernel() -> FakeKernel32:
    return FakeKernel32(TREE)


@pytest.fixture
def act(kernel: FakeKernel32) -> WindowsPathAct:
    return WindowsPathAct(kernel)


@pytest.fixture
def root(act: WindowsPathAct) -> WindowsDirectory:
    return act.open_root("c:\\work\\PROJ")


def held_paths(kernel: FakeKernel32) -> list[str]:
    return sorted(str(real) for real, _node, _share in kernel.handles.values())


# --- the mechanism -----------------------------------------------------------------------------------------


@pytest.mark.req("FS-WINDOWS-HANDLES")
def test_a_directory_is_returned_with_every_directory_below_the_root_held(kernel: FakeKernel32, root: WindowsDirectory) -> None:
    directory, resolved = WindowsMechanism(kernel).open_dir(root, ("src", "deep"))
    assert resolved == ("src", "deep") and directory.path == "\\\\?\\C:\\Work\\proj\\src\\deep"
    assert held_paths(kernel) == ["C:\\Work\\proj", "C:\\Work\\proj\\src", "C:\\Work\\proj\\src\\deep"]
    # Held without FILE_SHARE_DELETE: none of them can be renamed, deleted or swapped meanwhile.
    assert all(not share & FILE_SHARE_DELETE for _real, _node, share in kernel.handles.values())
    WindowsPathAct(kernel).close(directory)
    WindowsPathAct(kernel).close(directory)  # closing again closes nothing twice
    assert held_paths(kernel) == ["C:\\Work\\proj"]


def test_the_root_of_an_empty_path_is_the_root_itself(kernel: FakeKernel32, root: WindowsDirectory) -> None:
    directory, resolved = WindowsMechanism(kernel).open_dir(root, ())
    assert resolved == () and directory.path == root.path and directory.handles == []


@pytest.mark.req("FS-WINDOWS-HANDLES")
def test_names_are_compared_by_what_the_file_system_calls_them(kernel: FakeKernel32, root: WindowsDirectory) -> None:
    directory, resolved = WindowsMechanism(kernel).open_dir(root, ("SRC", "Deep"))
    assert resolved == ("src", "deep")  # the real spelling, from the final path


@pytest.mark.req("FS-WINDOWS-HANDLES")
@pytest.mark.parametrize(("parts", "resolved"), [(("to_src", "deep"), ("src", "deep")), (("rel_src",), ("src",)),
                                                  (("self", "self", "src"), ("src",))])
def test_a_reparse_point_inside_the_root_is_followed_by_its_final_path(
        kernel: FakeKernel32, root: WindowsDirectory, parts: tuple[str, ...], resolved: tuple[str, ...]) -> None:
    directory, got = WindowsMechanism(kernel).open_dir(root, parts)
    assert got == resolved and directory.path == "\\\\?\\C:\\Work\\proj\\" + "\\".join(resolved)
    assert len(directory.handles) == len(resolved)  # the links' own handles were released


@pytest.mark.req("FS-WINDOWS-HANDLES")
@pytest.mark.parametrize("parts", [("out",), ("out", "key.txt"), ("self", "out"), ("self", "self", "out")])
def test_a_reparse_point_leaving_the_root_is_refused_and_nothing_stays_open(
        kernel: FakeKernel32, root: WindowsDirectory, parts: tuple[str, ...]) -> None:
    with pytest.raises(Escape):
        WindowsMechanism(kernel).open_dir(root, parts)
    assert held_paths(kernel) == ["C:\\Work\\proj"]


@pytest.mark.req("FS-WINDOWS-HANDLES")
def test_the_roots_link_policy_judges_the_final_path_when_given(kernel: FakeKernel32, root: WindowsDirectory) -> None:
    seen: list[tuple[Any, ...]] = []

    def follow(prefix: tuple[str, ...], text: str, remaining: tuple[str, ...]) -> tuple[str, ...]:
        seen.append((prefix, text, remaining))
        if "secret" in text.lower():
            raise _Escape()
        return winpaths.follow_link(text, ["C:\\Work\\proj"], prefix) + remaining

    assert WindowsMechanism(kernel).open_dir(root, ("to_src", "deep"), follow)[1] == ("src", "deep")
    assert ((), "\\\\?\\C:\\Work\\proj\\src", ("deep",)) in seen
    with pytest.raises(_Escape):
        WindowsMechanism(kernel).open_dir(root, ("out",), follow)
    assert held_paths(kernel) == ["C:\\Work\\proj", "C:\\Work\\proj\\src", "C:\\Work\\proj\\src\\deep"]


@pytest.mark.req("FS-WINDOWS-HANDLES")
@pytest.mark.parametrize(("parts", "error"), [(("dangling",), FileNotFoundError), (("notes.txt",), NotADirectoryError),
                                               (("src", "main.py", "x"), NotADirectoryError), (("missing", "x"), FileNotFoundError)])
def test_what_is_not_a_directory_fails_and_releases_every_handle(
        kernel: FakeKernel32, root: WindowsDirectory, parts: tuple[str, ...], error: type[OSError]) -> None:
    with pytest.raises(error):
        WindowsMechanism(kernel).open_dir(root, parts)
    assert held_paths(kernel) == ["C:\\Work\\proj"]


@pytest.mark.req("FS-WINDOWS-HANDLES")
def test_link_loops_end_with_eloop(kernel: FakeKernel32, root: WindowsDirectory) -> None:
    with pytest.raises(OSError) as caught:
        WindowsMechanism(kernel).open_dir(root, ("loop1",))  # Windows itself gives up on the loop
    assert caught.value.errno == errno.ELOOP
    with pytest.raises(OSError) as caught:
        WindowsMechanism(kernel).open_dir(root, ("self",) * 45)  # each hop fine, too many of them
    assert caught.value.errno == errno.ELOOP
    assert held_paths(kernel) == ["C:\\Work\\proj"]


@pytest.mark.req("FS-WINDOWS-HANDLES")
@pytest.mark.parametrize("name", ["CON", "a:stream", "x.", "PROGRA~1"])
def test_names_windows_reads_as_something_else_are_refused_before_opening(kernel: FakeKernel32, root: WindowsDirectory, name: str) -> None:
    opened = len(kernel.opens)
    with pytest.raises(winpaths.WindowsPathError):
        WindowsMechanism(kernel).open_dir(root, ("src", name))
    assert len(kernel.opens) == opened


def test_verify_names_the_root_holding_a_handle(kernel: FakeKernel32) -> None:
    mechanism = WindowsMechanism(kernel)
    handle = kernel.open("\\\\?\\C:\\Work\\secret\\key.txt", 0, 0, 0)
    with pytest.raises(Escape):
        mechanism.verify(handle, ["C:\\Work\\proj"])
    assert mechanism.verify(handle, ["C:\\Work\\proj", "c:\\work\\SECRET"]) == 1
    assert mechanism.verify(handle, ["C:\\Work\\secret", "C:\\Work", "C:\\"]) == 0  # the innermost root


def test_the_remaining_calls_are_the_standard_librarys(monkeypatch: pytest.MonkeyPatch, act: WindowsPathAct,
                                                       root: WindowsDirectory) -> None:
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(_confine_windows.os, "stat", lambda *args: calls.append(("stat",) + args))
    monkeypatch.setattr(_confine_windows.os, "rename", lambda *args: calls.append(("rename",) + args))
    act.stat_dir(root)
    act.rename_no_replace(root, "a", root, "b", os.stat_result((0,) * 10))
    assert calls == [("stat", root.path), ("rename", root.path + "\\a", root.path + "\\b")]
    assert repr(root) == "WindowsDirectory('\\\\\\\\?\\\\C:\\\\Work\\\\proj', 1 handles)"


# --- the act step's Windows primitives -----------------------------------------------------------------------


@pytest.mark.req("FS-WINDOWS-HANDLES")
def test_a_root_is_held_by_its_final_path_and_must_be_a_directory(kernel: FakeKernel32, act: WindowsPathAct) -> None:
    held = act.open_root("C:\\Work\\proj\\to_src")  # a root given through a link: held as what it is
    assert held.path == held.root == "\\\\?\\C:\\Work\\proj\\src" and len(held.handles) == 1
    with pytest.raises(NotADirectoryError):
        act.open_root("C:\\Work\\proj\\notes.txt")
    with pytest.raises(FileNotFoundError):
        act.open_root("C:\\Work\\none")
    act.close(held)
    assert kernel.handles == {}


@pytest.mark.req("FS-WINDOWS-HANDLES")
def test_a_file_is_opened_without_following_its_name(kernel: FakeKernel32, act: WindowsPathAct, root: WindowsDirectory) -> None:
    fd = act.open_file(root, "notes.txt")
    assert fd > 1000 and held_paths(kernel) == ["C:\\Work\\proj"]  # the descriptor owns its handle
    path, _share, flags = kernel.opens[-1]
    assert path == "\\\\?\\C:\\Work\\proj\\notes.txt" and flags & FILE_FLAG_OPEN_REPARSE_POINT


@pytest.mark.req("FS-WINDOWS-HANDLES")
@pytest.mark.parametrize(("name", "code"), [("to_file", errno.ELOOP), ("out", errno.ELOOP), ("src", errno.EISDIR),
                                            ("missing.txt", errno.ENOENT)])
def test_a_link_or_a_directory_where_a_file_was_looked_up_is_refused(
        kernel: FakeKernel32, act: WindowsPathAct, root: WindowsDirectory, name: str, code: int) -> None:
    """As O_NOFOLLOW answers a link swapped in after the lookup; the handle is closed again."""
    with pytest.raises(OSError) as caught:
        act.open_file(root, name)
    assert caught.value.errno == code
    assert held_paths(kernel) == ["C:\\Work\\proj"]


@pytest.mark.req("FS-WINDOWS-HANDLES")
def test_a_handle_the_c_runtime_cannot_take_is_closed(kernel: FakeKernel32, act: WindowsPathAct, root: WindowsDirectory) -> None:
    kernel.fail_to_fd = True
    with pytest.raises(OSError):
        act.open_file(root, "notes.txt")
    assert held_paths(kernel) == ["C:\\Work\\proj"]


@pytest.mark.req("FS-WINDOWS-HANDLES")
def test_a_walk_enters_directories_but_never_links_or_junctions(kernel: FakeKernel32, act: WindowsPathAct, root: WindowsDirectory) -> None:
    child = act.open_dir(root, "src")
    assert child.path == "\\\\?\\C:\\Work\\proj\\src" and len(child.handles) == 1 and child.root == root.root
    for name, code in (("to_src", errno.ELOOP), ("out", errno.ELOOP), ("notes.txt", errno.ENOTDIR)):
        with pytest.raises(OSError) as caught:
            act.open_dir(root, name)
        assert caught.value.errno == code
    act.close(child)
    assert held_paths(kernel) == ["C:\\Work\\proj"]


def test_reopening_holds_the_directory_with_a_handle_of_its_own(kernel: FakeKernel32, act: WindowsPathAct, root: WindowsDirectory) -> None:
    again = act.reopen(root)
    assert again.path == root.path and again.handles and again.handles != root.handles
    act.close(again)
    assert held_paths(kernel) == ["C:\\Work\\proj"]


def test_paths_for_the_path_based_act_step_are_literal_and_real_paths_are_plain(act: WindowsPathAct, root: WindowsDirectory) -> None:
    assert act.sep == "\\" and act.name == "paths" and not act.positional_reads
    assert act.at(root, "a.txt") == "\\\\?\\C:\\Work\\proj\\a.txt"
    assert act.real_path(root) == "C:\\Work\\proj"
    assert act.real_path(WindowsDirectory([], "\\\\.\\pipe\\x", "")) is None
    act.sync(root)  # nothing to flush through the C runtime


@pytest.mark.parametrize(("path", "expected"), [("C:\\x", "\\\\?\\C:\\x"), ("\\\\?\\C:\\x", "\\\\?\\C:\\x"),
                                                ("\\\\server\\share\\x", "\\\\?\\UNC\\server\\share\\x")])
def test_long_paths(path: str, expected: str) -> None:
    assert _confine_windows.long_path(path) == expected


@pytest.mark.req("FS-WINDOWS-HANDLES")
def test_a_junction_is_judged_as_a_link_and_other_reparse_points_as_what_they_are(tmp_path: Path) -> None:
    if sys.platform == "win32":
        pytest.skip("makes a symbolic link, which needs a privilege on Windows")
    directory = os.stat(tmp_path)
    junction = _confine_windows.as_link(directory, IO_REPARSE_TAG_MOUNT_POINT)
    assert stat.S_ISLNK(junction.st_mode) and stat.S_IMODE(junction.st_mode) == stat.S_IMODE(directory.st_mode)
    assert (junction.st_dev, junction.st_ino, junction.st_ctime_ns, junction.st_mtime) == \
        (directory.st_dev, directory.st_ino, directory.st_ctime_ns, directory.st_mtime)
    assert _confine_windows.as_link(directory, 0) is directory
    assert _confine_windows.as_link(directory, 0x9000001A) is directory  # a cloud placeholder: not a name surrogate
    os.symlink("x", tmp_path / "link")
    link = os.lstat(tmp_path / "link")
    assert _confine_windows.as_link(link, 0xA000000C) is link  # a symbolic link: already one


def test_lstat_through_the_windows_act_marks_junctions(monkeypatch: pytest.MonkeyPatch, act: WindowsPathAct, tmp_path: Path) -> None:
    real = os.stat(tmp_path)
    tagged = types.SimpleNamespace(st_reparse_tag=IO_REPARSE_TAG_MOUNT_POINT)
    monkeypatch.setattr(_confine_windows.os, "stat", lambda path, follow_symlinks=True: real)
    monkeypatch.setattr(_confine_windows, "as_link", lambda info, tag: (info, tag))
    assert act.lstat_path("C:\\x") == (real, 0)  # Linux stat results carry no reparse tag
    monkeypatch.setattr(_confine_windows.os, "stat", lambda path, follow_symlinks=True: tagged)
    assert act.lstat_path("C:\\x") == (tagged, IO_REPARSE_TAG_MOUNT_POINT)


# --- the sandbox with Windows rules ------------------------------------------------------------------------------


@pytest.fixture
def windows_sandbox(kernel: FakeKernel32, act: WindowsPathAct) -> Sandbox:
    """A sandbox as Windows would make it, resolving through the fake kernel32 (locate, the link
    policy and the mechanism run; the act step's file calls would need a real Windows)."""
    held = act.open_root("C:\\Work\\proj")
    roots = [Root("C:\\Work\\proj", "C:\\Work\\proj", held, "\\"), Root("D:\\Data", "D:\\Data", None, "\\")]
    return Sandbox(roots, WindowsMechanism(kernel), act)  # type: ignore[arg-type]


@pytest.mark.req("FS-WINDOWS-PATHS")
@pytest.mark.parametrize(
    ("path", "root", "parts", "display"),
    [("C:\\Work\\proj\\src\\main.py", 0, ("src", "main.py"), "C:\\Work\\proj\\src\\main.py"),
     ("c:/work/PROJ/src", 0, ("src",), "C:\\Work\\proj\\src"),  # shown under the root's spelling
     ("src\\..\\notes.txt", 0, ("notes.txt",), "C:\\Work\\proj\\notes.txt"),  # relative: the first root
     ("\\\\?\\C:\\Work\\proj\\a", 0, ("a",), "C:\\Work\\proj\\a"),
     ("D:\\Data", 1, (), "D:\\Data"),
     ("d:\\data\\x\\y.txt", 1, ("x", "y.txt"), "D:\\Data\\x\\y.txt")],
)
def test_client_paths_are_located_by_windows_rules(windows_sandbox: Sandbox, path: str, root: int, parts: tuple[str, ...], display: str) -> None:
    location = windows_sandbox.locate(path)
    assert location.root is windows_sandbox.roots[root] and location.parts == parts and location.display == display


@pytest.mark.req("FS-WINDOWS-PATHS")
@pytest.mark.parametrize(
    ("path", "error"),
    [("C:\\Work\\secret\\key.txt", AccessDenied), ("C:\\Work\\proj\\..\\secret", AccessDenied), ("..\\secret", AccessDenied),
     ("C:\\Work\\proj_evil", AccessDenied), ("E:\\Data", AccessDenied), ("/etc/passwd", InvalidPath),
     ("C:notes.txt", InvalidPath), ("\\Work\\proj\\x", InvalidPath), ("src\\CON", InvalidPath), ("notes.txt:hidden", InvalidPath),
     ("notes.txt.", InvalidPath), ("PROGRA~1", InvalidPath), ("\\\\.\\C:\\Work\\proj", InvalidPath), ("x" * 300, InvalidPath),
     ("a\0b", InvalidPath)],
)
def test_client_paths_outside_or_unpinnable_are_refused_before_the_disk(windows_sandbox: Sandbox, kernel: FakeKernel32,
                                                                        path: str, error: type[Exception]) -> None:
    opened = len(kernel.opens)
    with pytest.raises(error):
        windows_sandbox.locate(path)
    assert len(kernel.opens) == opened


@pytest.mark.req("FS-WINDOWS-HANDLES")
@pytest.mark.parametrize(("path", "parts"), [("C:\\Work\\proj\\src\\deep", ("src", "deep")), ("to_src\\deep", ("src", "deep")),
                                             ("rel_src", ("src",)), ("C:\\Work\\proj", ())])
def test_directories_resolve_through_the_windows_mechanism(windows_sandbox: Sandbox, kernel: FakeKernel32,
                                                           path: str, parts: tuple[str, ...]) -> None:
    location, held = windows_sandbox.open_directory(path)
    assert held.path == "\\\\?\\" + "\\".join(("C:\\Work\\proj",) + parts)
    windows_sandbox.close_directory(held)
    assert windows_sandbox.locate_directory(path) == location
    assert held_paths(kernel) == ["C:\\Work\\proj"]


@pytest.mark.req("FS-WINDOWS-HANDLES", "FS-WINDOWS-PATHS")
@pytest.mark.parametrize(("path", "error"), [("out", AccessDenied), ("out\\key.txt", AccessDenied), ("to_src\\..\\out", AccessDenied),
                                             ("dangling", NotFound), ("notes.txt", WrongKind), ("missing", NotFound)])
def test_a_directory_through_a_link_leaving_the_root_is_access_denied(windows_sandbox: Sandbox, kernel: FakeKernel32,
                                                                      path: str, error: type[Exception]) -> None:
    with pytest.raises(error) as caught:
        windows_sandbox.open_directory(path)
    assert "secret" not in str(caught.value).lower()
    assert held_paths(kernel) == ["C:\\Work\\proj"]


@pytest.mark.req("FS-WINDOWS-PATHS")
def test_a_name_windows_rules_refuse_inside_an_operation_is_an_invalid_path(windows_sandbox: Sandbox) -> None:
    with pytest.raises(InvalidPath, match="reserved device name"):
        with windows_sandbox._guard("C:\\Work\\proj\\x"):
            winpaths.check_component("CON")
    with pytest.raises(ValueError, match="other"):  # any other error passes through as itself
        with windows_sandbox._guard("C:\\Work\\proj\\x"):
            raise ValueError("other")


@pytest.mark.req("FS-WINDOWS-PATHS")
def test_link_texts_are_judged_by_windows_rules_within_the_same_root(windows_sandbox: Sandbox) -> None:
    follow = windows_sandbox._follow_link(windows_sandbox.roots[0])
    assert follow(("src",), "..\\notes.txt", ("x",)) == ("notes.txt", "x")
    assert follow((), "\\\\?\\C:\\WORK\\proj\\src", ()) == ("src",)
    for text in ("..\\..\\secret", "D:\\Data\\x", "C:\\Work\\secret", "\\\\.\\pipe\\p", "CON", ""):
        with pytest.raises(_Escape):
            follow(("src",), text, ())


@pytest.mark.req("FS-WINDOWS-PATHS", "FS-ROOT-IMMOVABLE")
def test_nested_windows_roots_are_compared_by_components_case_insensitively(kernel: FakeKernel32, act: WindowsPathAct) -> None:
    held = act.open_root("C:\\Work\\proj")
    roots = [Root("C:\\Work", "C:\\Work", held, "\\"), Root("C:\\Work\\Proj\\src", "C:\\Work\\Proj\\src", None, "\\")]
    sandbox = Sandbox(roots, WindowsMechanism(kernel), act)  # type: ignore[arg-type]
    assert sandbox.below("c:\\work\\PROJ\\src", "C:\\Work") == ("PROJ", "src")
    assert sandbox.below("C:\\Workshop", "C:\\Work") is None
    assert sandbox.below("relative", "C:\\Work") is None
    from mcp_ref_fs.root import Refused

    with pytest.raises(Refused):
        sandbox._refuse_if_holds_a_root(Location(roots[0], ("proj",)), "deleted")


# --- importing on Windows ------------------------------------------------------------------------------------------

# What Windows' os module lacks (those present here), and what it has that Linux lacks.
_POSIX_ONLY = ["O_DIRECTORY", "O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC", "O_NOCTTY", "O_SYNC", "O_DSYNC", "pread", "pwrite",
               "fchown", "lchown", "chown", "fchmod", "getuid", "geteuid", "getgid", "sync", "mkfifo", "mknod", "statvfs",
               "fstatvfs", "fdatasync", "posix_fadvise", "readv", "writev", "sched_getaffinity", "killpg", "setsid",
               "getpgid", "uname", "fork", "forkpty", "openpty"]

_OUR_MODULES = """
    import mcp_ref_fs.root, mcp_ref_fs._act, mcp_ref_fs.tools, mcp_ref_fs.resources, mcp_ref_fs.watch
    import mcp_ref_fs.hosts.hostconfig, mcp_ref_fs.server, mcp_ref_fs.__main__, mcp_ref_fs._confine_walk
    import mcp_ref_fs._confine_openat2, mcp_ref_fs._confine_windows, mcp_ref_fs.hosts.jsonedit, mcp_ref_fs.mimetable
"""

# Standard-library modules that exist only on POSIX: in the simulation, importing one fails.
_POSIX_ONLY_MODULES = ["posix", "pwd", "grp", "fcntl", "termios", "tty", "pty", "resource", "syslog", "_posixsubprocess",
                       "_posixshmem"]

# Which standard-library modules importing ours brings in (run normally, in a child).
_STDLIB_USED = textwrap.dedent("""
    import sys
""") + textwrap.dedent(_OUR_MODULES) + textwrap.dedent("""
    print(" ".join(sorted(name for name in sys.modules if name.split(".")[0] in sys.stdlib_module_names)))
""")

_SIMULATION = textwrap.dedent("""
    import importlib, os, sys
    # The standard library is imported first, as it is: on Windows it is Windows' own, which
    # works, and it picks its Windows modules by sys.platform (shutil imports _winapi on 3.12+),
    # which would fail here. Only our modules are imported under the simulation.
    for name in {stdlib!r}:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    for name in {posix_only!r}:
        if hasattr(os, name):
            delattr(os, name)
    os.O_BINARY, os.O_NOINHERIT = 0x8000, 0x80
    os.supports_dir_fd = set()
    sys.platform = "win32"
    for name in {posix_only_modules!r}:
        sys.modules[name] = None  # import fails, as on Windows
""") + textwrap.dedent(_OUR_MODULES) + textwrap.dedent("""
    from mcp_ref_fs import _act, _platform
    assert _act.DIR_FLAGS == os.O_RDONLY | 0x80 and _act.FILE_FLAGS == os.O_RDONLY | 0x80 | 0x8000
    try:
        _platform.choose_act()
    except OSError as error:  # the Windows act step was chosen; it needs a real kernel32
        print("windows act:", error)
    try:
        _platform.choose_act("at")
    except ValueError as error:
        print("no at:", error)
    try:
        mcp_ref_fs.root.choose_mechanism("walk")
    except ValueError as error:
        print("no walk:", error)
""")


@pytest.mark.req("FS-ACT-PATHS")
def test_the_server_imports_where_posix_only_names_are_missing() -> None:
    """Windows' ``os`` has no O_DIRECTORY, O_NOFOLLOW, pread...: a module that reads one at import
    would fail there at start. Simulated here: the standard library our modules use is imported as
    it is, then those names are deleted, POSIX-only modules made unimportable, sys.platform says
    win32, and our modules are imported."""
    if sys.platform == "win32":
        pytest.skip("a simulation of Windows; on Windows the real import is tested")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    used = subprocess.run([sys.executable, "-c", _STDLIB_USED], capture_output=True, text=True, timeout=60, env=env)
    assert used.returncode == 0, used.stderr
    stdlib = [name for name in used.stdout.split() if name.split(".")[0] not in _POSIX_ONLY_MODULES]
    script = _SIMULATION.format(stdlib=stdlib, posix_only=_POSIX_ONLY, posix_only_modules=_POSIX_ONLY_MODULES)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    assert "windows act: the Windows confinement mechanism needs Windows" in result.stdout
    assert "no at: the at act step needs POSIX *at calls" in result.stdout
    assert "no walk: the walk mechanism needs POSIX *at calls" in result.stdout


@pytest.mark.req("FS-ACT-PATHS")
def test_the_act_step_is_chosen_by_capability_and_can_be_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    if sys.platform == "win32":
        pytest.skip("the POSIX choices; Windows takes its own (tested below)")
    monkeypatch.delenv("MCP_REF_FS_ACT", raising=False)
    assert _platform.choose_act().name == "at"
    assert _platform.choose_act("paths").name == "paths"
    monkeypatch.setenv("MCP_REF_FS_ACT", "paths")
    assert _platform.choose_act().name == "paths"
    assert _platform.choose_act("at").name == "at"  # an explicit choice wins over the environment
    with pytest.raises(ValueError, match="unknown act step"):
        _platform.choose_act("fast")
    with pytest.raises(OSError, match="needs Windows"):
        _platform.choose_act(windows=True)
    with pytest.raises(ValueError, match="Windows lacks"):
        _platform.choose_act("at", windows=True)
    monkeypatch.setattr(_act, "FD_PATHS", "/nonexistent/fd")
    with pytest.raises(ValueError, match="needs /nonexistent/fd"):
        _platform.choose_act("paths")
    monkeypatch.setattr(_act.os, "supports_dir_fd", set())
    with pytest.raises(ValueError, match="needs POSIX"):
        _platform.choose_act("at")


# --- on Windows itself (CI's windows job; never run here) ------------------------------------------------------


@pytest.mark.skipif(sys.platform != "win32", reason="the real kernel32: Windows only (the CI workflow's windows job)")
def test_on_windows_the_sandbox_works_and_refuses_a_junction_out(tmp_path: Path) -> None:
    from mcp_ref_fs.root import AlreadyExists

    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (root / "sub" / "a.txt").write_bytes(b"hello")
    subprocess.run(["cmd", "/c", "mklink", "/J", str(root / "out"), str(outside)], check=True, capture_output=True)
    sandbox = Sandbox.open([str(root)])
    try:
        assert sandbox.act.name == "paths" and sandbox.mechanism.name == "windows"
        with sandbox.open_file(str(root / "sub" / "a.txt")) as opened:
            assert opened.read_at(1, 4) == b"ello"
        with sandbox.replace_file("sub\\b.txt") as replacing:
            replacing.write(b"new")
            replacing.commit()
        assert (root / "sub" / "b.txt").read_bytes() == b"new"
        with pytest.raises(AlreadyExists):
            sandbox.move("sub\\a.txt", "sub\\b.txt")
        sandbox.move("sub\\a.txt", "sub\\c.txt")
        assert sorted(entry.name for entry in sandbox.list_directory("sub")[1]) == ["b.txt", "c.txt"]
        for path in ("out\\secret.txt", str(outside / "secret.txt")):
            with pytest.raises(AccessDenied):
                sandbox.open_file(path)
        assert not [components for components, _entry in sandbox.walk(".") if "secret.txt" in components]
        sandbox.delete("sub\\c.txt")
        assert not (root / "sub" / "c.txt").exists() and (outside / "secret.txt").read_text() == "secret"
    finally:
        sandbox.close()
