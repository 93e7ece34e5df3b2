"""RFC 6570 URI templates, the subset resource templates need: matching a URI, and expansion.

Supported expressions: ``{var}`` (level 1, simple string expansion: one segment, no ``/ ? #``)
and ``{+var}`` (level 2/3 reserved expansion: may span ``/``, e.g. ``file:///{+path}``); several
of them in one template, each pair separated by literal text. Other operators (``{#x}``,
``{/x}``, ``{?x}``, lists, modifiers) and two variables with nothing between them (``{a}{b}``:
nothing in a URI says where one ends) are refused when the template is registered, so a
template never silently matches the wrong URIs.

How a URI is matched
--------------------
RFC 6570 defines expansion only; matching is its inverse, which is ambiguous in general. The
rule here is deterministic and runs in time linear in the URI's length (plain string searches,
no backtracking regular expression, so a hostile URI cannot stall the event loop):

1. The URI must begin with the template's leading literal and end with its trailing literal.
2. Variables after the last ``{+var}`` are matched right to left: each takes the shortest
   non-empty text before which its preceding literal appears (that literal's last occurrence).
3. The variables before it are matched left to right: each takes the shortest non-empty text
   after which its following literal appears (that literal's first occurrence).
4. The last ``{+var}`` takes everything in between (at least one character). In a template
   without ``{+var}`` the last variable takes everything up to the trailing literal.

With at most one ``{+var}`` this finds a split whenever one exists (``{var}`` values stop at
``/ ? #``, so taking the shortest is never wrong); with several, the earlier ones take as
little as they can.

So ``db://{schema}/tables/{table}/rows/{+rest}`` splits ``db://s/tables/t/rows/1/2`` as
``s``, ``t``, ``1/2``, and ``x://{+dir}/meta/{name}`` splits ``x://a/meta/b/meta/c`` as
``a/meta/b``, ``c``. Every variable takes at least one character.

What a matched value guarantees
-------------------------------
Values are percent-decoded, and a URI whose values break any of these rules does not match the
template (it is then "not found", or matches a later template):

* a ``{var}`` value never contains ``/``, not even percent-encoded (``%2F``): a simple variable
  is always exactly one path segment (raw ``?`` and ``#`` end it too; encoded, they are data);
* no value contains a control character (U+0000-U+001F, U+007F-U+009F), raw or encoded;
* percent-encoded bytes must be UTF-8.

What a handler must still check itself: ``.`` and ``..`` (a ``{var}`` of ``..`` is one segment,
and a ``{+var}`` may hold ``../`` segments or start with ``/``), backslashes and drive letters
if it builds file paths, Unicode look-alikes and normalization, length, and whether the value
makes sense for it at all (an id that must be a number, a name that must exist).
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote

_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_VARNAME = re.compile(r"[A-Za-z0-9_]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SEGMENT_END = re.compile(r"[/?#]")


class UriTemplate:
    """A compiled template: ``match(uri)`` gives the variables, ``expand(**vars)`` the URI."""

    def __init__(self, template: str) -> None:
        self.template = template
        self.variables: list[str] = []
        self._parts: list[tuple[str, str]] = []  # ("literal", text) or ("simple"/"reserved", name)
        literals: list[str] = []  # literals[i] precedes variable i; the last one ends the template
        kinds: list[str] = []
        position = 0
        for expression in _EXPRESSION.finditer(template):
            literal = template[position : expression.start()]
            if "{" in literal or "}" in literal:
                raise ValueError(f"unbalanced braces in URI template {template!r}")
            body = expression.group(1)
            kind, name = ("reserved", body[1:]) if body.startswith("+") else ("simple", body)
            if not _VARNAME.fullmatch(name):
                raise ValueError(f"unsupported URI template expression {{{body}}} in {template!r}")
            if name in self.variables:
                raise ValueError(f"variable {name!r} appears twice in {template!r}")
            if self.variables and not literal:
                raise ValueError(
                    f"variables {self.variables[-1]!r} and {name!r} are adjacent in {template!r}: nothing in a URI "
                    "would say where one ends; put literal text between them"
                )
            self.variables.append(name)
            self._parts += [("literal", literal), (kind, name)]
            literals.append(literal)
            kinds.append(kind)
            position = expression.end()
        tail = template[position:]
        if "{" in tail or "}" in tail:
            raise ValueError(f"unbalanced braces in URI template {template!r}")
        self._parts.append(("literal", tail))
        literals.append(tail)
        self._literals = literals
        self._kinds = kinds
        # The variable that takes the middle: the last reserved one, else the last one.
        self._pivot = len(kinds) - 1 - kinds[::-1].index("reserved") if "reserved" in kinds else len(kinds) - 1

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables that make this template expand to ``uri``, or None (see the module docstring)."""
        spans = self._spans(uri)
        if spans is None:
            return None
        values: dict[str, str] = {}
        for name, kind, (start, end) in zip(self.variables, self._kinds, spans, strict=True):
            value = _decode(uri[start:end], kind)
            if value is None:
                return None
            values[name] = value
        return values

    def _spans(self, uri: str) -> list[tuple[int, int]] | None:
        """Where each variable's raw text lies in ``uri`` (the matching rule), or None."""
        literals, kinds = self._literals, self._kinds
        head, tail = literals[0], literals[-1]
        if not kinds:
            return [] if uri == head else None
        if len(head) + len(tail) + len(kinds) > len(uri) or not uri.startswith(head) or not uri.endswith(tail):
            return None
        end = len(uri) - len(tail)
        spans: list[tuple[int, int] | None] = [None] * len(kinds)
        position = len(head)
        for index in range(self._pivot):  # left to right, shortest first
            following = literals[index + 1]
            found = uri.find(following, position + 1, end)
            if found < 0:
                return None
            spans[index] = (position, found)
            position = found + len(following)
        limit = end
        for index in range(len(kinds) - 1, self._pivot, -1):  # right to left, shortest first
            preceding = literals[index]
            found = uri.rfind(preceding, position + 1, limit - 1)
            if found < 0:
                return None
            spans[index] = (found + len(preceding), limit)
            limit = found
        if limit <= position:
            return None
        spans[self._pivot] = (position, limit)
        return spans  # type: ignore[return-value]

    def expand(self, **values: str) -> str:
        """The URI for these variable values (simple expansion encodes ``/``; reserved does not)."""
        out = []
        for kind, value in self._parts:
            if kind == "literal":
                out.append(value)
            else:
                out.append(quote(str(values[value]), safe="" if kind == "simple" else "/:@!$&'()*+,;="))
        return "".join(out)


def _decode(raw: str, kind: str) -> str | None:
    """A matched value, percent-decoded, or None when it breaks a guarantee of the module docstring."""
    if kind == "simple" and _SEGMENT_END.search(raw):
        return None
    try:
        value = unquote(raw, errors="strict")
    except UnicodeDecodeError:
        return None
    if _CONTROL.search(value) or (kind == "simple" and "/" in value):
        return None
    return value
