"""``file://`` URIs of Windows paths (``mcp_ref_fs.resources.path_uri``/``uri_path`` with
``windows=True``) and junctions in listings, on any OS.

The URI functions are pure string work that takes the path flavour as a flag, so both flavours
run here as tables: Windows paths to URIs and back (RFC 8089 appendix E: ``file:///C:/...``,
``file://server/share/...``), round trips of awkward names, every refused spelling, and the
sandbox's Windows path rules placing what a URI names. Junctions are faked: a ``DirEntry`` that
says ``is_junction()`` (Python 3.12+), or one whose ``lstat`` carries a reparse tag (3.11).
"""

from __future__ import annotations

import os
import pathlib
import types
from pathlib import Path
from typing import Any

import pytest

from mcp_ref import Server
from mcp_ref.features.uritemplate import UriTemplate
from mcp_ref_fs import listing
from mcp_ref_fs.resources import FsResources, location_uri, path_uri, uri_path
from mcp_ref_fs.root import AccessDenied, InvalidPath, Root, Sandbox

# --- path -> URI -> path ------------------------------------------------------------------------------

WINDOWS_TABLE = [
    ("C:\\Users\\me\\notes x.md", "file:///C:/Users/me/notes%20x.md"),
    ("C:\\", "file:///C:/"),
    ("D:\\Data", "file:///D:/Data"),
    ("C:\\Users\\me\\100% done.txt", "file:///C:/Users/me/100%25%20done.txt"),
    ("C:\\r\\#tag", "file:///C:/r/%23tag"),
    ("C:\\r\\what?", "file:///C:/r/what%3F"),  # a name the sandbox refuses, but the URI round-trips
    ("C:\\r\\Ünïcödé\\日本語.txt", "file:///C:/r/%C3%9Cn%C3%AFc%C3%B6d%C3%A9/%E6%97%A5%E6%9C%AC%E8%AA%9E.txt"),
    ("C:\\r\\a;b=c&d+e,f'g(h)~i!$@", "file:///C:/r/a%3Bb%3Dc%26d%2Be%2Cf%27g%28h%29~i%21%24%40"),
    ("C:\\r\\%2F", "file:///C:/r/%252F"),  # a literal percent sign, never decoded twice
    ("\\\\server\\share\\team\\plan.md", "file://server/share/team/plan.md"),
    ("\\\\server\\share\\", "file://server/share/"),  # a share's root, as winpaths spells it
    ("\\\\files.example.com\\my share\\a b", "file://files.example.com/my%20share/a%20b"),
    ("\\\\localhost\\C$\\x", "file://localhost/C%24/x"),
]


@pytest.mark.req("FS-URI-WINDOWS")
@pytest.mark.parametrize(("path", "uri"), WINDOWS_TABLE)
def test_windows_paths_and_their_file_uris(path: str, uri: str) -> None:
    assert path_uri(path, windows=True) == uri
    assert uri_path(uri, windows=True) == path
    assert uri.isascii()


ROUND_TRIP_NAMES = ["notes x.md", "100%.txt", "%41", "#hash", "what?", "a&b=c", "Ünïcödé", "日本語 ファイル.txt",
                    "emoji 😀", "tab\there", "semi;colon", "~tilde", "plus+sign", "comma,s", "[brackets]", "'quote'"]


@pytest.mark.req("FS-URI-WINDOWS", "FS-RESOURCE-URI-RFC8089")
@pytest.mark.parametrize("name", ROUND_TRIP_NAMES)
def test_a_path_round_trips_through_its_uri_in_both_flavours(name: str) -> None:
    for path, windows in (("/home/me/dir/" + name, False), ("C:\\Users\\me\\dir\\" + name, True),
                          ("\\\\server\\share\\dir\\" + name, True)):
        uri = path_uri(path, windows=windows)
        assert uri.isascii() and "?" not in uri and "#" not in uri and " " not in uri
        assert uri_path(uri, windows=windows) == path


@pytest.mark.req("FS-URI-WINDOWS")
@pytest.mark.parametrize("name", ROUND_TRIP_NAMES)
def test_the_uris_agree_with_pathlib(name: str) -> None:
    """pathlib's ``as_uri`` is the standard library's reading of RFC 8089 for both flavours."""
    for path in ("C:\\Users\\me\\" + name, "\\\\server\\share\\" + name):
        assert path_uri(path, windows=True) == pathlib.PureWindowsPath(path).as_uri()
    assert path_uri("/home/me/" + name) == pathlib.PurePosixPath("/home/me/" + name).as_uri()


