"""Editing a host's JSON (or JSONC) configuration text: insert or replace one server entry.

``mcp-ref-fs install`` (``hostconfig``) merges its entry into Claude Desktop's, VS Code's or
Cursor's own file with ``merge_entry``; writing the result (atomically, with a backup) is
``hostconfig``'s part.

* Merge: the file is parsed into a small syntax tree that keeps each value's position, and only
  the entry is written: inserted after the last server (or into an empty object, or as a new
  top-level key), or, with ``--force``, put in place of the old value. Every byte outside that
  entry stays as it was: other servers, other keys, their order, formatting, comments, line
  endings and a byte-order mark. The new text follows the file's own style: its indent unit
  (spaces or a tab), ``\\r\\n`` line endings, one-line files stay on one line. The result is parsed
  again and must hold exactly the old data plus the entry; if it ever did not, a plain JSON file
  would be re-serialised with the detected indent instead (a JSONC file would be refused, since
  re-serialising would drop its comments).
* Refusals (exit 1, file untouched): an entry of the same name without ``--force``; a file that
  does not parse (the message gives line and column); a top level that is not an object, a
  servers key whose value is not an object, or a name that appears twice. Comments and trailing
  commas are accepted for VS Code only, whose ``mcp.json`` is JSON with comments (JSONC); Claude
  Desktop and Cursor files must be plain JSON, as those hosts read them. An empty file counts as
  ``{}``.

Standard library only.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any


class Refused(Exception):
    """install (or print-config) will not go on; the message says why. Exit status 1."""


# --- a JSON(C) syntax tree that keeps positions ---------------------------------------------------


class ParseError(ValueError):
    def __init__(self, message: str, text: str, position: int) -> None:
        line = text.count("\n", 0, position) + 1
        column = position - (text.rfind("\n", 0, position) + 1) + 1
        super().__init__(f"{message} at line {line} column {column}")


@dataclass
class Member:
    key: str
    key_start: int  # the key's opening quote
    value: Node


@dataclass
class Node:
    start: int  # first character of the value
    end: int  # one past its last character
    data: Any  # the Python value
    members: list[Member] | None = None  # for objects, in file order


class _Parser:
    """A recursive-descent JSON parser that records where each value is; JSONC when ``comments``.

    Strings and scalars are decoded by the standard library (``json.decoder.scanstring``,
    ``JSONDecoder.raw_decode``), so only the structure is parsed here.
    """

    def __init__(self, text: str, comments: bool) -> None:
        self.text, self.comments = text, comments
        self.decoder = json.JSONDecoder()

    def parse(self) -> Node:
        position = self.skip(0)
        node = self.value(position)
        end = self.skip(node.end)
        if end != len(self.text):
            raise ParseError("extra data after the top-level value", self.text, end)
        return node

    def skip(self, position: int) -> int:
        """The position after whitespace (and, in JSONC, comments) starting at ``position``."""
        text = self.text
        while position < len(text):
            char = text[position]
            if char in " \t\r\n":
                position += 1
            elif self.comments and text.startswith("//", position):
                newline = text.find("\n", position)
                position = len(text) if newline < 0 else newline
            elif self.comments and text.startswith("/*", position):
                close = text.find("*/", position + 2)
                if close < 0:
                    raise ParseError("unterminated comment", text, position)
                position = close + 2
            else:
                break
        return position

    def value(self, position: int) -> Node:
        if position >= len(self.text):
            raise ParseError("unexpected end of file", self.text, position)
        char = self.text[position]
        if char == "{":
            return self.object(position)
        if char == "[":
            return self.array(position)
        try:
            data, end = self.decoder.raw_decode(self.text, position)
        except json.JSONDecodeError as error:  # the standard library's own words: "Expecting value", ...
            raise ParseError(error.msg, self.text, error.pos) from None
        return Node(position, end, data)

    def object(self, start: int) -> Node:
        text = self.text
        members: list[Any] = []
        data: dict[str, Any] = {}
        position = self.skip(start + 1)
        while True:
            if position < len(text) and text[position] == "}" and (not members or self.comments):
                return Node(start, position + 1, data, members)  # (after a comma only in JSONC)
            if position >= len(text) or text[position] != '"':
                raise ParseError("expected a quoted key" + ("" if members else " or '}'"), text, position)
            try:
                key, after_key = json.decoder.scanstring(text, position + 1)  # type: ignore[attr-defined]  # public, but missing from typeshed
            except json.JSONDecodeError as error:
                raise ParseError(error.msg, text, error.pos) from None
            colon = self.skip(after_key)
            if colon >= len(text) or text[colon] != ":":
                raise ParseError("expected ':'", text, colon)
            node = self.value(self.skip(colon + 1))
            members.append(Member(key, position, node))
            data[key] = node.data
            position = self.skip(node.end)
            if position < len(text) and text[position] == ",":
                position = self.skip(position + 1)
            elif position < len(text) and text[position] == "}":
                return Node(start, position + 1, data, members)
            else:
                raise ParseError("expected ',' or '}'", text, position)

    def array(self, start: int) -> Node:
        text = self.text
        items: list[Any] = []
        position = self.skip(start + 1)
        while True:
            if position < len(text) and text[position] == "]" and (not items or self.comments):
                return Node(start, position + 1, items)
            node = self.value(position)
            items.append(node.data)
            position = self.skip(node.end)
            if position < len(text) and text[position] == ",":
                position = self.skip(position + 1)
            elif position < len(text) and text[position] == "]":
                return Node(start, position + 1, items)
            else:
                raise ParseError("expected ',' or ']'", text, position)


def parse_config(text: str, *, jsonc: bool) -> Node:
    """The syntax tree of a configuration file's text (BOM already removed). ParseError if bad.

    Plain JSON is tried first, so a file that is valid JSON is always read as JSON; comments
    and trailing commas are accepted only when ``jsonc``.
    """
    if not text.strip():
        return Node(0, 0, {}, None)  # an empty file: no object yet
    try:
        return _Parser(text, comments=False).parse()
    except ParseError:
        if not jsonc:
            raise
    return _Parser(text, comments=True).parse()


# --- editing the text ---------------------------------------------------------------------------


@dataclass
class Style:
    """How the file is written, so inserted text looks like its neighbours."""

    newline: str  # "\n" or "\r\n"; "" for a file on one line (then inserted text is one line too)
    unit: str  # one indent level


def detect_style(text: str, root: Node) -> Style:
    newline = "\r\n" if "\r\n" in text else "\n" if "\n" in text else ""
    unit = "  "
    if root.members:
        indent = _line_indent(text, root.members[0].key_start)
        if indent is not None and indent:
            unit = "\t" if indent.startswith("\t") else " " * len(indent)
    return Style(newline, unit)


def _line_indent(text: str, position: int) -> str | None:
    """The whitespace that starts the line of ``position``, if only whitespace precedes it there."""
    line_start = text.rfind("\n", 0, position) + 1
    before = text[line_start:position]
    return before if before.strip(" \t") == "" else None


def _dump(value: Any, style: Style, indent: str) -> str:
    """``value`` as JSON in ``style``, its continuation lines indented by ``indent``."""
    if not style.newline:
        return json.dumps(value, ensure_ascii=False)
    lines = json.dumps(value, ensure_ascii=False, indent=style.unit).split("\n")
    return (style.newline + indent).join(lines)


def _member_text(key: str, value: Any, style: Style, indent: str) -> str:
    return f"{json.dumps(key, ensure_ascii=False)}: {_dump(value, style, indent)}"


def _container_indent(text: str, container: Node, owner_start: int | None) -> str:
    """The indent of the line an object starts on (the line of its key when it is a member's value)."""
    return _line_indent(text, owner_start if owner_start is not None else container.start) or ""


def insert_member(text: str, container: Node, owner_start: int | None, key: str, value: Any, style: Style) -> str:
    """``text`` with ``"key": value`` added as the last member of the object ``container``."""
    assert container.members is not None
    outer = _container_indent(text, container, owner_start)
    if not container.members:  # an empty object: write its inside anew
        if not style.newline:
            return text[:container.start] + "{" + _member_text(key, value, style, "") + "}" + text[container.end:]
        inner = outer + style.unit
        body = text[container.start + 1:container.end - 1]
        if body.strip():  # only comments inside (JSONC): keep them, add the member before the brace
            return (text[:container.end - 1].rstrip() + style.newline + inner + _member_text(key, value, style, inner)
                    + style.newline + outer + "}" + text[container.end:])
        return (text[:container.start] + "{" + style.newline + inner + _member_text(key, value, style, inner)
                + style.newline + outer + "}" + text[container.end:])
    last = container.members[-1]
    indent = _line_indent(text, last.key_start)
    if not style.newline or indent is None:  # members share a line: add it there, on one line
        return text[:last.value.end] + ", " + _member_text(key, value, Style("", style.unit), "") + text[last.value.end:]
    # The last member ends its line: the comma goes right after its value, the new member on a
    # line of its own after anything else on that line (a trailing comma, a comment).
    position, comma = last.value.end, False
    while True:
        while position < len(text) and text[position] in " \t":
            position += 1
        if text.startswith(",", position):
            comma, position = True, position + 1
        elif text.startswith("//", position):
            newline = text.find("\n", position)
            position = len(text) if newline < 0 else newline
        elif text.startswith("/*", position) and "\n" not in text[position:text.find("*/", position)]:
            position = text.find("*/", position) + 2
        else:
            break
    new = style.newline + indent + _member_text(key, value, style, indent)
    if not (text.startswith("\n", position) or text.startswith("\r\n", position)):
        # Something else follows on that line (the closing brace): break the line after the value.
        return text[:last.value.end] + "," + new + text[last.value.end:]
    if comma:  # a trailing comma (JSONC) already separates the last member from the new one
        return text[:position] + new + text[position:]
    return text[:last.value.end] + "," + text[last.value.end:position] + new + text[position:]


def replace_value(text: str, member: Member, value: Any, style: Style) -> str:
    """``text`` with ``member``'s value replaced by ``value`` (its key and everything else kept)."""
    indent = _line_indent(text, member.key_start)
    if indent is None:  # the member shares its line with others: keep the value on one line
        style, indent = Style("", style.unit), ""
    return text[:member.value.start] + _dump(value, style, indent) + text[member.value.end:]


@dataclass
class Merge:
    """The outcome of merging an entry into a configuration file's text."""

    text: str
    replaced: bool  # an entry of that name was there (and --force was given)
    method: str  # "new file", "inserted" (textual edit) or "re-serialised"


def merge_entry(text: str, servers_key: str, name: str, entry: dict[str, Any], *, force: bool, jsonc: bool,
                label: str = "the configuration file") -> Merge:
    """The new text of a configuration file with ``servers_key.name`` set to ``entry``.

    Raises Refused when the file cannot be parsed or merged, or the name exists without ``force``.
    """
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text[len(bom):]
    try:
        root = parse_config(body, jsonc=jsonc)
    except ParseError as error:
        hint = " (comments and trailing commas are not allowed in this file)" if not jsonc else ""
        raise Refused(f"{label} is not valid JSON: {error}{hint}; it was left as it is") from None
    if root.members is None and root.data == {} and not body.strip():
        new = json.dumps({servers_key: {name: entry}}, ensure_ascii=False, indent=2) + "\n"
        return Merge(bom + new, False, "new file")
    if root.members is None:
        raise Refused(f"{label} holds {type(root.data).__name__} at the top level, not an object; it was left as it is")
    servers = [member for member in root.members if member.key == servers_key]
    if len(servers) > 1:
        raise Refused(f"{label} has the key {servers_key!r} twice; it was left as it is")
    expected = copy.deepcopy(root.data)
    style = detect_style(body, root)
    replaced = False
    if not servers:
        expected[servers_key] = {name: entry}
        new = insert_member(body, root, None, servers_key, {name: entry}, style)
    else:
        holder = servers[0]
        if holder.value.members is None:
            raise Refused(f"{label}: {servers_key!r} is {type(holder.value.data).__name__}, not an object; "
                          "it was left as it is")
        same = [member for member in holder.value.members if member.key == name]
        if len(same) > 1:
            raise Refused(f"{label} names the server {name!r} twice; it was left as it is")
        if same and not force:
            raise Refused(f"{label} already has a server named {name!r}; give --force to replace it, "
                          "or --name to add another")
        expected[servers_key][name] = entry
        if same:
            replaced = True
            new = replace_value(body, same[0], entry, style)
        else:
            new = insert_member(body, holder.value, holder.key_start, name, entry, style)
    if _reads_as(new, expected, jsonc):
        return Merge(bom + new, replaced, "inserted")
    if jsonc and not _reads_as(body, root.data, False):  # comments would be lost: do not write
        raise Refused(f"{label} could not be edited without losing its comments; it was left as it is")
    newline = style.newline or "\n"
    again = json.dumps(expected, ensure_ascii=False, indent=style.unit).replace("\n", newline) + newline
    return Merge(bom + again, replaced, "re-serialised")


def _reads_as(text: str, expected: Any, jsonc: bool) -> bool:
    try:
        return parse_config(text, jsonc=jsonc).data == expected
    except ParseError:
        return False
