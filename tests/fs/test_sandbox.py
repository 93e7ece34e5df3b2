"""The attack matrix of the mcp-ref-fs sandbox (servers/mcp_ref_fs/root.py).

Every ``Sandbox`` operation is attacked with every escape class, once per confinement mechanism
(the portable ``O_NOFOLLOW`` walk and Linux ``openat2(RESOLVE_BENEATH)``) and act step (POSIX
``*at`` calls, and the path-based act step Windows uses, run here through ``/proc/self/fd``): the
``world`` fixture is parametrized over all four combinations. The layout of each test's temporary directory::

    base/root/            the allowed directory (links of every kind, see LINKS)
    base/outside/         a sibling no operation may touch; its files hold SECRET
    base/root_evil/ base/root2/ base/root.bak/    siblings whose names start with "root"

A refused attack must raise the expected ``FsError``, change nothing outside the root (names,
contents, link texts and mtimes are compared before and after), leave no temporary file, and
never show SECRET in the error or its traceback. The ids in ``@pytest.mark.req`` are the records of
spec/fs-sandbox.md.
"""

from __future__ import annotations

import os
import secrets
import socket
import stat
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from mcp_ref_fs import _act, _confine_walk, _platform
from mcp_ref_fs import root as fsroot
from mcp_ref_fs._confine_openat2 import Openat2Mechanism
from mcp_ref_fs.root import (
    AccessDenied,
    AlreadyExists,
    FileChanged,
    FsError,
    InvalidPath,
    NotFound,
    Refused,
    Sandbox,
    WrongKind,
    choose_mechanism,
)

from tests.fs.conftest import call_with_timeout

SECRET = "TOP-SECRET-" + secrets.token_hex(8)
FILE_TEXT = b"file.txt, inside the root\n"
INNER_TEXT = b"sub/inner.txt, inside the root\n"
DEEP_TEXT = b"sub/deeper/inner.txt, inside the root\n"
NEW_TEXT = b"written by the test\n"
TIMEOUT = 5.0

# Links created in every world: name below the root -> link text ({root}, {base} filled in).
LINKS = {
    # leaving the root
    "leaf_abs": "{base}/outside/secret",
    "leaf_rel": "../outside/secret",
    "leaf_lexical_up": "{root}/../outside/secret",
    "leaf_sibling": "{base}/root_evil/secret",
    "leaf_sibling_rel": "../root.bak/secret",
    "link_dir": "{base}/outside",
    "link_dir_rel": "../outside",
    "chain1": "chain2",
    "chain2": "sub/chain3",
    "sub/chain3": "../../outside/secret",
    "chain_dir1": "chain_dir2",
    "chain_dir2": "sub/chain_dir3",
    "sub/chain_dir3": "{base}/outside",
    "sub/climb": "../../outside/secret",
    "sub/climb_dir": "../../outside",
    "devnull": "/dev/null",
    # dangling, to a target outside that does not exist
    "dangling_abs": "{base}/outside/created",
    "dangling_rel": "../outside/created",
    "dangling_dir": "{base}/outside/newdir",
    # odd spellings of link text
    "weird_double": "{base}//outside//secret",
    "weird_dot": "./../outside/./secret",
    "weird_trailing": "{base}/outside/",
    "weird_mix": "sub/..//../outside/secret",
    # loops
    "self_loop": "self_loop",
    "loop_a": "loop_b",
    "loop_b": "loop_a",
    # staying inside
    "good_rel_file": "file.txt",
    "good_rel_dir": "sub",
    "good_abs_file": "{root}/file.txt",
    "good_abs_dir": "{root}/sub",
    "good_weird": "{root}//sub/./",
    "good_weird_rel": "./sub//deeper/",
    "good_chain": "good_rel_file",
    "good_up": "sub/../file.txt",
    "deep_link": "sub/deeper",
    "sub/good_up_file": "../file.txt",
}


# --- the world -------------------------------------------------------------------------------------


@dataclass
class World:
    base: Path
    root: Path
    outside: Path
    sandbox: Sandbox

    def path(self, template: str) -> str:
        """A path template with ``{root}`` and ``{base}`` filled in."""
        return template.format(root=self.root, base=self.base)

    def snapshot(self) -> dict[str, tuple[Any, ...]]:
        return snapshot_outside(self.base, self.root)


def build_world(base: Path) -> None:
    root, outside = base / "root", base / "outside"
    for directory in (root / "sub" / "deeper", root / "empty", outside / "deeper"):
        directory.mkdir(parents=True)
    for name in ("secret", "inner.txt", "only-outside.txt", "deeper/inner.txt"):
        (outside / name).write_text(SECRET)
    for sibling in ("root_evil", "root2", "root.bak"):
        (base / sibling).mkdir()
        (base / sibling / "secret").write_text(SECRET)
    (root / "file.txt").write_bytes(FILE_TEXT)
    (root / "sub" / "inner.txt").write_bytes(INNER_TEXT)
    (root / "sub" / "deeper" / "inner.txt").write_bytes(DEEP_TEXT)
    for name, text in LINKS.items():
        os.symlink(text.format(root=root, base=base), root / name)


def snapshot_outside(base: Path, skip: Path) -> dict[str, tuple[Any, ...]]:
    """Everything under ``base`` except ``skip``: kind, content or link text, mode and mtime."""
    state: dict[str, tuple[Any, ...]] = {}

    def visit(directory: Path) -> None:
        info = directory.lstat()
        state[str(directory)] = ("dir", stat.S_IMODE(info.st_mode), info.st_mtime_ns)
        with os.scandir(directory) as scan:
            entries = sorted(scan, key=lambda e: e.name)
        for entry in entries:
            path = Path(entry.path)
            if path == skip:
                continue
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                visit(path)
            elif stat.S_ISLNK(info.st_mode):
                state[str(path)] = ("link", os.readlink(path), info.st_mtime_ns)
            elif stat.S_ISREG(info.st_mode):
                state[str(path)] = ("file", path.read_bytes(), stat.S_IMODE(info.st_mode), info.st_mtime_ns)
            else:
                state[str(path)] = ("other", stat.S_IFMT(info.st_mode), info.st_mtime_ns)

    visit(base)
    return state


def temp_files(base: Path) -> list[str]:
    """Leftover temporary files of atomic writes anywhere under ``base`` (links not followed)."""
    found = []
    for directory, _dirs, files in os.walk(base):
        found += [os.path.join(directory, f) for f in files if f.startswith(".mcp-ref-") and f.endswith(".tmp")]
    return found


def assert_no_secret(value: object) -> None:
    """SECRET appears neither in ``value`` (a result) nor, for an exception, in its traceback."""
    if isinstance(value, BaseException):
        text = "".join(traceback.format_exception(value))
        assert SECRET not in str(value)
    else:
        text = repr(value)
    assert SECRET not in text




@pytest.fixture(params=["at", "paths"])
def act(request: pytest.FixtureRequest) -> Any:
    """The act step: POSIX ``*at`` calls, or paths through the held directory (what Windows runs)."""
    chosen = _platform.choose_act(request.param)
    assert chosen.name == request.param
    return chosen


@pytest.fixture(params=["walk", "openat2"])
def mechanism(request: pytest.FixtureRequest) -> Any:
    try:
        chosen = choose_mechanism(request.param)
    except ValueError as error:
        pytest.skip(
            f"openat2(RESOLVE_BENEATH) is unavailable here ({error}: kernel older than 5.6, or a seccomp "
            "filter answering ENOSYS/EPERM); the walk mechanism is still tested"
        )
    assert chosen.name == request.param, "choose_mechanism silently fell back to another mechanism"
    return chosen


@pytest.fixture
def world(tmp_path: Path, mechanism: Any, act: Any) -> Iterator[World]:
    base = tmp_path.resolve()
    build_world(base)
    sandbox = Sandbox.open([str(base / "root")], mechanism=mechanism, act=act)
    yield World(base, base / "root", base / "outside", sandbox)
    sandbox.close()


@pytest.fixture
def make_sandbox(mechanism: Any, act: Any) -> Iterator[Callable[..., Sandbox]]:
    """``make_sandbox(path, ...)``: another sandbox with the same mechanism and act, closed after the test."""
    opened: list[Sandbox] = []

    def make(*paths: Path | str) -> Sandbox:
        sandbox = Sandbox.open([str(p) for p in paths], mechanism=mechanism, act=act)
        opened.append(sandbox)
        return sandbox

    yield make
    for sandbox in opened:
        sandbox.close()


# --- the operations --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    name: str
    run: Callable[[Sandbox, Any], Any]
    follows_final_link: bool

    def __repr__(self) -> str:
        return self.name


def _open_file(sandbox: Sandbox, path: Any) -> bytes:
    with sandbox.open_file(path) as opened:
        return opened.read_at(0, 1 << 16)


def _open_directory(sandbox: Sandbox, path: Any) -> tuple[Any, list[str]]:
    location, held = sandbox.open_directory(path)
    try:
        with sandbox.act.scandir(held) as scan:
            return location, sorted(entry.name for entry in scan)
    finally:
        sandbox.close_directory(held)


def _replace_file(sandbox: Sandbox, path: Any) -> Any:
    with sandbox.replace_file(path) as replacing:
        replacing.write(NEW_TEXT)
        replacing.commit()
    return replacing.location


