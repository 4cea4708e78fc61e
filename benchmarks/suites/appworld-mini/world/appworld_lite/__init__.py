"""appworld_lite: a small stateful app world (contacts, calendar, mail, notes, payments) in one
SQLite file, exposed to agents as `apis.<app>.<method>(...)`. Python 3.11 standard library only.

Modules: `world` (schema, seeded generation, `World`), `core` (API machinery, errors), `apps`
(the apps), `runner` (runs agent code with captured output), `check` (static skill check),
`init` and `repl` (the command-line entry points)."""

from .core import ApiError
from .world import World, generate

__all__ = ["ApiError", "World", "generate"]
