"""Records: plain classes with a dataclass's manners, for the public value types.

``Tool``, ``ToolResult``, ``Resource`` and ``ResourceTemplate`` (mutable) and ``CacheHint``,
``TaskSettings`` and ``WatchSet`` (immutable) were dataclasses. Making a dataclass runs generated
code when its module is imported (0.3-0.8 ms each on this project's start-up, which makes all seven
of them), so they are plain classes with ``__slots__`` on one of these two bases instead, which
give what the dataclasses gave:

* ``Record``: equal when of the same class with equal ``FIELDS`` (default: the ``__slots__``),
  shown as ``Name(field=value, ...)`` over ``SHOWN`` (default: ``FIELDS``), not hashable.
* ``FrozenRecord``: the same, hashable by its fields, and no assignment after ``__init__`` (which
  sets its fields with ``object.__setattr__``).

``dataclasses.replace`` and ``dataclasses.fields`` do not apply to them. The wire's events
(``core.wire.Request`` and its kin) are records too: one is made for every message.
"""

from __future__ import annotations

from typing import Any, ClassVar


class Record:
    """Equality and a repr by field (see the module docstring); not hashable."""

    __slots__ = ()
    FIELDS: ClassVar[tuple[str, ...]]  # compared, in this order
    SHOWN: ClassVar[tuple[str, ...]]  # in the repr

    def __init_subclass__(cls, **options: Any) -> None:
        super().__init_subclass__(**options)
        if "FIELDS" not in cls.__dict__:
            cls.FIELDS = cls.__slots__
        if "SHOWN" not in cls.__dict__:
            cls.SHOWN = cls.FIELDS

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.FIELDS)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in self.SHOWN) + ")"


class FrozenRecord(Record):
    """A ``Record`` that cannot change once made, and so is hashable."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot assign {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self._values())