OPERATIONS = [
    Operation("open_file", _open_file, True),
    Operation("stat", lambda s, p: s.stat(p), True),
    Operation("identity", lambda s, p: s.identity(p), False),
    Operation("open_directory", _open_directory, True),
    Operation("list_directory", lambda s, p: s.list_directory(p), True),
    Operation("walk", lambda s, p: list(s.walk(p)), True),
    Operation("make_directories", lambda s, p: s.make_directories(p), True),
    Operation("replace_file", _replace_file, True),
    Operation("move_source", lambda s, p: s.move(p, "moved_here"), False),
    Operation("move_destination", lambda s, p: s.move("file.txt", p), False),
    Operation("delete", lambda s, p: s.delete(p), False),
]
BY_NAME = {op.name: op for op in OPERATIONS}
FOLLOWING = [op for op in OPERATIONS if op.follows_final_link]
NOT_FOLLOWING = [op for op in OPERATIONS if not op.follows_final_link]


def ops(chosen: list[Operation]) -> list[Any]:
    return [pytest.param(op, id=op.name) for op in chosen]


def paths(templates: list[str]) -> list[Any]:
    return [pytest.param(t, id=t.replace("{root}", "ROOT").replace("{base}", "BASE") or "EMPTY") for t in templates]


def assert_denied(world: World, operation: Operation, path: Any, expected: type[FsError] = AccessDenied) -> FsError:
    """``operation`` on ``path`` raises ``expected`` and changes nothing outside (nor file.txt)."""
    if isinstance(path, str):
        path = world.path(path)
    before = world.snapshot()
    with pytest.raises(FsError) as caught:
        operation.run(world.sandbox, path)
    assert type(caught.value) is expected, f"{operation.name}({path!r}) raised {caught.value!r}"
    assert_no_secret(caught.value)
    assert world.snapshot() == before
    assert temp_files(world.base) == []
    assert (world.root / "file.txt").read_bytes() == FILE_TEXT
    assert not os.path.lexists(world.root / "moved_here")
    return caught.value


# --- escape classes --------------------------------------------------------------------------------

DOTDOT_ESCAPES = [
    "{root}/../outside/secret",
    "../outside/secret",
    "sub/../../outside/secret",
    "{root}/sub/../../outside/secret",
    "sub/deeper/../../../outside/secret",
    "./../outside",
    "..",
    "{root}/..",
    "../outside/created",
]
ABSOLUTE_ESCAPES = [
    "{base}/outside/secret",
    "{base}/outside",
    "{base}/outside/created",
    "{base}/outside/deeper/inner.txt",
    "{base}",
    "/",
    "/etc/passwd",
    "//{base}/outside/secret",
]
SIBLING_PREFIX_ESCAPES = [
    "{base}/root_evil/secret",
    "{base}/root2/secret",
    "{base}/root.bak/secret",
    "{base}/root_evil",
    "{base}/root2",
    "{base}/root.bak",
    "{base}/root_evil/created",
    "../root_evil/secret",
    "../root2",
]
# Final component: a link inside the root whose target leaves it.
LEAF_LINKS_OUT = [
    "leaf_abs",
    "leaf_rel",
    "leaf_lexical_up",
    "leaf_sibling",
    "leaf_sibling_rel",
    "link_dir",
    "link_dir_rel",
    "chain1",
    "chain_dir1",
    "sub/climb",
    "sub/climb_dir",
    "devnull",
    "{root}/leaf_abs",
    "{root}/sub/climb",
]
# A directory component is a link leaving the root.
DIRECTORY_LINKS_OUT = [
    "link_dir/secret",
    "link_dir_rel/secret",
    "link_dir/created",
    "link_dir/deeper/inner.txt",
    "chain_dir1/secret",
    "sub/climb_dir/secret",
    "sub/climb_dir/deeper",
    "{root}/link_dir/secret",
    "good_rel_dir/climb_dir/secret",
]
DANGLING_LEAVES = ["dangling_abs", "dangling_rel", "dangling_dir"]
DANGLING_THROUGH = ["dangling_dir/x", "dangling_dir/x/y", "dangling_abs/x"]
WEIRD_TEXT_LEAVES = ["weird_double", "weird_dot", "weird_trailing", "weird_mix"]
WEIRD_TEXT_THROUGH = ["weird_trailing/secret", "weird_trailing/deeper/inner.txt"]
ALL_LEAF_LINKS_OUT = LEAF_LINKS_OUT + DANGLING_LEAVES + WEIRD_TEXT_LEAVES


@pytest.mark.req("FS-CONTAIN-COMPONENTS")
@pytest.mark.parametrize("template", paths(DOTDOT_ESCAPES))
@pytest.mark.parametrize("operation", ops(OPERATIONS))
def test_a_path_climbing_out_with_dotdot_is_denied_to_every_operation(world, operation, template):
    assert_denied(world, operation, template)


@pytest.mark.req("FS-CONTAIN-COMPONENTS")
@pytest.mark.parametrize("template", paths(ABSOLUTE_ESCAPES))
@pytest.mark.parametrize("operation", ops(OPERATIONS))
def test_an_absolute_path_outside_every_root_is_denied_to_every_operation(world, operation, template):
    assert_denied(world, operation, template)


@pytest.mark.req("FS-CONTAIN-COMPONENTS")
@pytest.mark.parametrize("template", paths(SIBLING_PREFIX_ESCAPES))
@pytest.mark.parametrize("operation", ops(OPERATIONS))
def test_a_sibling_whose_name_starts_with_the_roots_name_is_not_admitted(world, operation, template):
    assert_denied(world, operation, template)


