"""`python3 -u -m appworld_lite.repl --db PATH`: the agent's long-lived Python session.

Protocol: one JSON request per stdin line, exactly one JSON reply line per request on stdout.

  {"op": "exec", "id": 1, "code": "...", "timeoutS": 30}
    -> {"id": 1, "ok": bool, "output": str, "error": null | "<ExcType>: <msg>",
        "completed": bool, "answer": <json>}
  {"op": "check_skill", "id": 2, "name": "f", "source": "def f(...): ..."}
    -> {"id": 2, "ok": bool, "reason": null | str}
  anything else -> {"id": <the request's id when it has a valid one, else null>, "ok": false,
                    "error": "bad request: <why>"}

The namespace persists across requests and starts with `apis` bound. Nothing but reply lines
ever reaches stdout: the real stdout and stdin are moved to private descriptors at start, file
descriptor 1 is pointed at stderr and 0 at /dev/null, so prints, input() and child processes
cannot corrupt the protocol.
Blank lines are ignored; end of input ends the REPL (exit 0). `output` is capped at 50,000
characters (head and tail kept, the middle replaced by a "[... N characters dropped ...]" line).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from .check import check_function
from .runner import run_cell
from .world import World

DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 3600.0
# Replies travel in messages of bounded size; an agent never needs more than this of one cell.
MAX_OUTPUT_CHARS = 50_000


def cap(output: str) -> str:
    """At most MAX_OUTPUT_CHARS: the head and the (longer) tail, where a traceback ends."""
    if len(output) <= MAX_OUTPUT_CHARS:
        return output
    head, tail = MAX_OUTPUT_CHARS // 5, MAX_OUTPUT_CHARS * 4 // 5
    dropped = len(output) - head - tail
    return f"{output[:head]}\n[... {dropped} characters dropped ...]\n{output[-tail:]}"


class BadRequest(Exception):
    pass


def _id(req: dict[str, Any]) -> Any:
    rid = req.get("id")
    if isinstance(rid, bool) or not isinstance(rid, (int, str)):
        raise BadRequest("'id' must be an integer or a string")
    return rid


def _string(req: dict[str, Any], key: str) -> str:
    value = req.get(key)
    if not isinstance(value, str):
        raise BadRequest(f"'{key}' must be a string")
    return value


class Session:
    def __init__(self, world: World) -> None:
        self.world = world
        self.namespace: dict[str, Any] = {"__name__": "__main__", "apis": world.apis}

    def handle(self, line: str) -> dict[str, Any]:
        rid = None
        try:
            try:
                req = json.loads(line)
            except json.JSONDecodeError as e:
                raise BadRequest(f"not JSON ({e.msg} at column {e.colno})") from None
            if not isinstance(req, dict):
                raise BadRequest("a request must be a JSON object")
            if isinstance(req.get("id"), (int, str)) and not isinstance(req.get("id"), bool):
                rid = req["id"]
            op = req.get("op")
            if op == "exec":
                return self.exec(req)
            if op == "check_skill":
                return self.check_skill(req)
            raise BadRequest(f"'op' must be 'exec' or 'check_skill' (got {op!r})")
        except BadRequest as e:
            return {"id": rid, "ok": False, "error": f"bad request: {e}"}

    def exec(self, req: dict[str, Any]) -> dict[str, Any]:
        rid = _id(req)
        code = _string(req, "code")
        timeout = req.get("timeoutS", DEFAULT_TIMEOUT_S)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or \
                not 0 < timeout <= MAX_TIMEOUT_S:
            raise BadRequest(f"'timeoutS' must be a number in (0, {MAX_TIMEOUT_S:g}]")
        result = run_cell(code, self.namespace, float(timeout))
        done = self.world.completion()
        return {"id": rid, "ok": result.ok, "output": cap(result.output), "error": result.error,
                "completed": done["completed"], "answer": done["answer"]}

    def check_skill(self, req: dict[str, Any]) -> dict[str, Any]:
        rid = _id(req)
        name = _string(req, "name")
        source = _string(req, "source")
        if not name.isidentifier():
            raise BadRequest("'name' must be a Python identifier")
        result = run_cell(source, self.namespace, DEFAULT_TIMEOUT_S)
        reason = None
        if not result.ok:
            reason = f"the definition failed: {result.error}"
        elif not callable(self.namespace.get(name)):
            reason = f"the source does not define a function '{name}'"
        else:
            reason = check_function(source, name, self.namespace, self.world.apps)
        if reason is not None:
            self.namespace.pop(name, None)
        return {"id": rid, "ok": reason is None, "reason": reason}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m appworld_lite.repl")
    parser.add_argument("--db", required=True, help="path of the world's SQLite file")
    args = parser.parse_args(argv)
    # Keep the protocol channels private: fd 1 becomes stderr and fd 0 /dev/null for everything
    # else, so neither a print nor an input() in agent code can touch a request or a reply.
    reply_fd, request_fd = os.dup(1), os.dup(0)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    replies = os.fdopen(reply_fd, "w", encoding="utf-8", buffering=1)
    requests = os.fdopen(request_fd, "r", encoding="utf-8")
    sys.stdout = sys.stderr
    sys.stdin = open(os.devnull, encoding="utf-8")
    world = World(args.db)
    session = Session(world)
    for line in requests:
        if not line.strip():
            continue
        reply = session.handle(line)
        replies.write(json.dumps(reply, default=repr) + "\n")
        replies.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
