"""Static check of a skill (a function definition) against a live world, without calling it:
every `apis.<app>.<api>` chain names an app and an API that exist (and keyword arguments the API
accepts), and every free global name resolves in the namespace, the builtins, or the standard
library (a stdlib module is imported into the namespace so the skill can use it)."""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import symtable
import sys
from typing import Any


def _chain(node: ast.AST) -> list[str] | None:
    """`apis.mail.send_email` -> ['apis', 'mail', 'send_email']; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def _free_globals(table: symtable.SymbolTable) -> set[str]:
    names = set()
    for sym in table.get_symbols():
        if sym.is_global() and sym.is_referenced() and not sym.is_assigned():
            names.add(sym.get_name())
    for child in table.get_children():
        names |= _free_globals(child)
    return names


def check_function(source: str, name: str, namespace: dict[str, Any], apps: dict[str, Any]) -> str | None:
    """Why the function `name` defined by `source` would not work in this world, or None."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        return f"the source does not parse: {e.msg} (line {e.lineno})"
    defs = [n for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]
    if not defs:
        return f"the source defines no top-level function '{name}'"
    fn = defs[-1]
    for node in ast.walk(fn):
        if not isinstance(node, ast.Attribute):
            continue
        chain = _chain(node)
        if chain is None or chain[0] != "apis" or len(chain) < 2:
            continue
        app = chain[1]
        if app not in apps:
            return f"apis.{app} (line {node.lineno}): there is no app '{app}'"
        if len(chain) >= 3:
            api = chain[2]
            if api not in type(apps[app]).api_names():
                return f"apis.{app}.{api} (line {node.lineno}): the app '{app}' has no API '{api}'"
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            chain = _chain(node.func)
            if chain and chain[0] == "apis" and len(chain) == 3:
                params = inspect.signature(getattr(apps[chain[1]], chain[2])).parameters
                for kw in node.keywords:
                    if kw.arg is not None and kw.arg not in params:
                        return (f"apis.{chain[1]}.{chain[2]} (line {node.lineno}): no argument "
                                f"'{kw.arg}' (accepted: {', '.join(params) or 'none'})")
    module = symtable.symtable(source, "<skill>", "exec")
    table = next((c for c in module.get_children() if c.get_name() == name), None)
    free = _free_globals(table) if table is not None else set()
    for g in sorted(free):
        if g in namespace or hasattr(builtins, g):
            continue
        if g in sys.stdlib_module_names:
            try:
                namespace[g] = importlib.import_module(g)
                continue
            except ImportError:
                pass
        return f"free name '{g}' is not defined (not in the namespace, the builtins or the stdlib)"
    return None
