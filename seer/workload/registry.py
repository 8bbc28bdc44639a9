"""A table from names to handlers, filled by a decorator.

The pattern of PyTorch's flop counter (`torch.utils.flop_counter.register_flop_formula`): each
handler names the ops it serves where it is defined,

    OPS = Registry("op")

    @OPS.register("addmm", "mm", "linear")
    def _gemm(call): ...

and the caller looks a name up (`OPS.get(name)`) instead of walking a chain of name sets. A name
belongs to one handler: registering it a second time is refused (`ValueError` naming the name and
both handlers), so two kinds can never silently claim the same op; `remove` takes names out again
(a test's temporary handler, a plug-in that is unloaded).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

H = TypeVar("H", bound=Callable)


def _describe(handler: Callable) -> str:
    name = getattr(handler, "__qualname__", None) or getattr(handler, "__name__", None) or repr(handler)
    module = getattr(handler, "__module__", None)
    return f"{module}.{name}" if module else str(name)


class Registry(Generic[H]):
    """Names -> handlers; `what` names the things registered in error messages ("op", "kernel")."""

    def __init__(self, what: str = "name") -> None:
        self.what = what
        self._handlers: dict[str, H] = {}

    def register(self, *names: str) -> Callable[[H], H]:
        """Decorator: `handler` serves each of `names` (the function itself is returned unchanged)."""

        def decorate(handler: H) -> H:
            self.add(handler, *names)
            return handler

        return decorate

    def add(self, handler: H, *names: str) -> None:
        """Register `handler` under `names`, all or none: a name already taken (or given twice) is refused."""
        if not names:
            raise ValueError(f"register {_describe(handler)}: no {self.what} names given")
        seen: set[str] = set()
        for name in names:
            if not isinstance(name, str) or not name:
                raise ValueError(f"register {_describe(handler)}: {self.what} name {name!r} is not a non-empty string")
            if name in seen:
                raise ValueError(f"register {_describe(handler)}: {self.what} {name!r} given twice")
            old = self._handlers.get(name)
            if old is not None:
                raise ValueError(
                    f"{self.what} {name!r} is already registered to {_describe(old)}; refusing to register it "
                    f"to {_describe(handler)} as well"
                )
            seen.add(name)
        for name in names:
            self._handlers[name] = handler

    def remove(self, *names: str) -> None:
        """Take `names` out (each must be registered)."""
        missing = [n for n in names if n not in self._handlers]
        if missing:
            raise KeyError(f"{self.what} {', '.join(map(repr, missing))} not registered")
        for name in names:
            del self._handlers[name]

    def get(self, name: str) -> H | None:
        """The handler of `name`, None where none is registered."""
        return self._handlers.get(name)

    def names(self, handler: H | None = None) -> list[str]:
        """Every registered name (in registration order), or those of one handler."""
        return [n for n, h in self._handlers.items() if handler is None or h is handler]

    def items(self) -> list[tuple[str, H]]:
        return list(self._handlers.items())

    def __contains__(self, name: object) -> bool:
        return name in self._handlers

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._handlers))

    def __len__(self) -> int:
        return len(self._handlers)