@pytest.mark.req("FS-URI-WINDOWS")
def test_the_posix_flavour_is_the_one_the_server_always_had() -> None:
    """Byte for byte what Linux served before Windows URIs existed (the default flavour)."""
    assert path_uri("/r/my notes.md") == "file:///r/my%20notes.md"
    assert path_uri("/r/C:\\x") == "file:///r/C%3A%5Cx"  # a backslash is a name character on POSIX
    assert uri_path("file:///r/C%3A%5Cx") == "/r/C:\\x"
    assert uri_path("file:///C:/x") == "/C:/x"  # just a POSIX path (outside any root there)
    with pytest.raises(ValueError):
        uri_path("file://server/share/x")


# --- what URIs parse to, and what is refused -------------------------------------------------------------

ACCEPTED = [
    ("file:///c:/Users/me/x.txt", "C:\\Users\\me\\x.txt"),  # the drive letter comes back upper-case
    ("file:///C%3A/x", "C:\\x"),  # an encoded colon
    ("file:///c%3a/x", "C:\\x"),
    ("file://localhost/C:/x", "C:\\x"),
    ("file:/C:/x", "C:\\x"),  # the minimal form
    ("file:///C:", "C:\\"),  # the drive's root, never the drive-relative "C:"
    ("file:///C:/", "C:\\"),
    ("file:///C:/a//b/", "C:\\a\\\\b\\"),  # empty segments stay empty: the sandbox collapses them
    ("file:///C:/CON", "C:\\CON"),  # decoded as written: the sandbox's rules refuse the name
    ("file:///C:/a%3Astream", "C:\\a:stream"),  # likewise (an alternate data stream)
    ("file://SERVER/Share/x", "\\\\SERVER\\Share\\x"),
    ("file://10.0.0.5/share/x", "\\\\10.0.0.5\\share\\x"),
    ("file://localhost/share/x", "\\\\localhost\\share\\x"),  # localhost then a share: the local UNC share
]


@pytest.mark.req("FS-URI-WINDOWS")
@pytest.mark.parametrize(("uri", "path"), ACCEPTED)
def test_windows_file_uris_parse_to_windows_paths(uri: str, path: str) -> None:
    assert uri_path(uri, windows=True) == path


REFUSED = [
    "file:////server/share/x",  # the four-slash form
    "file://///server/share/x",
    "file:///%5C%5C%3F%5CC:/x",  # \\?\ spelled in a segment
    "file:///%5C%5C.%5CC:/x",  # \\.\ likewise
    "file://%3F/C:/x",  # ? as the host
    "file://./share/x",  # \\.\share: a device path
    "file://../share/x",
    "file:///C:/a%5Cb",  # a backslash inside a name
    "file:///C:/a%2Fb",
    "file:///C:/a%00b",
    "file:///C:/a/../b",
    "file:///C:/%2e%2e/b",
    "file:///C:/./b",
    "file:///C:/%C3",  # not UTF-8
    "file:///C|/x",  # the legacy vertical line
    "file:///C%7C/x",
    "file:///CC:/x",
    "file:///C:x/y",
    "file:///x/y",  # no drive
    "file:/x/y",
    "file://localhost/",
    "file:C:/x",
    "file:///C:/a?b",
    "file:///C:/a#b",
    "http:///C:/x",
    "FILE:///C:/x",
    "file://server",
    "file://server/",
    "file://server//share",
    "file://server/C:/x",  # a share named like a drive
    "file://user@server/share/x",
    "file://server:445/share/x",
    "file://[::1]/share/x",
    "file://ser%76er/share/x",
    "file://sérveur/share/x",
]


@pytest.mark.req("FS-URI-WINDOWS")
@pytest.mark.parametrize("uri", REFUSED)
def test_windows_file_uris_that_are_refused(uri: str) -> None:
    with pytest.raises(ValueError):
        uri_path(uri, windows=True)


@pytest.mark.req("FS-URI-WINDOWS")
@pytest.mark.parametrize("path", ["\\\\?\\C:\\x", "\\\\?\\UNC\\server\\share\\x", "\\\\.\\C:\\x", "\\??\\C:\\x", "C:x", "C:",
                                  "\\x", "x\\y", "\\\\server", "\\\\.\\pipe\\x", "\\\\bad server\\share", "C:\\a\\..\\b"])
def test_windows_paths_without_a_file_uri_are_refused(path: str) -> None:
    with pytest.raises(ValueError):
        path_uri(path, windows=True)


# --- through the sandbox's Windows rules (pure string work) ----------------------------------------------


@pytest.fixture
def windows_sandbox() -> Sandbox:
    """Roots as Windows would spell them; only ``locate`` (no disk access) is used."""
    roots = [Root("C:\\Users\\me", "C:\\Users\\me", None, "\\"), Root("\\\\server\\share\\team", "\\\\server\\share\\team", None, "\\"),
             Root("D:\\", "D:\\", None, "\\")]
    return Sandbox(roots, mechanism=object(), act=types.SimpleNamespace(sep="\\"))  # type: ignore[arg-type]