@pytest.mark.req("FS-CONTAIN-COMPONENTS")
@pytest.mark.parametrize("template", paths(DOTDOT_ESCAPES + ABSOLUTE_ESCAPES + SIBLING_PREFIX_ESCAPES))
def test_a_path_outside_every_root_is_refused_before_the_disk_is_touched(world, monkeypatch, template):
    def no_disk(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("the disk was touched")

    monkeypatch.setattr(world.sandbox, "_lookup", no_disk)
    monkeypatch.setattr(world.sandbox, "_open_dir", no_disk)
    with pytest.raises(AccessDenied):
        world.sandbox.locate(world.path(template))
    for operation in OPERATIONS:
        with pytest.raises(AccessDenied):
            operation.run(world.sandbox, world.path(template))


@pytest.mark.req("FS-CONTAIN-COMPONENTS")
@pytest.mark.parametrize("template", paths(["{base}/outside/secret", "{base}/outside/missing", "{base}/nothing/at/all"]))
def test_denial_reads_the_same_whether_or_not_the_outside_path_exists(world, template):
    with pytest.raises(AccessDenied) as caught:
        world.sandbox.stat(world.path(template))
    assert str(caught.value) == str(AccessDenied(world.path(template)))


@pytest.mark.req("FS-SYMLINK-ESCAPE")
@pytest.mark.parametrize("template", paths(LEAF_LINKS_OUT + WEIRD_TEXT_LEAVES))
@pytest.mark.parametrize("operation", ops(FOLLOWING))
def test_a_final_link_leaving_the_root_is_denied_to_every_operation_that_follows_it(world, operation, template):
    assert_denied(world, operation, template)


@pytest.mark.req("FS-SYMLINK-ESCAPE")
@pytest.mark.parametrize("template", paths(DIRECTORY_LINKS_OUT + WEIRD_TEXT_THROUGH))
@pytest.mark.parametrize("operation", ops(OPERATIONS))
def test_a_directory_link_leaving_the_root_is_denied_to_every_operation(world, operation, template):
    assert_denied(world, operation, template)


@pytest.mark.req("FS-SYMLINK-ESCAPE")
def test_a_listing_shows_a_link_leaving_the_root_as_a_symlink_without_examining_its_target(world):
    _location, entries = world.sandbox.list_directory(".")
    kinds = {entry.name: entry for entry in entries}
    for name in ("leaf_abs", "leaf_rel", "link_dir", "chain1", "devnull", "dangling_abs", "weird_trailing"):
        assert kinds[name].kind == "symlink"
        assert kinds[name].size == (world.root / name).lstat().st_size  # the link's own size
    assert_no_secret(entries)


@pytest.mark.req("FS-SYMLINK-ESCAPE")
def test_dev_null_through_an_absolute_link_is_denied(world):
    assert_denied(world, BY_NAME["open_file"], "devnull")


@pytest.mark.req("FS-SYMLINK-ESCAPE")
def test_a_link_that_climbs_out_and_back_into_the_root_is_refused(world):
    """Link text is resolved lexically from the link's directory and must never leave the root on
    the way, even if it would come back (``../root/file.txt``): a conservative reading."""
    os.symlink("../root/file.txt", world.root / "out_and_back")
    assert_denied(world, BY_NAME["open_file"], "out_and_back")


# --- what a no-follow operation does with a final link ---------------------------------------------


@pytest.mark.req("FS-LINK-ITSELF")
@pytest.mark.parametrize("template", paths(ALL_LEAF_LINKS_OUT + ["self_loop", "loop_a"]))
def test_identity_of_a_final_link_names_the_link_itself(world, template):
    link = Path(world.path(template)) if template.startswith("{") else world.root / template
    before = world.snapshot()
    info = link.lstat()
    assert world.sandbox.identity(world.path(template)) == (info.st_dev, info.st_ino, "symlink", info.st_ctime_ns)
    assert world.snapshot() == before


@pytest.mark.req("FS-LINK-ITSELF")
@pytest.mark.parametrize("template", paths(ALL_LEAF_LINKS_OUT + ["self_loop", "good_rel_file", "good_abs_dir"]))
def test_delete_of_a_link_removes_the_link_and_never_its_target(world, template):
    link = Path(world.path(template)) if template.startswith("{") else world.root / template
    before = world.snapshot()
    _location, kind = world.sandbox.delete(world.path(template))
    assert kind == "symlink"
    assert not os.path.lexists(link)
    assert world.snapshot() == before
    assert (world.root / "file.txt").read_bytes() == FILE_TEXT
    assert (world.root / "sub" / "inner.txt").read_bytes() == INNER_TEXT


@pytest.mark.req("FS-LINK-ITSELF")
@pytest.mark.parametrize("template", paths(ALL_LEAF_LINKS_OUT + ["self_loop", "good_rel_file"]))
def test_move_of_a_link_moves_the_link_and_never_its_target(world, template):
    link = Path(world.path(template)) if template.startswith("{") else world.root / template
    text = os.readlink(link)
    before = world.snapshot()
    world.sandbox.move(world.path(template), "moved_here")
    assert not os.path.lexists(link)
    assert os.readlink(world.root / "moved_here") == text
    assert world.snapshot() == before
    assert (world.root / "file.txt").read_bytes() == FILE_TEXT


@pytest.mark.req("FS-LINK-ITSELF", "FS-MOVE-NO-OVERWRITE")
@pytest.mark.parametrize("template", paths(ALL_LEAF_LINKS_OUT + ["self_loop"]))
def test_a_link_leaving_the_root_is_an_existing_destination_that_move_never_replaces(world, template):
    link = Path(world.path(template)) if template.startswith("{") else world.root / template
    text = os.readlink(link)
    assert_denied(world, BY_NAME["move_destination"], template, AlreadyExists)
    assert os.readlink(link) == text


# --- dangling links ----------------------------------------------------------------------------------


@pytest.mark.req("FS-DANGLING-LINK")
@pytest.mark.parametrize("template", paths(DANGLING_LEAVES + DANGLING_THROUGH))
@pytest.mark.parametrize("operation", ops(FOLLOWING))
def test_a_dangling_link_to_outside_is_denied_to_every_operation_that_follows_it(world, operation, template):
    assert_denied(world, operation, template)


@pytest.mark.req("FS-DANGLING-LINK")
@pytest.mark.parametrize("template", paths(DANGLING_THROUGH))
@pytest.mark.parametrize("operation", ops(NOT_FOLLOWING))
def test_a_path_through_a_dangling_link_to_outside_is_denied_to_every_other_operation(world, operation, template):
    assert_denied(world, operation, template)


@pytest.mark.req("FS-DANGLING-LINK")
@pytest.mark.parametrize("template", paths(["dangling_abs", "dangling_rel"]))
def test_writing_through_a_dangling_link_to_outside_never_creates_the_outside_file(world, template):
    assert_denied(world, BY_NAME["replace_file"], template)
    assert not os.path.lexists(world.outside / "created")


@pytest.mark.req("FS-DANGLING-LINK")
@pytest.mark.parametrize("template", paths(["dangling_dir", "dangling_dir/x", "dangling_dir/x/y"]))
def test_creating_directories_through_a_dangling_link_to_outside_never_creates_them(world, template):
    assert_denied(world, BY_NAME["make_directories"], template)
    assert not os.path.lexists(world.outside / "newdir")


@pytest.mark.req("FS-DANGLING-LINK")
def test_a_dangling_link_inside_the_root_reads_as_not_found(world):
    os.symlink("missing.txt", world.root / "dangling_in")
    with pytest.raises(NotFound):
        world.sandbox.open_file("dangling_in")


@pytest.mark.req("FS-DANGLING-LINK")
def test_writing_through_a_dangling_link_inside_the_root_creates_its_target_and_keeps_the_link(world):
    os.symlink("sub/created.txt", world.root / "dangling_in")
    _replace_file(world.sandbox, "dangling_in")
    assert (world.root / "sub" / "created.txt").read_bytes() == NEW_TEXT
    assert os.readlink(world.root / "dangling_in") == "sub/created.txt"


# --- link loops --------------------------------------------------------------------------------------

LOOP_LEAVES = ["self_loop", "loop_a"]
LOOP_THROUGH = ["self_loop/x", "loop_a/x", "loop_b/x/y"]


@pytest.mark.req("FS-LINK-LOOP")
@pytest.mark.parametrize("template", paths(LOOP_LEAVES + LOOP_THROUGH))
@pytest.mark.parametrize("operation", ops(FOLLOWING))
def test_a_link_loop_makes_a_following_operation_fail_promptly_instead_of_hanging(world, operation, template):
    call_with_timeout(lambda: assert_denied(world, operation, template, Refused))


@pytest.mark.req("FS-LINK-LOOP")
@pytest.mark.parametrize("template", paths(LOOP_THROUGH))
@pytest.mark.parametrize("operation", ops(NOT_FOLLOWING))
def test_a_path_through_a_link_loop_fails_promptly_for_every_other_operation(world, operation, template):
    call_with_timeout(lambda: assert_denied(world, operation, template, Refused))


@pytest.mark.req("FS-LINK-LOOP")
def test_a_listing_with_link_loops_finishes_and_shows_them_as_symlinks(world):
    _location, entries = call_with_timeout(lambda: world.sandbox.list_directory("."))
    kinds = {entry.name: entry.kind for entry in entries}
    assert kinds["self_loop"] == kinds["loop_a"] == kinds["loop_b"] == "symlink"


@pytest.mark.req("FS-LINK-LOOP", "FS-WALK-NO-LINKED-DIRS")
def test_a_walk_over_link_loops_finishes(world):
    os.symlink(".", world.root / "sub" / "dot_loop")
    os.symlink("..", world.root / "sub" / "deeper" / "up_loop")
    walked = call_with_timeout(lambda: [c for c, _e in world.sandbox.walk(".")])
    assert ("sub", "dot_loop") in walked and ("sub", "deeper", "up_loop") in walked
    assert not any(len(c) > 2 and c[:2] == ("sub", "dot_loop") for c in walked)


# --- things that must work ---------------------------------------------------------------------------

IN_ROOT_FILES = [
    ("good_rel_file", FILE_TEXT),
    ("good_abs_file", FILE_TEXT),
    ("good_chain", FILE_TEXT),
    ("good_up", FILE_TEXT),
    ("sub/good_up_file", FILE_TEXT),
    ("good_rel_dir/inner.txt", INNER_TEXT),
    ("good_abs_dir/inner.txt", INNER_TEXT),
    ("good_weird/inner.txt", INNER_TEXT),
    ("good_weird_rel/inner.txt", DEEP_TEXT),
    ("{root}/good_abs_dir/deeper/inner.txt", DEEP_TEXT),
    ("deep_link/inner.txt", DEEP_TEXT),
    ("good_rel_dir/good_up_file", FILE_TEXT),
]


@pytest.mark.req("FS-SYMLINK-INSIDE")
@pytest.mark.parametrize(("template", "content"), [pytest.param(t, c, id=t) for t, c in IN_ROOT_FILES])
def test_links_that_stay_inside_the_root_are_followed_for_reading(world, template, content):
    assert _open_file(world.sandbox, world.path(template)) == content


@pytest.mark.req("FS-SYMLINK-INSIDE")
@pytest.mark.parametrize(
    ("template", "directory"),
    [("good_rel_dir", "sub"), ("good_abs_dir", "sub"), ("good_weird", "sub"), ("good_weird_rel", "sub/deeper"),
     ("deep_link", "sub/deeper"), ("{root}/good_abs_dir/deeper", "sub/deeper")],
)
def test_links_to_directories_inside_the_root_are_followed_for_listing(world, template, directory):
    _location, entries = world.sandbox.list_directory(world.path(template))
    assert [e.name for e in entries] == sorted(os.listdir(world.root / directory))


@pytest.mark.req("FS-SYMLINK-INSIDE")
@pytest.mark.parametrize("template", ["good_rel_file", "good_abs_file", "good_chain"])
def test_stat_of_a_link_inside_the_root_describes_its_target(world, template):
    _location, info = world.sandbox.stat(template)
    assert (info.st_dev, info.st_ino) == ((world.root / "file.txt").stat().st_dev, (world.root / "file.txt").stat().st_ino)


@pytest.mark.req("FS-SYMLINK-INSIDE")
def test_a_listing_shows_links_inside_the_root_as_what_they_point_to(world):
    _location, entries = world.sandbox.list_directory(".")
    kinds = {entry.name: entry.kind for entry in entries}
    assert kinds["good_rel_file"] == kinds["good_abs_file"] == kinds["good_chain"] == "file"
    assert kinds["good_rel_dir"] == kinds["good_abs_dir"] == kinds["good_weird"] == "directory"


@pytest.mark.req("FS-SYMLINK-INSIDE")
@pytest.mark.parametrize("template", ["good_rel_file", "good_abs_file", "good_chain"])
def test_writing_through_a_link_inside_the_root_replaces_its_target_and_keeps_the_link(world, template):
    text = os.readlink(world.root / template)
    _replace_file(world.sandbox, template)
    assert (world.root / "file.txt").read_bytes() == NEW_TEXT
    assert os.readlink(world.root / template) == text


@pytest.mark.req("FS-SYMLINK-INSIDE")
@pytest.mark.parametrize("template", ["good_rel_dir/new", "good_abs_dir/new/deeper", "deep_link/new"])
def test_creating_directories_through_a_link_inside_the_root_creates_them_at_its_target(world, template):
    world.sandbox.make_directories(template)
    target = {"good_rel_dir": "sub", "good_abs_dir": "sub", "deep_link": "sub/deeper"}[template.split("/")[0]]
    assert (world.root / target / "/".join(template.split("/")[1:])).is_dir()


# --- lexical paths: ., //, trailing slashes, .., ~ ------------------------------------------------------


@pytest.mark.req("FS-LEXICAL-PATHS")
@pytest.mark.parametrize(
    ("template", "content"),
    [
        ("./file.txt", FILE_TEXT),
        ("{root}/./file.txt", FILE_TEXT),
        ("{root}//file.txt", FILE_TEXT),
        ("//{root}/file.txt", FILE_TEXT),
        ("sub//inner.txt", INNER_TEXT),
        ("sub/./inner.txt", INNER_TEXT),
        ("./sub/.//deeper///inner.txt", DEEP_TEXT),
        ("missing/../file.txt", FILE_TEXT),
        ("sub/deeper/../../file.txt", FILE_TEXT),
        ("{root}/sub/../file.txt", FILE_TEXT),
    ],
)
def test_dots_and_repeated_slashes_are_resolved_lexically(world, template, content):
    assert _open_file(world.sandbox, world.path(template)) == content


@pytest.mark.req("FS-LEXICAL-PATHS")
def test_dotdot_after_a_linked_directory_is_lexical_not_physical(world):
    # deep_link -> sub/deeper; physically deep_link/.. is sub, lexically it is the root.
    assert _open_file(world.sandbox, "deep_link/../file.txt") == FILE_TEXT


@pytest.mark.req("FS-LEXICAL-PATHS")
@pytest.mark.parametrize(
    ("template", "directory"),
    [("sub/", "sub"), ("{root}/sub//", "sub"), ("./sub/./", "sub"), (".", ""), ("{root}/", ""), ("{root}/.", ""),
     ("{root}//", ""), ("sub/deeper/..", "sub")],
)
def test_trailing_slashes_and_dots_name_the_same_directory(world, template, directory):
    location, entries = world.sandbox.list_directory(world.path(template))
    assert [e.name for e in entries] == sorted(os.listdir(world.root / directory))
    assert location.display == str(world.root / directory).rstrip("/")


@pytest.mark.req("FS-LEXICAL-PATHS")
@pytest.mark.parametrize("template", ["~", "{root}/~", "./~"])
def test_a_file_named_tilde_is_an_ordinary_name(world, template):
    (world.root / "~").write_bytes(b"tilde\n")
    assert _open_file(world.sandbox, world.path(template)) == b"tilde\n"


@pytest.mark.req("FS-LEXICAL-PATHS")
def test_a_tilde_directory_is_created_inside_the_root_never_in_home(world):
    location = world.sandbox.make_directories("~/x")
    assert (world.root / "~" / "x").is_dir()
    assert location.display == f"{world.root}/~/x"


@pytest.mark.req("FS-LEXICAL-PATHS")
def test_tilde_dotdot_is_the_root_itself(world):
    with pytest.raises(NotFound):  # root/outside/secret, which does not exist: never base/outside/secret
        world.sandbox.open_file("~/../outside/secret")


@pytest.mark.req("FS-LEXICAL-PATHS")
@pytest.mark.parametrize("name", ["naïve café.txt", "日本語.txt", "emoji-🎉.txt", "ω/ψ.txt", "spaces  and\ttabs.txt"])
def test_unicode_names_are_read_written_and_listed_exactly(world, name):
    parent, leaf = os.path.split(name)
    if parent:
        world.sandbox.make_directories(parent)
    _replace_file(world.sandbox, name)
    assert (world.root / name).read_bytes() == NEW_TEXT
    assert _open_file(world.sandbox, f"{world.root}/{name}") == NEW_TEXT
    _location, entries = world.sandbox.list_directory(parent or ".")
    [entry] = [e for e in entries if e.name == leaf]
    assert entry.label == leaf and entry.kind == "file"


# --- roots: relative paths, nesting, a root that is a link --------------------------------------------


@pytest.mark.req("FS-NESTED-ROOTS")
def test_a_relative_path_resolves_against_the_first_root(world, make_sandbox):
    second = world.base / "second"
    second.mkdir()
    (second / "file.txt").write_bytes(b"second root\n")
    assert _open_file(make_sandbox(world.root, second), "file.txt") == FILE_TEXT
    assert _open_file(make_sandbox(second, world.root), "file.txt") == b"second root\n"


@pytest.mark.req("FS-NESTED-ROOTS")
@pytest.mark.parametrize("order", ["outer-first", "inner-first"])
@pytest.mark.parametrize(
    ("template", "root"),
    [("{root}/sub/inner.txt", "{root}/sub"), ("{root}/sub", "{root}/sub"), ("{root}/sub/deeper", "{root}/sub"),
     ("{root}/file.txt", "{root}"), ("{root}/subx", "{root}"), ("{root}", "{root}")],
)
def test_nested_roots_are_matched_longest_first(world, make_sandbox, order, template, root):
    roots = [world.root, world.root / "sub"]
    sandbox = make_sandbox(*(roots if order == "outer-first" else roots[::-1]))
    assert sandbox.locate(world.path(template)).root.display == world.path(root)


@pytest.mark.req("FS-NESTED-ROOTS")
def test_a_link_in_a_nested_root_is_followed_only_within_that_root(world, make_sandbox):
    sandbox = make_sandbox(world.root, world.root / "sub")
    with pytest.raises(AccessDenied):  # sub/good_up_file -> ../file.txt leaves the nested root
        sandbox.open_file(f"{world.root}/sub/good_up_file")
    assert _open_file(sandbox, f"{world.root}/good_up") == FILE_TEXT


@pytest.mark.req("FS-NESTED-ROOTS", "FS-ROOT-IMMOVABLE")
@pytest.mark.parametrize("template", ["{root}/sub", "sub", "sub/", "sub/deeper/.."])
def test_a_nested_root_cannot_be_deleted_or_moved_through_the_outer_root(world, make_sandbox, template):
    sandbox = make_sandbox(world.root, world.root / "sub")
    with pytest.raises(Refused):
        sandbox.delete(world.path(template))
    with pytest.raises(Refused):
        sandbox.move(world.path(template), "elsewhere")
    assert (world.root / "sub" / "inner.txt").read_bytes() == INNER_TEXT


@pytest.mark.req("FS-NESTED-ROOTS", "FS-ROOT-IMMOVABLE")
@pytest.mark.parametrize("template", ["empty", "{root}/empty", "good_weird/../empty"])
def test_a_nested_root_known_under_another_spelling_is_protected_by_identity(world, mechanism, act, template):
    """On a case-insensitive or normalising file system (APFS, NTFS) ``/r/EMPTY`` is ``/r/empty``, and
    Python's ``realpath`` keeps the spelling it was given, so no string comparison relates the two
    roots. Simulated with a spelling through a link, which realpath would otherwise have resolved:
    the nested root is an empty directory, so only the identity check keeps it from being deleted."""
    os.symlink(world.root, world.base / "alias")
    spelled = f"{world.base}/alias/empty"
    inner = fsroot.Root(spelled, spelled, act.open_root(spelled))
    sandbox = Sandbox([world.sandbox.roots[0], inner], mechanism, act)
    try:
        with pytest.raises(Refused, match="holds the allowed directory"):
            sandbox.delete(world.path(template))
        with pytest.raises(Refused, match="holds the allowed directory"):
            sandbox.move(world.path(template), "elsewhere")
        sandbox.move("sub/deeper", "deeper_moved")  # a directory holding no root still moves
    finally:
        act.close(inner.fd)
    assert (world.root / "empty").is_dir() and (world.root / "deeper_moved" / "inner.txt").read_bytes() == DEEP_TEXT


@pytest.mark.req("FS-NESTED-ROOTS", "FS-ROOT-IMMOVABLE")
def test_where_the_file_system_numbers_nothing_spellings_are_compared_folded():
    """Inode 0 (some network and FAT file systems): the spellings are compared after NFC and casefold."""
    roots = [fsroot.Root("/r", "/r", -1), fsroot.Root("/r/Caf\u00e9/inner", "/r/Caf\u00e9/inner", -1),
             fsroot.Root("/nonexistent-mcp-ref/x", "/nonexistent-mcp-ref/x", -1)]
    sandbox = Sandbox(roots, act=_act.AtAct())
    numbered = os.stat_result((stat.S_IFDIR | 0o755, 12345, 1, 2, 0, 0, 0, 0, 0, 0))
    unnumbered = os.stat_result((stat.S_IFDIR | 0o755, 0, 1, 2, 0, 0, 0, 0, 0, 0))
    with pytest.raises(Refused, match="holds the allowed directory /r/Caf"):
        sandbox._refuse_if_holds_a_root_by_identity(fsroot.Location(roots[0], ("CAFE\u0301",)), unnumbered, "deleted")
    sandbox._refuse_if_holds_a_root_by_identity(fsroot.Location(roots[0], ("cafe",)), unnumbered, "deleted")
    sandbox._refuse_if_holds_a_root_by_identity(fsroot.Location(roots[0], ("CAFE\u0301",)), numbered, "deleted")
    file_info = os.stat_result((stat.S_IFREG | 0o644, 0, 1, 1, 0, 0, 0, 0, 0, 0))
    sandbox._refuse_if_holds_a_root_by_identity(fsroot.Location(roots[0], ("CAFE\u0301",)), file_info, "deleted")


@pytest.fixture
def linked(world: World, make_sandbox: Callable[..., Sandbox]) -> tuple[World, Sandbox, Path]:
    """A sandbox opened through ``base/rootlink`` -> ``base/root``."""
    link = world.base / "rootlink"
    os.symlink(world.root, link)
    (world.base / "rootlink_evil").mkdir()
    (world.base / "rootlink_evil" / "secret").write_text(SECRET)
    return world, make_sandbox(link), link


@pytest.mark.req("FS-ROOT-SYMLINK")
@pytest.mark.parametrize("template", ["{base}/rootlink/file.txt", "{root}/file.txt", "file.txt", "{base}/rootlink/good_abs_file"])
def test_a_root_that_is_a_link_accepts_both_spellings(linked, template):
    world, sandbox, link = linked
    location = sandbox.locate(world.path(template))
    assert location.display.startswith(f"{link}/")
    assert _open_file(sandbox, world.path(template)) == FILE_TEXT


@pytest.mark.req("FS-ROOT-SYMLINK")
@pytest.mark.parametrize("text", ["{base}/rootlink/file.txt", "{root}/file.txt", "{base}/rootlink//sub/../file.txt"])
def test_absolute_links_under_either_spelling_of_a_linked_root_are_followed(linked, text):
    world, sandbox, _link = linked
    os.symlink(world.path(text), world.root / "spelled")
    assert _open_file(sandbox, "spelled") == FILE_TEXT


@pytest.mark.req("FS-ROOT-SYMLINK")
@pytest.mark.parametrize(
    "template",
    ["{base}/rootlink/../outside/secret", "{base}/rootlink_evil/secret", "{base}/rootlink/link_dir/secret",
     "{base}/rootlink/leaf_abs", "{base}/rootlink/sub/climb"],
)
def test_a_root_that_is_a_link_still_denies_every_escape(linked, template):
    world, sandbox, _link = linked
    before = world.snapshot()
    with pytest.raises(AccessDenied) as caught:
        _open_file(sandbox, world.path(template))
    assert_no_secret(caught.value)
    assert world.snapshot() == before


@pytest.mark.req("FS-ROOT-SYMLINK")
def test_a_link_into_the_linked_roots_parent_is_refused(linked):
    world, sandbox, _link = linked
    os.symlink(f"{world.base}/rootlink/../outside/secret", world.root / "via_link_up")
    with pytest.raises(AccessDenied):
        sandbox.open_file("via_link_up")


@pytest.mark.req("FS-ROOT-SYMLINK", "FS-ROOT-IMMOVABLE")
@pytest.mark.parametrize("template", ["{base}/rootlink", "{root}", "{base}/rootlink/", "."])
def test_a_linked_root_cannot_be_deleted_or_moved_under_either_spelling(linked, template):
    world, sandbox, link = linked
    with pytest.raises(Refused):
        sandbox.delete(world.path(template))
    with pytest.raises(Refused):
        sandbox.move(world.path(template), "elsewhere")
    assert os.readlink(link) == str(world.root) and world.root.is_dir()


@pytest.mark.req("FS-ROOT-IMMOVABLE")
@pytest.mark.parametrize("action", ["move", "delete"])
def test_a_nested_root_cannot_vanish_through_its_ancestor(tmp_path: Path, action: str) -> None:
    tree = tmp_path / "root"
    (tree / "mid" / "inner").mkdir(parents=True)
    (tree / "mid" / "inner" / "keep.txt").write_text("kept\n")
    sandbox = Sandbox.open([str(tree), str(tree / "mid" / "inner")])
    with pytest.raises(Refused, match="allowed directory"):
        if action == "move":
            sandbox.move("mid", "mid2")
        else:
            sandbox.delete("mid/inner")
    assert (tree / "mid" / "inner" / "keep.txt").read_text() == "kept\n"


# --- path validation -----------------------------------------------------------------------------------

INVALID_PATHS = [
    pytest.param("", id="empty"),
    pytest.param("file.txt\0", id="nul-at-end"),
    pytest.param("sub\0/inner.txt", id="nul-inside"),
    pytest.param("\0", id="nul-alone"),
    pytest.param(None, id="none"),
    pytest.param(b"file.txt", id="bytes"),
    pytest.param(7, id="int"),
    pytest.param(Path("file.txt"), id="pathlib"),
    pytest.param(["file.txt"], id="list"),
    pytest.param("caf\udce9.txt", id="lone-surrogate"),
    pytest.param("\ud800", id="high-surrogate"),
    pytest.param("a/" * 2049, id="longer-than-4096-bytes"),
    pytest.param("./" * 2100 + "file.txt", id="long-before-normalizing"),
    pytest.param("é" * 2049, id="long-in-bytes-not-characters"),
    pytest.param("x" * 256, id="component-256-bytes"),
    pytest.param("é" * 128, id="component-256-bytes-multibyte"),
    pytest.param("sub/" + "y" * 300 + "/z", id="long-component-inside"),
]


@pytest.mark.req("FS-PATH-VALIDATION")
@pytest.mark.parametrize("path", INVALID_PATHS)
@pytest.mark.parametrize("operation", ops(OPERATIONS))
def test_an_unusable_path_is_invalid_for_every_operation(world, operation, path):
    assert_denied(world, operation, path, InvalidPath)


@pytest.mark.req("FS-PATH-VALIDATION")
@pytest.mark.parametrize("path", INVALID_PATHS)
def test_an_unusable_destination_is_invalid_for_move(world, path):
    with pytest.raises(InvalidPath):
        world.sandbox.move("file.txt", path)
    assert (world.root / "file.txt").read_bytes() == FILE_TEXT


@pytest.mark.req("FS-PATH-VALIDATION")
def test_a_name_of_exactly_255_bytes_is_accepted(world):
    directory, file = "n" * 255, "é" * 127 + "x"  # 255 bytes each
    world.sandbox.make_directories(directory)
    _replace_file(world.sandbox, f"{directory}/{file}")
    assert (world.root / directory / file).read_bytes() == NEW_TEXT


def _deep_directory(root: Path, names: list[str]) -> None:
    """Create root/names[0]/names[1]/... by descriptors (the absolute path exceeds PATH_MAX)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in names:
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        os.close(os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


@pytest.mark.req("FS-PATH-VALIDATION")
@pytest.mark.parametrize(
    "operation", ops([BY_NAME[n] for n in ("open_directory", "list_directory", "walk", "make_directories", "stat", "identity")])
)
def test_a_path_of_exactly_4096_bytes_is_accepted(world, operation):
    names = ["d" * 240] * 17  # 17 * 240 + 16 slashes = 4096 bytes
    _deep_directory(world.root, names)
    path = "/".join(names)
    assert len(path.encode()) == 4096
    operation.run(world.sandbox, path)


# --- names that are not UTF-8 ----------------------------------------------------------------------------


@pytest.fixture
def undecodable(world: World) -> World:
    raw_root = os.fsencode(world.root)
    with open(raw_root + b"/caf\xe9.txt", "wb") as stream:
        stream.write(b"latin-1 name\n")
    os.mkdir(raw_root + b"/dir\xff")
    with open(raw_root + b"/dir\xff/inside.txt", "wb") as stream:
        stream.write(b"inside\n")
    return world


@pytest.mark.req("FS-NON-UTF8-NAMES")
def test_a_listing_shows_undecodable_names_with_hex_escapes(undecodable):
    _location, entries = undecodable.sandbox.list_directory(".")
    labels = {entry.label: entry.kind for entry in entries}
    assert labels["caf\\xe9.txt"] == "file" and labels["dir\\xff"] == "directory"
    assert all(entry.label.encode("utf-8") for entry in entries)


@pytest.mark.req("FS-NON-UTF8-NAMES")
def test_a_walk_enters_undecodable_directories_and_labels_their_entries(undecodable):
    walked = {
        tuple(fsroot.display_name(c) for c in components): entry.label for components, entry in undecodable.sandbox.walk(".")
    }
    assert walked[("dir\\xff", "inside.txt")] == "inside.txt"
    assert walked[("caf\\xe9.txt",)] == "caf\\xe9.txt"


@pytest.mark.req("FS-NON-UTF8-NAMES")
@pytest.mark.parametrize("name", [os.fsdecode(b"caf\xe9.txt"), os.fsdecode(b"dir\xff") + "/inside.txt", os.fsdecode(b"dir\xff")])
@pytest.mark.parametrize("operation", ops(OPERATIONS))
def test_an_undecodable_name_cannot_be_addressed_and_says_so_in_valid_text(undecodable, operation, name):
    error = assert_denied(undecodable, operation, name, InvalidPath)
    str(error).encode("utf-8")  # printable to the client
    assert (undecodable.root / os.fsdecode(b"caf\xe9.txt")).read_bytes() == b"latin-1 name\n"


@pytest.mark.req("FS-NON-UTF8-NAMES")
def test_the_escaped_label_is_a_different_name_that_does_not_exist(undecodable):
    with pytest.raises(NotFound):
        undecodable.sandbox.open_file("caf\\xe9.txt")


# --- special files ---------------------------------------------------------------------------------------


@pytest.fixture
def fifo(world: World) -> Iterator[Path]:
    path = world.root / "fifo"
    os.mkfifo(path)
    os.symlink("fifo", world.root / "fifo_link")
    yield path
    try:  # if a test hung in open(), give it a writer so its thread can end
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


@pytest.fixture
def unix_socket(world: World, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(world.root)  # bind by a short relative name: AF_UNIX paths are limited to 108 bytes
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind("sock")
    server.listen(1)
    yield world.root / "sock"
    server.close()


@pytest.mark.req("FS-SPECIAL-FILES")
@pytest.mark.parametrize("name", ["fifo", "fifo_link"])
def test_opening_a_fifo_is_refused_promptly_instead_of_blocking(world, fifo, name):
    with pytest.raises(WrongKind):
        call_with_timeout(lambda: world.sandbox.open_file(name))


@pytest.mark.req("FS-SPECIAL-FILES")
def test_writing_a_fifo_is_refused_and_leaves_it_a_fifo(world, fifo):
    with pytest.raises(WrongKind):
        call_with_timeout(lambda: _replace_file(world.sandbox, "fifo"))
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and temp_files(world.base) == []


@pytest.mark.req("FS-SPECIAL-FILES")
@pytest.mark.parametrize("operation", ops([BY_NAME[n] for n in ("open_directory", "list_directory", "walk")]))
def test_a_fifo_is_not_a_directory(world, fifo, operation):
    with pytest.raises(WrongKind):
        call_with_timeout(lambda: operation.run(world.sandbox, "fifo"))


@pytest.mark.req("FS-SPECIAL-FILES")
def test_stat_of_a_fifo_answers_without_opening_it(world, fifo):
    _location, info = call_with_timeout(lambda: world.sandbox.stat("fifo"))
    assert stat.S_ISFIFO(info.st_mode)


@pytest.mark.req("FS-SPECIAL-FILES")
def test_opening_a_socket_is_refused(world, unix_socket):
    with pytest.raises(WrongKind):
        call_with_timeout(lambda: world.sandbox.open_file("sock"))


@pytest.mark.req("FS-SPECIAL-FILES")
def test_fifos_and_sockets_are_listed_and_walked_as_other(world, fifo, unix_socket):
    _location, entries = world.sandbox.list_directory(".")
    kinds = {entry.name: entry.kind for entry in entries}
    assert kinds["fifo"] == kinds["sock"] == kinds["fifo_link"] == "other"
    walked = {components: entry.kind for components, entry in world.sandbox.walk(".")}
    assert walked[("fifo",)] == walked[("sock",)] == "other"


# --- hard links ---------------------------------------------------------------------------------------------


@pytest.fixture
def hard_linked(world: World) -> World:
    (world.outside / "shared.txt").write_bytes(b"shared with outside\n")
    os.link(world.outside / "shared.txt", world.root / "hard.txt")
    os.symlink("hard.txt", world.root / "to_hard")
    return world


@pytest.mark.req("FS-HARDLINK-WRITE")
@pytest.mark.parametrize("template", ["hard.txt", "to_hard", "{root}/hard.txt"])
def test_a_file_with_several_hard_links_is_never_written(hard_linked, template):
    assert_denied(hard_linked, BY_NAME["replace_file"], template, Refused)
    assert (hard_linked.root / "hard.txt").read_bytes() == b"shared with outside\n"


@pytest.mark.req("FS-HARDLINK-WRITE")
def test_two_hard_links_inside_the_root_are_refused_too(world):
    os.link(world.root / "file.txt", world.root / "file2.txt")
    assert_denied(world, BY_NAME["replace_file"], "file2.txt", Refused)


@pytest.mark.req("FS-HARDLINK-WRITE")
def test_a_file_with_several_hard_links_can_be_read(hard_linked):
    """Policy: the hard link is an entry inside the root, so its content is readable."""
    assert _open_file(hard_linked.sandbox, "hard.txt") == b"shared with outside\n"


@pytest.mark.req("FS-HARDLINK-WRITE")
def test_deleting_a_hard_link_removes_only_the_name_inside_the_root(hard_linked):
    before = hard_linked.snapshot()
    hard_linked.sandbox.delete("hard.txt")
    assert not os.path.lexists(hard_linked.root / "hard.txt")
    assert hard_linked.snapshot() == before


# --- atomic writes ------------------------------------------------------------------------------------------


@pytest.mark.req("FS-ATOMIC-WRITE")
@pytest.mark.parametrize("mode", [0o640, 0o600, 0o755, 0o444])
def test_a_replaced_file_keeps_its_permission_bits(world, mode):
    os.chmod(world.root / "file.txt", mode)
    _replace_file(world.sandbox, "file.txt")
    assert stat.S_IMODE((world.root / "file.txt").stat().st_mode) == mode
    assert (world.root / "file.txt").read_bytes() == NEW_TEXT


@pytest.mark.req("FS-ATOMIC-WRITE")
def test_a_new_file_gets_the_default_mode_under_the_umask(world):
    umask = os.umask(0)
    os.umask(umask)
    _replace_file(world.sandbox, "sub/new.txt")
    assert stat.S_IMODE((world.root / "sub" / "new.txt").stat().st_mode) == 0o666 & ~umask


@pytest.mark.req("FS-ATOMIC-WRITE")
def test_commit_replaces_the_file_by_rename_and_leaves_no_temporary_file(world):
    before = (world.root / "file.txt").stat().st_ino
    with open(world.root / "file.txt", "rb") as reader:
        _replace_file(world.sandbox, "file.txt")
        assert reader.read() == FILE_TEXT  # a reader of the old file still sees it whole
    assert (world.root / "file.txt").read_bytes() == NEW_TEXT
    assert (world.root / "file.txt").stat().st_ino != before
    assert temp_files(world.base) == []


@pytest.mark.req("FS-ATOMIC-WRITE")
@pytest.mark.req("FS-NO-STALE-TEMPORARIES")
def test_the_new_file_lives_in_the_targets_directory_without_a_name_where_linux_can_until_commit(world):
    with world.sandbox.replace_file("sub/inner.txt") as replacing:
        replacing.write(NEW_TEXT)
        named = temp_files(world.base)
        if world.sandbox.act.name == "at":  # O_TMPFILE: nothing a crash could leave behind
            assert named == [] and os.fstat(replacing.fd).st_nlink == 0
        else:  # the path-based act step names it, as Windows must
            [temporary] = named
            assert Path(temporary).parent == world.root / "sub"
        assert os.fstat(replacing.fd).st_dev == (world.root / "sub").stat().st_dev
        assert (world.root / "sub" / "inner.txt").read_bytes() == INNER_TEXT
        replacing.commit()
    assert temp_files(world.base) == []
    assert (world.root / "sub" / "inner.txt").read_bytes() == NEW_TEXT


@pytest.mark.req("FS-ATOMIC-WRITE")
def test_abort_removes_the_temporary_file_and_leaves_the_target(world):
    replacing = world.sandbox.replace_file("file.txt")
    replacing.write(NEW_TEXT)
    replacing.abort()
    assert (world.root / "file.txt").read_bytes() == FILE_TEXT
    assert temp_files(world.base) == []


@pytest.mark.req("FS-ATOMIC-WRITE")
def test_an_exception_inside_with_removes_the_temporary_file_and_leaves_the_target(world):
    with pytest.raises(RuntimeError):
        with world.sandbox.replace_file("file.txt") as replacing:
            replacing.write(NEW_TEXT)
            raise RuntimeError("interrupted")
    assert (world.root / "file.txt").read_bytes() == FILE_TEXT
    assert temp_files(world.base) == []


@pytest.mark.req("FS-ATOMIC-WRITE")
def test_leaving_with_without_commit_leaves_the_target(world):
    with world.sandbox.replace_file("file.txt") as replacing:
        replacing.write(NEW_TEXT)
    assert (world.root / "file.txt").read_bytes() == FILE_TEXT
    assert temp_files(world.base) == []


@pytest.mark.req("FS-ATOMIC-WRITE")
def test_a_new_file_that_is_aborted_never_appears(world):
    with world.sandbox.replace_file("never.txt") as replacing:
        replacing.write(NEW_TEXT)
        replacing.abort()
    assert not os.path.lexists(world.root / "never.txt")
    assert temp_files(world.base) == []


@pytest.mark.req("FS-ATOMIC-WRITE")
@pytest.mark.parametrize(
    ("template", "error"), [(".", WrongKind), ("sub", WrongKind), ("good_rel_dir", WrongKind), ("missing/new.txt", NotFound)]
)
def test_replace_file_refuses_directories_and_missing_parents(world, template, error):
    assert_denied(world, BY_NAME["replace_file"], template, error)


# --- check-then-use races ------------------------------------------------------------------------------------


def _swap_for_link(path: Path, text: str) -> None:
    """Atomically replace ``path`` (a file) by a symbolic link."""
    temporary = path.with_name(path.name + ".swap")
    os.symlink(text, temporary)
    os.rename(temporary, path)


def _swap_for_hard_link(path: Path, target: Path) -> None:
    temporary = path.with_name(path.name + ".swap")
    os.link(target, temporary)
    os.rename(temporary, path)


def _swap_dir_for_link(directory: Path, text: str) -> None:
    directory.rename(directory.with_name(directory.name + ".moved"))
    os.symlink(text, directory)


def _after_lookup(monkeypatch: pytest.MonkeyPatch, sandbox: Sandbox, swap: Callable[[], None]) -> list[bool]:
    """Run ``swap`` once, right after the sandbox's first lookup returns (check done, use pending)."""
    fired: list[bool] = []
    original = sandbox._lookup

    def lookup(location: Any, *, follow_final: bool) -> Any:
        result = original(location, follow_final=follow_final)
        if not fired:
            fired.append(True)
            swap()
        return result

    monkeypatch.setattr(sandbox, "_lookup", lookup)
    return fired


@pytest.fixture
def secret_swaps(world: World) -> dict[str, Callable[[Path], None]]:
    return {
        "absolute-link": lambda p: _swap_for_link(p, f"{world.outside}/secret"),
        "relative-link": lambda p: _swap_for_link(p, os.path.relpath(world.outside / "secret", p.parent)),
        "hard-link": lambda p: _swap_for_hard_link(p, world.outside / "secret"),
    }


SWAPS = ["absolute-link", "relative-link", "hard-link"]


@pytest.mark.req("FS-RACE-SWAP")
@pytest.mark.parametrize("swap", SWAPS)
def test_a_file_swapped_after_lookup_is_never_read_through(world, monkeypatch, secret_swaps, swap):
    target = world.root / "sub" / "inner.txt"
    fired = _after_lookup(monkeypatch, world.sandbox, lambda: secret_swaps[swap](target))
    before = world.snapshot()
    with pytest.raises(FsError) as caught:
        _open_file(world.sandbox, "sub/inner.txt")
    # A link: the O_NOFOLLOW open fails (ELOOP). A hard link: the opened file is not the one checked.
    assert fired and type(caught.value) is (WrongKind if swap == "hard-link" else Refused)
    assert_no_secret(caught.value)
    assert world.snapshot() == before


@pytest.mark.req("FS-RACE-SWAP")
@pytest.mark.parametrize("swap", SWAPS)
def test_a_file_swapped_after_lookup_is_never_written_through_and_its_rewrite_writes_nothing(world, monkeypatch, secret_swaps, swap):
    target = world.root / "sub" / "inner.txt"
    fired = _after_lookup(monkeypatch, world.sandbox, lambda: secret_swaps[swap](target))
    before = world.snapshot()
    with pytest.raises(FileChanged) as caught:
        _replace_file(world.sandbox, "sub/inner.txt")
    # The write check opens the name it looked up (O_NOFOLLOW): a link fails to open, a hard link
    # opens as another file. Either way the rewrite stops before creating anything.
    assert fired and "nothing was written" in str(caught.value)
    assert_no_secret(caught.value)
    assert world.snapshot() == before
    assert (target.is_symlink() or target.stat().st_nlink == 2) and (world.outside / "secret").read_text() == SECRET
    assert temp_files(world.base) == []


@pytest.mark.req("FS-RACE-SWAP")
@pytest.mark.parametrize("swap", SWAPS)
def test_a_file_swapped_after_lookup_is_deleted_as_an_entry_never_its_target(world, monkeypatch, secret_swaps, swap):
    target = world.root / "sub" / "inner.txt"
    fired = _after_lookup(monkeypatch, world.sandbox, lambda: secret_swaps[swap](target))
    before = world.snapshot()
    world.sandbox.delete("sub/inner.txt")
    assert fired and not os.path.lexists(target)
    assert world.snapshot() == before


@pytest.mark.req("FS-RACE-SWAP")
@pytest.mark.parametrize("swap", SWAPS)
def test_a_file_swapped_after_lookup_is_moved_as_an_entry_never_its_target(world, monkeypatch, secret_swaps, swap):
    target = world.root / "sub" / "inner.txt"
    fired = _after_lookup(monkeypatch, world.sandbox, lambda: secret_swaps[swap](target))
    before = world.snapshot()
    world.sandbox.move("sub/inner.txt", "moved_here")
    assert fired and not os.path.lexists(target) and os.path.lexists(world.root / "moved_here")
    assert world.snapshot() == before


@pytest.mark.req("FS-RACE-SWAP")
@pytest.mark.parametrize("operation", ops([BY_NAME[n] for n in ("open_file", "stat", "replace_file")]))
def test_a_file_swapped_for_an_outside_link_after_its_directory_is_opened_is_denied(world, monkeypatch, operation):
    mechanism = world.sandbox.mechanism
    original = mechanism.open_dir
    fired: list[bool] = []

    def open_dir(root_fd: int, parts: Any, follow: Any, budget: Any = None) -> Any:
        result = original(root_fd, parts, follow, budget)
        if tuple(parts) == ("sub",) and not fired:
            fired.append(True)
            _swap_for_link(world.root / "sub" / "inner.txt", f"{world.outside}/secret")
        return result

    monkeypatch.setattr(mechanism, "open_dir", open_dir)
    assert_denied(world, operation, "sub/inner.txt")
    assert fired


def _swap_before_opening(monkeypatch: pytest.MonkeyPatch, sandbox: Sandbox, name: str, swap: Callable[[], None]) -> list[bool]:
    """Run ``swap`` once, just before the mechanism opens the directory component ``name``: in the
    walk, inside its ``os.open``; with openat2, before the one system call resolving the path."""
    fired: list[bool] = []

    def fire() -> None:
        if not fired:
            fired.append(True)
            swap()

    real_os = _confine_walk.os

    class SwappingOs:
        def __getattr__(self, attribute: str) -> Any:
            return getattr(real_os, attribute)

        @staticmethod
        def open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            if path == name:
                fire()
            return real_os.open(path, flags, *args, **kwargs)

    monkeypatch.setattr(_confine_walk, "os", SwappingOs())
    mechanism = sandbox.mechanism
    if isinstance(mechanism, Openat2Mechanism):
        original = mechanism._openat2

        def openat2(dir_fd: int, path: bytes) -> int:
            if os.fsencode(name) in path.split(b"/"):
                fire()
            return original(dir_fd, path)

        monkeypatch.setattr(mechanism, "_openat2", openat2)
    return fired


@pytest.mark.req("FS-RACE-SWAP")
@pytest.mark.parametrize("link", ["absolute", "relative"])
@pytest.mark.parametrize("component", ["sub", "deeper"])
@pytest.mark.parametrize(
    ("operation", "template"),
    [(BY_NAME["open_file"], "sub/deeper/inner.txt"), (BY_NAME["stat"], "sub/deeper/inner.txt"),
     (BY_NAME["list_directory"], "sub/deeper"), (BY_NAME["replace_file"], "sub/deeper/inner.txt"),
     (BY_NAME["make_directories"], "sub/deeper/new"), (BY_NAME["delete"], "sub/deeper/inner.txt"),
     (BY_NAME["identity"], "sub/deeper/inner.txt"), (BY_NAME["move_source"], "sub/deeper/inner.txt"),
     (BY_NAME["move_destination"], "sub/deeper/new.txt")],
    ids=lambda v: v.name if isinstance(v, Operation) else None,
)
def test_a_directory_swapped_for_an_outside_link_during_resolution_is_denied(
    world, monkeypatch, operation, template, component, link
):
    directory = world.root / "sub" if component == "sub" else world.root / "sub" / "deeper"
    # outside/ holds deeper/inner.txt and inner.txt, so either swap would lead to a secret file.
    text = str(world.outside) if link == "absolute" else os.path.relpath(world.outside, directory.parent)
    fired = _swap_before_opening(monkeypatch, world.sandbox, component, lambda: _swap_dir_for_link(directory, text))
    assert_denied(world, operation, template)
    assert fired


@pytest.mark.req("FS-RACE-SWAP", "FS-WALK-NO-LINKED-DIRS")
def test_a_walk_never_enters_a_directory_swapped_for_a_link_while_walking(world, monkeypatch):
    (world.root / "sub" / "deeper" / "more").mkdir()
    real_os = fsroot.os
    fired: list[bool] = []

    class SwappingOs:
        def __getattr__(self, attribute: str) -> Any:
            return getattr(real_os, attribute)

        @staticmethod
        def open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            # "deeper" beside the held directory (at), or "/proc/self/fd/N/deeper" (paths)
            if os.path.basename(path) == "deeper" and flags & os.O_DIRECTORY and not fired:
                fired.append(True)
                _swap_dir_for_link(world.root / "sub" / "deeper", str(world.outside))
            return real_os.open(path, flags, *args, **kwargs)

    monkeypatch.setattr(fsroot, "os", SwappingOs())
    monkeypatch.setattr(_act, "os", SwappingOs())
    walked = list(world.sandbox.walk("sub"))
    assert fired
    assert not [c for c, _e in walked if c[0] == "deeper" and len(c) > 1]
    assert not [c for c, _e in walked if "only-outside.txt" in c or "secret" in c]
    assert_no_secret(walked)


# --- moves -------------------------------------------------------------------------------------------------


@pytest.fixture(params=["renameat2", "link-fallback"])
def rename_impl(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Moves with renameat2(RENAME_NOREPLACE), and with the fallback used where it is missing."""
    if request.param == "link-fallback":
        monkeypatch.setattr(_act, "_renameat2", lambda: None)
    return request.param


@pytest.mark.req("FS-MOVE-NO-OVERWRITE")
@pytest.mark.parametrize(
    ("source", "destination"),
    [("file.txt", "sub/inner.txt"), ("file.txt", "sub"), ("file.txt", "empty"), ("empty", "sub"), ("sub", "empty"),
     ("file.txt", "good_rel_file"), ("file.txt", "dangling_abs"), ("sub/inner.txt", "{root}/file.txt")],
)
def test_a_move_never_replaces_an_existing_destination(world, rename_impl, source, destination):
    before_source = os.lstat(world.root / source)
    before_destination = os.lstat(world.path(destination) if destination.startswith("{") else world.root / destination)
    with pytest.raises(AlreadyExists):
        world.sandbox.move(source, world.path(destination))
    assert os.lstat(world.root / source).st_ino == before_source.st_ino
    destination_path = world.path(destination) if destination.startswith("{") else world.root / destination
    assert os.lstat(destination_path).st_ino == before_destination.st_ino
    assert (world.root / "file.txt").read_bytes() == FILE_TEXT
    assert (world.root / "sub" / "inner.txt").read_bytes() == INNER_TEXT


@pytest.mark.req("FS-MOVE-NO-OVERWRITE", "FS-RACE-SWAP")
@pytest.mark.parametrize(("source", "made"), [("file.txt", "file"), ("empty", "directory"), ("file.txt", "link")])
def test_a_destination_created_after_it_was_checked_is_still_never_replaced(world, monkeypatch, rename_impl, source, made):
    destination = world.root / "sub" / "appeared"
    original = world.sandbox._lookup
    calls: list[Any] = []

    def lookup(location: Any, *, follow_final: bool) -> Any:
        result = original(location, follow_final=follow_final)
        calls.append(location)
        if len(calls) == 2:  # the destination was just found free: now something appears there
            {"file": lambda: destination.write_bytes(b"appeared\n"), "directory": destination.mkdir,
             "link": lambda: os.symlink(f"{world.outside}/secret", destination)}[made]()
        return result

    monkeypatch.setattr(world.sandbox, "_lookup", lookup)
    before = world.snapshot()
    with pytest.raises(AlreadyExists):
        world.sandbox.move(source, "sub/appeared")
    assert len(calls) == 2 and os.path.lexists(world.root / source)
    assert {"file": destination.is_file, "directory": destination.is_dir, "link": destination.is_symlink}[made]()
    assert world.snapshot() == before


@pytest.mark.req("FS-MOVE-NO-OVERWRITE")
@pytest.mark.parametrize(
    ("source", "destination"), [("file.txt", "sub/moved.txt"), ("sub", "empty/sub"), ("good_rel_dir", "moved_link")]
)
def test_a_move_to_a_free_name_moves_the_entry(world, rename_impl, source, destination):
    before = os.lstat(world.root / source)
    world.sandbox.move(source, destination)
    assert not os.path.lexists(world.root / source)
    assert os.lstat(world.root / destination).st_ino == before.st_ino


@pytest.mark.req("FS-ROOT-IMMOVABLE")
@pytest.mark.parametrize(
    ("source", "destination"), [(".", "moved"), ("{root}", "moved"), ("{root}/", "sub/moved"), ("sub/..", "moved")]
)
def test_a_root_cannot_be_moved(world, source, destination):
    with pytest.raises(Refused):
        world.sandbox.move(world.path(source), world.path(destination))
    assert (world.root / "file.txt").read_bytes() == FILE_TEXT


@pytest.mark.req("FS-ROOT-IMMOVABLE")
@pytest.mark.parametrize("destination", [".", "{root}", "{root}/", "sub/.."])
def test_nothing_can_be_moved_onto_a_root(world, destination):
    with pytest.raises(Refused):
        world.sandbox.move("file.txt", world.path(destination))
    assert (world.root / "file.txt").read_bytes() == FILE_TEXT


@pytest.mark.req("FS-ROOT-IMMOVABLE")
@pytest.mark.parametrize(
    ("source", "destination"), [("sub", "sub/deeper/sub"), ("sub", "sub"), ("sub", "{root}/sub/x"), ("sub/", "./sub/new")]
)
def test_a_directory_cannot_be_moved_into_itself(world, source, destination):
    with pytest.raises(Refused):
        world.sandbox.move(world.path(source), world.path(destination))
    assert (world.root / "sub" / "inner.txt").read_bytes() == INNER_TEXT


@pytest.mark.req("FS-ROOT-IMMOVABLE")
def test_a_directory_moved_into_itself_through_a_link_is_refused_by_the_kernel(world, rename_impl):
    with pytest.raises(FsError):
        world.sandbox.move("sub", "good_rel_dir/deeper/sub")
    assert (world.root / "sub" / "inner.txt").read_bytes() == INNER_TEXT


# --- deletes -----------------------------------------------------------------------------------------------


@pytest.mark.req("FS-ROOT-IMMOVABLE")
@pytest.mark.parametrize("template", [".", "{root}", "{root}/", "sub/..", "{root}//."])
def test_a_root_cannot_be_deleted(world, template):
    with pytest.raises(Refused):
        world.sandbox.delete(world.path(template))
    assert world.root.is_dir()


@pytest.mark.req("FS-DELETE-EXPECT")
@pytest.mark.parametrize("template", ["sub", "sub/deeper", "good_rel_dir/deeper"])
def test_a_directory_that_is_not_empty_is_not_deleted(world, template):
    with pytest.raises(Refused):
        world.sandbox.delete(template)
    assert (world.root / "sub" / "deeper" / "inner.txt").read_bytes() == DEEP_TEXT


@pytest.mark.req("FS-DELETE-EXPECT")
@pytest.mark.parametrize(("template", "kind"), [("empty", "directory"), ("file.txt", "file"), ("sub/inner.txt", "file")])
def test_a_file_or_empty_directory_is_deleted_and_its_kind_reported(world, template, kind):
    _location, removed = world.sandbox.delete(template)
    assert removed == kind and not os.path.lexists(world.root / template)


@pytest.mark.req("FS-DELETE-EXPECT")
def test_a_file_replaced_since_confirmation_is_not_deleted(world):
    confirmed = world.sandbox.identity("file.txt")
    (world.root / "file.txt").rename(world.root / "old.txt")  # kept, so its inode number is not reused
    (world.root / "file.txt").write_bytes(b"a different file\n")
    with pytest.raises(Refused):
        world.sandbox.delete("file.txt", expect=confirmed)
    assert (world.root / "file.txt").read_bytes() == b"a different file\n"


@pytest.mark.req("FS-DELETE-EXPECT")
def test_an_entry_of_another_kind_since_confirmation_is_not_deleted(world):
    confirmed = world.sandbox.identity("empty")
    expected = (confirmed[0], confirmed[1], "file")
    with pytest.raises(Refused):
        world.sandbox.delete("empty", expect=expected)
    assert (world.root / "empty").is_dir()


@pytest.mark.req("FS-DELETE-EXPECT")
def test_an_entry_with_the_same_inode_number_but_a_newer_change_time_is_not_deleted(world):
    # File systems reuse inode numbers (ext4 hands a deleted file's number to the next new file),
    # so a re-created file can match (device, inode, kind); its change time never does.
    confirmed = world.sandbox.identity("file.txt")
    reused = (confirmed[0], confirmed[1], confirmed[2], confirmed[3] - 1)
    with pytest.raises(Refused):
        world.sandbox.delete("file.txt", expect=reused)
    assert (world.root / "file.txt").exists()


@pytest.mark.req("FS-DELETE-EXPECT")
def test_the_confirmed_entry_is_deleted(world):
    confirmed = world.sandbox.identity("file.txt")
    world.sandbox.delete("file.txt", expect=confirmed)
    assert not os.path.lexists(world.root / "file.txt")


# --- walks -------------------------------------------------------------------------------------------------


@pytest.fixture
def tree(world: World) -> World:
    """root/tree: files, nested and empty directories, names that sort around each other, links."""
    t = world.root / "tree"
    for directory in ("a/y", "a-", "c/e", "b.d"):
        (t / directory).mkdir(parents=True)
    for file in ("a/x.txt", "a/y/z.txt", "a.b", "b.txt", "c/d.txt", "a-/q", "b.d/r"):
        (t / file).write_bytes(b"x")
    os.symlink("a", t / "link_a")
    os.symlink(str(world.outside), t / "link_out")
    os.symlink("loop", t / "loop")
    os.symlink(".", t / "dot")
    return world


def _walk(world: World, **kwargs: Any) -> list[tuple[tuple[str, ...], str]]:
    return [(components, entry.kind) for components, entry in world.sandbox.walk("tree", **kwargs)]


@pytest.mark.req("FS-WALK-RESUME")
def test_a_walk_is_depth_first_and_sorted_by_name(tree):
    walked = [components for components, _kind in _walk(tree)]
    assert walked == sorted(walked)
    assert walked[:4] == [("a",), ("a", "x.txt"), ("a", "y"), ("a", "y", "z.txt")]


@pytest.mark.req("FS-WALK-RESUME")
def test_a_walk_resumed_after_any_entry_yields_exactly_the_rest(tree):
    full = _walk(tree)
    assert len(full) > 10
    for index, (components, _kind) in enumerate(full):
        assert _walk(tree, after=components) == full[index + 1 :], components


@pytest.mark.req("FS-WALK-RESUME")
def test_a_pruned_walk_resumed_after_any_entry_yields_exactly_the_rest(tree):
    def descend(components: tuple[str, ...]) -> bool:
        return components not in {("a",), ("c", "e")}

    full = _walk(tree, descend=descend)
    for index, (components, _kind) in enumerate(full):
        assert _walk(tree, after=components, descend=descend) == full[index + 1 :], components


@pytest.mark.req("FS-WALK-RESUME")
def test_a_walk_resumed_after_an_entry_deleted_meanwhile_continues_where_it_would_have_been(tree):
    full = _walk(tree)
    (tree.root / "tree" / "a.b").unlink()
    assert _walk(tree, after=("a.b",)) == full[full.index((("a.b",), "file")) + 1 :]


@pytest.mark.req("FS-WALK-RESUME")
def test_descend_prunes_a_directory_but_still_lists_it(tree):
    walked = _walk(tree, descend=lambda components: components != ("a",))
    assert (("a",), "directory") in walked
    assert not [c for c, _k in walked if c[0] == "a" and len(c) > 1]
    assert (("c", "d.txt"), "file") in walked


@pytest.mark.req("FS-WALK-NO-LINKED-DIRS")
def test_linked_directories_are_listed_as_links_and_not_entered(tree):
    walked = dict(_walk(tree))
    assert walked[("link_a",)] == walked[("link_out",)] == walked[("loop",)] == walked[("dot",)] == "symlink"
    assert not [c for c in walked if c[0] in ("link_a", "link_out", "loop", "dot") and len(c) > 1]


@pytest.mark.req("FS-WALK-NO-LINKED-DIRS", "FS-SYMLINK-ESCAPE")
def test_a_walk_of_the_root_never_shows_anything_outside(world):
    walked = list(world.sandbox.walk("."))
    assert_no_secret(walked)
    assert not [c for c, _e in walked if "only-outside.txt" in c or "secret" in c]


@pytest.mark.req("FS-WALK-NO-LINKED-DIRS")
def test_walk_through_a_linked_directory_path_walks_its_target(world):
    walked = [c for c, _e in world.sandbox.walk("good_rel_dir")]
    assert ("deeper", "inner.txt") in walked and ("inner.txt",) in walked
