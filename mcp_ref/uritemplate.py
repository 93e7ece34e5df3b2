"""RFC 6570 URI templates, the subset resource templates need: matching a URI, and expansion.

Supported expressions: ``{var}`` (level 1, simple string expansion: one segment, no ``/ ? #``)
and ``{+var}`` (level 2/3 reserved expansion: may span ``/``, e.g. ``file:///{+path}``); several
of them in one template. Matching percent-decodes the captured values. Other operators
(``{#x}``, ``{/x}``, ``{?x}``, lists, modifiers) are rejected when the template is registered, so
a template never silently matches the wrong URIs.
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote

_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_VARNAME = re.compile(r"[A-Za-z0-9_]+")


class UriTemplate:
    """A compiled template: ``match(uri)`` gives the variables, ``expand(**vars)`` the URI."""

    def __init__(self, template: str) -> None:
        self.template = template
        self.variables: list[str] = []
        self._parts: list[tuple[str, str]] = []  # ("literal", text) or ("simple"/"reserved", name)
        pattern = []
        position = 0
        for expression in _EXPRESSION.finditer(template):
            literal = template[position : expression.start()]
            if "{" in literal or "}" in literal:
                raise ValueError(f"unbalanced braces in URI template {template!r}")
            self._parts.append(("literal", literal))
            pattern.append(re.escape(literal))
            body = expression.group(1)
            kind, name = ("reserved", body[1:]) if body.startswith("+") else ("simple", body)
            if not _VARNAME.fullmatch(name):
                raise ValueError(f"unsupported URI template expression {{{body}}} in {template!r}")
            if name in self.variables:
                raise ValueError(f"variable {name!r} appears twice in {template!r}")
            self.variables.append(name)
            self._parts.append((kind, name))
            pattern.append(f"(?P<{name}>.+?)" if kind == "reserved" else f"(?P<{name}>[^/?#]+?)")
            position = expression.end()
        tail = template[position:]
        if "{" in tail or "}" in tail:
            raise ValueError(f"unbalanced braces in URI template {template!r}")
        self._parts.append(("literal", tail))
        pattern.append(re.escape(tail))
        self._regex = re.compile("".join(pattern), re.DOTALL)

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables that make this template expand to ``uri``, or None."""
        found = self._regex.fullmatch(uri)
        if found is None:
            return None
        return {name: unquote(value) for name, value in found.groupdict().items()}

    def expand(self, **values: str) -> str:
        """The URI for these variable values (simple expansion encodes ``/``; reserved does not)."""
        out = []
        for kind, value in self._parts:
            if kind == "literal":
                out.append(value)
            else:
                out.append(quote(str(values[value]), safe="" if kind == "simple" else "/:@!$&'()*+,;="))
        return "".join(out)
