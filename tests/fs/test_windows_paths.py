"""Windows path rules (``mcp_ref_fs.winpaths``) and the Windows mechanism's plumbing, on any OS.

The rules are pure string functions, so the whole table runs on Linux. The mechanism itself
(``_confine_windows``) needs Windows to open anything; here it must import cleanly, stay
unavailable, and never be chosen.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from mcp_ref_fs import _confine_windows, winpaths
from mcp_ref_fs.winpaths import WindowsPathError, check_component, is_within, kind, locate, name_key, parse_absolute

# --- kinds of path -------------------------------------------------------------------------------

KINDS = [
    ("C:\\Users\\me", "drive-absolute"),
    ("c:/Users/me", "drive-absolute"),
    ("C:\\", "drive-absolute"),
    ("C:foo", "drive-relative"),
    ("C:", "drive-relative"),
    ("\\foo", "rooted"),
    ("/foo", "rooted"),
    ("\\\\server\\share\\x", "unc"),
    ("//server/share/x", "unc"),
    ("\\\\?\\C:\\x", "namespace"),
    ("\\\\?\\UNC\\server\\share", "namespace"),
    ("\\\\?\\unc\\server\\share", "namespace"),
    ("\\\\.\\PhysicalDrive0", "device"),
    ("\\\\.\\C:\\x", "device"),
    ("\\??\\C:\\x", "device"),
    ("\\\\?\\GLOBALROOT\\Device\\HarddiskVolume1", "device"),
    ("\\\\?\\Volume{01234567-89ab-cdef-0123-456789abcdef}\\x", "device"),
    ("docs\\a.txt", "relative"),
    ("a", "relative"),
]


@pytest.mark.req("FS-WINDOWS-PATHS")
@pytest.mark.parametrize(("path", "expected"), KINDS)
def test_kinds_of_path(path: str, expected: str) -> None:
    assert kind(path) == expected


# --- components ------------------------------------------------------------------------------------

ALLOWED_NAMES = ["a.txt", "notes", "CONFIG.SYS", "console", "COM10", "LPT0", "nul_device", "auxiliary.txt",
                 "report.final.txt", "~1", "tilde~name", "ABCDEFGHI~1", "DOCUME~10", "x~0", ".hidden", "Ünïcödé", "a b"]
REFUSED_NAMES = [
    ("CON", "reserved"), ("con", "reserved"), ("Con.txt", "reserved"), ("NUL.tar.gz", "reserved"),
    ("PRN", "reserved"), ("AUX", "reserved"), ("COM1", "reserved"), ("com9.log", "reserved"),
    ("LPT1", "reserved"), ("lpt9", "reserved"), ("COM¹", "reserved"), ("LPT³.txt", "reserved"),
    ("CONIN$", "reserved"), ("conout$", "reserved"), ("CON .txt", "reserved"), ("nul  .x", "reserved"),
    ("CON ", "dot or a space"), ("NUL.", "dot or a space"), ("a.", "dot or a space"), ("a ", "dot or a space"),
    ("a...", "dot or a space"), ("file.txt. . ", "dot or a space"),
    ("file.txt:secret", "alternate data stream"), ("file.txt::$DATA", "alternate data stream"),
    ("dir:$I30:$INDEX_ALLOCATION", "alternate data stream"), ("C:", "alternate data stream"),
    ("PROGRA~1", "short name"), ("progra~1", "short name"), ("LONGNA~2.TXT", "short name"),
    ("AB12C~1", "short name"), ("DOCUM~10", "short name"), ("a~1.b", "short name"),
    ("what?", "character"), ("a*b", "character"), ("a<b", "character"), ('a"b', "character"),
    ("a|b", "character"), ("tab\there", "character"), ("", "empty"),
]


@pytest.mark.req("FS-WINDOWS-PATHS")
@pytest.mark.parametrize("name", ALLOWED_NAMES)
def test_ordinary_names_are_allowed(name: str) -> None:
    assert check_component(name) == name


@pytest.mark.req("FS-WINDOWS-PATHS")
@pytest.mark.parametrize(("name", "reason"), REFUSED_NAMES)
def test_names_windows_reads_as_something_else_are_refused(name: str, reason: str) -> None:
    with pytest.raises(WindowsPathError, match=reason):
        check_component(name)


# --- parsing absolute paths -----------------------------------------------------------------------

PARSED = [
    ("C:\\Users\\me", "C:", ("Users", "me")),
    ("c:/Users//me/", "C:", ("Users", "me")),
    ("C:\\Users\\me\\..\\you\\.\\x", "C:", ("Users", "you", "x")),
    ("C:\\..\\..\\Windows", "C:", ("Windows",)),  # never above the drive
    ("C:/mixed\\separators/x", "C:", ("mixed", "separators", "x")),
    ("\\\\server\\share\\dir\\f.txt", "\\\\server\\share", ("dir", "f.txt")),
    ("//server/share/../../up", "\\\\server\\share", ("up",)),  # never above the share
    ("\\\\?\\C:\\Users\\me", "C:", ("Users", "me")),
    ("\\\\?\\UNC\\server\\share\\d", "\\\\server\\share", ("d",)),
]


@pytest.mark.req("FS-WINDOWS-PATHS")
@pytest.mark.parametrize(("path", "anchor", "parts"), PARSED)
def test_absolute_paths_parse_to_an_anchor_and_components(path: str, anchor: str, parts: tuple[str, ...]) -> None:
    parsed = parse_absolute(path)
    assert (parsed.anchor, parsed.parts) == (anchor, parts)


REFUSED_PATHS = [
    ("C:foo\\bar", "current directory of drive"),
    ("\\Windows\\System32", "current drive"),
    ("\\\\.\\PhysicalDrive0", "device path"),
    ("\\??\\C:\\x", "device path"),
    ("\\\\?\\GLOBALROOT\\Device\\x", "device path"),
    ("\\\\?\\C:\\r\\..\\x", "not normalised"),  # \\?\ paths are taken literally by Windows
    ("\\\\server", "server and a share"),
    ("C:\\r\\CON", "reserved"),
    ("C:\\r\\secret.txt:hidden", "alternate data stream"),
    ("C:\\r\\PROGRA~1\\x", "short name"),
    ("C:\\r\\trailing.\\x", "dot or a space"),
    ("C:\\r\\a\0b", "NUL"),
    ("relative\\path", "not an absolute path"),
]


@pytest.mark.req("FS-WINDOWS-PATHS")
@pytest.mark.parametrize(("path", "reason"), REFUSED_PATHS)
def test_spellings_a_sandbox_cannot_pin_down_are_refused(path: str, reason: str) -> None:
    with pytest.raises(WindowsPathError, match=reason):
        parse_absolute(path)


# --- comparison and confinement -------------------------------------------------------------------

WITHIN = [
    ("C:\\Root\\a.txt", "C:\\Root", True),
    ("c:\\root\\A.TXT", "C:\\Root", True),  # case-insensitive, drive letter too
    ("C:\\Root", "C:\\Root", True),
    ("C:\\Root\\", "C:\\Root", True),
    ("\\\\?\\C:\\Root\\sub\\f", "C:\\Root", True),  # what GetFinalPathNameByHandleW returns
    ("\\\\?\\UNC\\Srv\\Share\\Root\\f", "\\\\srv\\share\\root", True),
    ("C:\\Root_evil\\a.txt", "C:\\Root", False),  # whole components only
    ("C:\\Rootx", "C:\\Root", False),
    ("D:\\Root\\a.txt", "C:\\Root", False),
    ("C:\\Root\\..\\Other", "C:\\Root", False),
    ("C:\\Other", "C:\\Root", False),
    ("\\\\srv\\other\\Root", "\\\\srv\\share\\Root", False),
    ("\\\\.\\C:\\Root\\a", "C:\\Root", False),  # a device spelling is never inside
    ("C:\\STRASSE\\f", "C:\\straße", False),  # NTFS does not casefold ß to ss
    ("C:\\ÄRGER\\f", "C:\\ärger", True),
]


@pytest.mark.req("FS-WINDOWS-PATHS")
@pytest.mark.parametrize(("path", "root", "expected"), WITHIN)
def test_final_paths_are_compared_with_the_roots_case_insensitively_by_whole_components(path: str, root: str, expected: bool) -> None:
    assert is_within(path, root) is expected


def test_name_keys_use_simple_upper_case_mappings_only() -> None:
    assert name_key("abcäß") == "ABCÄß"
    assert winpaths.same_name("Readme.MD", "README.md")


ROOTS = ["C:\\Users\\me\\proj", "C:\\Users\\me\\proj\\vendor", "\\\\nas\\share\\docs"]
LOCATED = [
    ("a.txt", 0, ("a.txt",)),  # relative: below the first root
    ("sub\\..\\b.txt", 0, ("b.txt",)),
    ("c:/users/ME/Proj/src/x.py", 0, ("src", "x.py")),
    ("C:\\Users\\me\\proj\\vendor\\lib", 1, ("lib",)),  # the longest root wins
    ("\\\\NAS\\Share\\Docs\\q.pdf", 2, ("q.pdf",)),
    ("\\\\?\\C:\\Users\\me\\proj\\y", 0, ("y",)),
]


@pytest.mark.req("FS-WINDOWS-PATHS")
@pytest.mark.parametrize(("path", "index", "parts"), LOCATED)
def test_client_paths_locate_a_root_and_components(path: str, index: int, parts: tuple[str, ...]) -> None:
    assert locate(path, ROOTS) == (index, parts)


@pytest.mark.parametrize(
    "path",
    ["..\\escape.txt", "C:\\Users\\me\\proj\\..\\secret", "C:\\Users\\me\\proj_evil\\x", "D:\\Users\\me\\proj\\x",
     "C:\\Users\\me", "\\\\nas\\share\\other", "C:proj\\x", "\\Users\\me\\proj\\x", "sub\\nul.txt", "data.bin:stream",
     "PROGRA~1\\x", "\\\\.\\C:\\Users\\me\\proj\\x"],
)
@pytest.mark.req("FS-WINDOWS-PATHS")
def test_client_paths_outside_or_ambiguous_are_refused(path: str) -> None:
    with pytest.raises(WindowsPathError):
        locate(path, ROOTS)


@pytest.mark.parametrize(
    ("path", "outside"),
    [("..\\escape.txt", True), ("C:\\Users\\me\\proj_evil\\x", True), ("D:\\x", True), ("\\\\nas\\share\\other", True),
     ("C:proj\\x", False), ("\\Users\\me\\proj\\x", False), ("sub\\nul.txt", False), ("PROGRA~1\\x", False),
     ("\\\\.\\C:\\Users\\me\\proj\\x", False)],
)
@pytest.mark.req("FS-WINDOWS-PATHS")
def test_a_path_outside_the_roots_is_told_from_a_malformed_one(path: str, outside: bool) -> None:
    """The sandbox answers AccessDenied for the first kind and InvalidPath for the second."""
    with pytest.raises(WindowsPathError) as caught:
        locate(path, ROOTS)
    assert isinstance(caught.value, winpaths.Outside) is outside


# --- link texts: the Windows spelling of the link policy -------------------------------------------------

ALIASES = ("C:\\Users\\me\\proj", "C:\\Real\\proj")
FOLLOWED = [
    ("b.txt", ("sub",), ("sub", "b.txt")),  # relative to the directory holding the link
    ("..\\b.txt", ("sub",), ("b.txt",)),
    ("../x/./y", ("sub",), ("x", "y")),
    (".\\", ("sub",), ("sub",)),
    ("C:\\Users\\me\\proj\\a", ("sub",), ("a",)),  # absolute, under either spelling of the root
    ("c:/real/PROJ/a/b", (), ("a", "b")),
    ("\\\\?\\C:\\Users\\me\\proj\\j", (), ("j",)),  # how os.readlink reports a junction
    ("C:\\Users\\me\\proj", ("sub",), ()),
]


@pytest.mark.req("FS-WINDOWS-PATHS")
@pytest.mark.parametrize(("text", "prefix", "parts"), FOLLOWED)
def test_link_texts_inside_the_same_root_name_components_below_it(text: str, prefix: tuple[str, ...], parts: tuple[str, ...]) -> None:
    assert winpaths.follow_link(text, ALIASES, prefix) == parts


@pytest.mark.parametrize(
    ("text", "outside"),
    [("..\\..\\secret", True), ("../..", True), ("C:\\Users\\me\\other\\x", True), ("C:\\Users\\me\\proj_evil", True),
     ("D:\\Users\\me\\proj\\x", True), ("\\\\server\\share\\x", True), ("\\\\?\\UNC\\server\\share", True),
     ("", False), ("a\0b", False), ("C:x", False), ("\\Users\\me\\proj\\a", False), ("\\\\.\\pipe\\x", False),
     ("\\\\?\\Volume{0123}\\x", False), ("nul", False), ("a:stream", False), ("C:\\Users\\me\\proj\\CON", False),
     ("C:\\Users\\me\\proj\\x.", False)],
)
@pytest.mark.req("FS-WINDOWS-PATHS")
def test_link_texts_leaving_the_root_or_unpinnable_are_refused_on_the_text_alone(text: str, outside: bool) -> None:
    with pytest.raises(WindowsPathError) as caught:
        winpaths.follow_link(text, ALIASES, ("sub",))
    assert isinstance(caught.value, winpaths.Outside) is outside


# --- the mechanism on a system that is not Windows ----------------------------------------------------


def test_the_windows_mechanism_imports_everywhere_but_is_available_only_on_windows() -> None:
    assert _confine_windows.available() is (sys.platform == "win32")
    assert _confine_windows.WindowsMechanism.name == "windows"
    if sys.platform != "win32":
        with pytest.raises(OSError):
            _confine_windows.WindowsMechanism()


def test_the_automatic_choice_never_picks_the_windows_mechanism_elsewhere() -> None:
    from mcp_ref_fs.root import choose_mechanism

    if sys.platform != "win32":
        assert choose_mechanism().name != "windows"
        with pytest.raises(ValueError, match="windows"):
            choose_mechanism("windows")


def test_final_path_checks_refuse_handles_outside_the_roots() -> None:
    check = _confine_windows.check_final_path
    assert check("\\\\?\\C:\\Root\\sub\\f.txt", ["C:\\Root"]) == 0
    assert check("\\\\?\\c:\\other\\root\\x", ["C:\\Root", "C:\\Other\\Root"]) == 1
    with pytest.raises(_confine_windows.Escape):
        check("\\\\?\\C:\\Windows\\System32\\config", ["C:\\Root"])
    with pytest.raises(_confine_windows.Escape):
        check("\\\\?\\Volume{0123}\\x", ["C:\\Root"])  # a volume not mounted at a drive letter


# --- macOS: moves without replacing through renameatx_np(RENAME_EXCL) ---------------------------------


def test_on_macos_moves_use_renameatx_np_with_rename_excl(monkeypatch: pytest.MonkeyPatch) -> None:
    """Linux cannot run it; the lookup and the flag translation are checked with a stand-in libc."""
    import ctypes
    import types

    from mcp_ref_fs import _act

    calls: list[tuple[Any, ...]] = []

    def renameatx_np(*args: Any) -> int:
        calls.append(args)
        return 0

    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(ctypes, "CDLL", lambda *a, **k: types.SimpleNamespace(renameatx_np=renameatx_np))  # no renameat2
    _act._renameat2.cache_clear()
    try:
        function = _act._renameat2()
        assert function is not None
        assert function(3, b"a", 4, b"b", _act._RENAME_NOREPLACE) == 0
        assert calls == [(3, b"a", 4, b"b", 0x4)]  # RENAME_EXCL
    finally:
        _act._renameat2.cache_clear()