@pytest.mark.req("FS-URI-WINDOWS")
@pytest.mark.parametrize(("uri", "canonical"), [
    ("file:///C:/Users/me/notes%20x.md", "file:///C:/Users/me/notes%20x.md"),
    ("file:///c%3A/users/ME/notes%20x.md", "file:///C:/Users/me/notes%20x.md"),  # case-insensitive, under the root's spelling
    ("file:///C:/Users/me", "file:///C:/Users/me"),
    ("file:///C:/Users/me/a//b/", "file:///C:/Users/me/a/b"),
    ("file://localhost/C:/Users/me/%E6%97%A5.txt", "file:///C:/Users/me/%E6%97%A5.txt"),
    ("file://server/share/team/plan.md", "file://server/share/team/plan.md"),
    ("file://SERVER/SHARE/Team/plan.md", "file://server/share/team/plan.md"),
    ("file:///D:/x", "file:///D:/x"),
    ("file:///D:", "file:///D:/"),
])
def test_a_uri_names_a_location_and_the_location_its_canonical_uri(windows_sandbox: Sandbox, uri: str, canonical: str) -> None:
    location = windows_sandbox.locate(uri_path(uri, windows=True))
    assert location_uri(location) == canonical
    assert windows_sandbox.locate(uri_path(canonical, windows=True)) == location


