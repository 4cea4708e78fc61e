"""Runs agent code like a notebook cell: in a persistent namespace, with stdout and stderr
captured, a traceback on error, the value of a final bare expression echoed, and a wall-clock
timeout (SIGALRM, so only in the main thread)."""

from __future__ import annotations

import ast
import contextlib
import io
import itertools
import linecache
import os
import signal
import traceback
from dataclasses import dataclass
from typing import Any

CELL = "<cell>"
_cells = itertools.count(1)
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


@dataclass
class CellResult:
    ok: bool
    output: str
    error: str | None


class CellTimeout(BaseException):
    """Raised inside the cell by the alarm; a BaseException so `except Exception` cannot eat it."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise CellTimeout()


def _user_traceback(exc: BaseException) -> str:
    """The traceback from the first frame of the cell on, without the world's own frames."""
    tb = exc.__traceback__
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith(CELL[:-1]):
        tb = tb.tb_next
    te = traceback.TracebackException(type(exc), exc, tb)
    te.stack = traceback.StackSummary.from_list(
        [f for f in te.stack if not f.filename.startswith(PACKAGE_DIR)])
    return "".join(te.format())


def run_cell(code: str, namespace: dict[str, Any], timeout_s: float) -> CellResult:
    """Executes `code` in `namespace`; never raises for anything the code does."""
    buf = io.StringIO()
    # A distinct file name per cell, registered in linecache, so tracebacks show the source lines.
    name = f"{CELL[:-1]}-{next(_cells)}>"
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    error: str | None = None
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            try:
                tree = ast.parse(code, filename=name, mode="exec")
                last = None
                if tree.body and isinstance(tree.body[-1], ast.Expr):
                    last = ast.Expression(tree.body.pop().value)
                exec(compile(tree, name, "exec"), namespace)
                if last is not None:
                    value = eval(compile(last, name, "eval"), namespace)
                    if value is not None:
                        print(repr(value))
            except CellTimeout:
                signal.setitimer(signal.ITIMER_REAL, 0)
                error = f"TimeoutError: the code ran longer than {timeout_s:g} s and was stopped"
                buf.write(error + "\n")
            except SyntaxError as e:
                signal.setitimer(signal.ITIMER_REAL, 0)
                error = f"SyntaxError: {e.msg} (line {e.lineno})"
                buf.write("".join(traceback.format_exception_only(type(e), e)))
            except BaseException as e:  # noqa: BLE001 - SystemExit/KeyboardInterrupt too
                signal.setitimer(signal.ITIMER_REAL, 0)
                error = f"{type(e).__name__}: {e}"
                buf.write(_user_traceback(e))
    except CellTimeout:  # the alarm fired between the cell and the cleanup
        error = f"TimeoutError: the code ran longer than {timeout_s:g} s and was stopped"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return CellResult(ok=error is None, output=buf.getvalue(), error=error)