@pytest.mark.req("FS-URI-WINDOWS")
@pytest.mark.parametrize(("uri", "error"), [
    ("file:///C:/Users/other/x", AccessDenied),
    ("file:///C:/Users/me_evil/x", AccessDenied),
    ("file:///E:/x", AccessDenied),
    ("file://server/share/other/x", AccessDenied),  # the share, but outside the root on it
    ("file://otherserver/share/team/x", AccessDenied),  # a UNC URI reaches only a share a root is on
    ("file://localhost/share/team/x", AccessDenied),
    ("file:///C:/Users/me/CON", InvalidPath),
    ("file:///C:/Users/me/nul.txt", InvalidPath),
    ("file:///C:/Users/me/a%3Astream", InvalidPath),
    ("file:///C:/Users/me/trailing.", InvalidPath),
    ("file:///C:/Users/me/PROGRA~1", InvalidPath),
    ("file:///C:/Users/me/a%3Cb", InvalidPath),
])
def test_what_a_uri_names_is_placed_by_the_sandboxs_windows_rules(windows_sandbox: Sandbox, uri: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        windows_sandbox.locate(uri_path(uri, windows=True))


@pytest.mark.req("FS-URI-WINDOWS", "FS-RESOURCE-URI-RFC8089")
def test_templates_address_drive_paths_and_unc_shares_only_when_a_root_is_one(windows_sandbox: Sandbox) -> None:
    def templates(sandbox: Sandbox) -> tuple[list[str], FsResources]:
        server = Server("t", "0")
        resources = FsResources(server, sandbox, config=None)  # type: ignore[arg-type]
        return [t.uri_template for t in server.resource_templates], resources

    names, resources = templates(windows_sandbox)
    assert names == ["file:///{+path}", "file://{host}/{+path}"]
    assert resources.windows
    assert UriTemplate(names[0]).match("file:///C:/Users/me/notes%20x.md") == {"path": "C:/Users/me/notes x.md"}
    assert UriTemplate(names[0]).match("file://server/share/team/x") is None
    assert UriTemplate(names[1]).match("file://server/share/team/x") == {"host": "server", "path": "share/team/x"}
    assert UriTemplate(names[1]).match("file:///C:/Users/me/x") is None
    assert resources._locate("file:///c:/Users/me/x") == "C:\\Users\\me\\x"

    drives_only = Sandbox(windows_sandbox.roots[:1], mechanism=object(), act=types.SimpleNamespace(sep="\\"))  # type: ignore[arg-type]
    assert templates(drives_only)[0] == ["file:///{+path}"]
    posix = Sandbox([Root("/r", "/r", None)], mechanism=object(), act=types.SimpleNamespace(sep="/"))  # type: ignore[arg-type]
    names, resources = templates(posix)
    assert names == ["file:///{+path}"] and not resources.windows
    assert resources._locate("file:///r/a%20b") == "/r/a b"


@pytest.mark.req("FS-URI-WINDOWS", "FS-SUBSCRIBE-URI-CANONICAL")
def test_the_watcher_spells_windows_uris_one_way(windows_sandbox: Sandbox) -> None:
    from mcp_ref_fs.watch import Watcher

    watcher = Watcher(types.SimpleNamespace(), windows_sandbox)  # type: ignore[arg-type]
    assert watcher._canonical("file:///c%3A/USERS/me/a%20b.txt") == "file:///C:/Users/me/a%20b.txt"
    assert watcher._canonical("file://SERVER/share/TEAM/x") == "file://server/share/team/x"
    assert watcher._canonical("file:///C:/Users/other/x") is None
    assert watcher._canonical("file:////server/share/team/x") is None
    assert watcher._uri_of("C:\\Users\\me\\d\\f.txt") == "file:///C:/Users/me/d/f.txt"


# --- junctions in listings -------------------------------------------------------------------------------


class FakeEntry:
    """A ``DirEntry`` as Windows gives one: a junction is a directory, not a symlink, to Python."""

    def __init__(self, entry: os.DirEntry[str] | None = None, *, name: str = "j", directory: bool = True,
                 junction: bool | None = None, tag: int = 0) -> None:
        self._entry, self.name, self._directory, self._tag = entry, entry.name if entry else name, directory, tag
        self.path = entry.path if entry else name
        if junction is not None:
            self.is_junction = lambda: junction  # Python 3.12+

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        return self._entry.is_file(follow_symlinks=follow_symlinks) if self._entry else not self._directory

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return self._entry.is_dir(follow_symlinks=follow_symlinks) if self._entry else self._directory

    def is_symlink(self) -> bool:
        return self._entry.is_symlink() if self._entry else False

    def stat(self, *, follow_symlinks: bool = True) -> Any:
        info = self._entry.stat(follow_symlinks=follow_symlinks) if self._entry else os.stat(".")
        return types.SimpleNamespace(st_mode=info.st_mode, st_size=info.st_size, st_mtime=info.st_mtime, st_reparse_tag=self._tag)


@pytest.mark.req("FS-WINDOWS-HANDLES", "FS-WALK-NO-LINKED-DIRS")
def test_a_junction_is_a_link_to_listings_not_a_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    assert listing._other_kind(FakeEntry(junction=True)) == "symlink"  # Python 3.12+: DirEntry.is_junction
    assert listing._other_kind(FakeEntry(junction=False)) == "directory"
    assert listing._other_kind(FakeEntry(tag=0xA0000003)) == ("symlink" if listing._REPARSE_TAGS else "directory")
    monkeypatch.setattr(listing, "_REPARSE_TAGS", True)  # Python 3.11 on Windows: the entry's reparse tag
    assert listing._other_kind(FakeEntry(tag=0xA0000003)) == "symlink"  # IO_REPARSE_TAG_MOUNT_POINT
    assert listing._other_kind(FakeEntry(tag=0x9000001A)) == "directory"  # a cloud placeholder is what it is
    assert listing._other_kind(FakeEntry(tag=0)) == "directory"
    assert listing._other_kind(FakeEntry(directory=False)) == "other"


@pytest.mark.req("FS-WINDOWS-HANDLES", "FS-WALK-NO-LINKED-DIRS")
@pytest.mark.parametrize("style", ["is_junction", "reparse_tag"])
def test_walks_and_listings_show_a_junction_as_a_link_and_never_enter_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                          style: str) -> None:
    (tmp_path / "jn").mkdir()  # stands in for a junction: a directory to the file system
    (tmp_path / "jn" / "inside.txt").write_text("x")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "f.txt").write_text("y")
    (tmp_path / "big.txt").write_text("z" * 100)
    sandbox = Sandbox.open([str(tmp_path)])
    real_scandir = sandbox.act.scandir

    class Scan:
        def __init__(self, held: Any) -> None:
            self._scan = real_scandir(held)

        def __enter__(self) -> Any:
            entries = list(self._scan.__enter__())
            if style == "is_junction":
                return [FakeEntry(e, junction=e.name == "jn") for e in entries]
            return [FakeEntry(e, tag=0xA0000003 if e.name == "jn" else 0) for e in entries]

        def __exit__(self, *exc: object) -> None:
            self._scan.__exit__(*exc)

        def __iter__(self) -> Any:
            return iter(self.__enter__())

    monkeypatch.setattr(sandbox.act, "scandir", Scan)
    monkeypatch.setattr(listing, "_REPARSE_TAGS", True)
    monkeypatch.setattr(sandbox, "_linked", lambda location: None)  # as a junction leaving its root
    try:
        for sizes in (True, False):
            walked = {components: entry.kind for components, entry in sandbox.walk(str(tmp_path), sizes=sizes)}
            assert walked == {("big.txt",): "file", ("dir",): "directory", ("dir", "f.txt"): "file", ("jn",): "symlink"}
            _location, entries, _total = sandbox.list_directory_page(str(tmp_path), sizes=sizes)
            assert {e.name: e.kind for e in entries} == {"big.txt": "file", "dir": "directory", "jn": "symlink"}
        _location, entries, _total = sandbox.list_directory_page(str(tmp_path), largest_first=True)
        assert [(e.name, e.kind) for e in entries] == [("big.txt", "file"), ("dir", "directory"), ("jn", "symlink")]
    finally:
        sandbox.close()
