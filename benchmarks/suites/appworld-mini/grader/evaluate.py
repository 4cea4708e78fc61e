"""Grades one task by state diff.

    python3 -I evaluate.py --world /workspace/world --db /workspace/state/world.db \
        --answer /workspace/state/answer.json --task <task_id> --seed <seed>

A fresh world from `--seed` is built in a temp directory and the gold solution
(`solutions/<task_id>.py`, beside this file) runs in it like agent code (a namespace with `apis`).
The changes seed->gold and seed->agent must be equal, table by table, as multisets of rows without
volatile columns (ids, timestamps), and the answers must match after normalisation. A task the agent
never completed fails. Prints one JSON line {"passed", "reason", "checks"}; exits 0 when graded
(pass or fail) and 1 on a grader error (missing world, solution, or a gold solution that fails).
"""

from __future__ import annotations

import os
import sys

# Nothing the agent could have written may be imported in place of the stdlib. Run as
# `python3 -I`: otherwise site (sitecustomize, .pth files) imports from PYTHONPATH (the sandbox
# sets /workspace/world) before this line; dropping those entries here is a second line only.
_untrusted = {os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
sys.path[:] = [p for p in sys.path if os.path.abspath(p) not in _untrusted]

import argparse  # noqa: E402
import collections  # noqa: E402
import json  # noqa: E402
import sqlite3  # noqa: E402
import tempfile  # noqa: E402
from typing import Any  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def snapshot(db_path: str, ignored_tables: tuple, volatile: tuple) -> dict[str, collections.Counter]:
    """Every table's rows without volatile columns, as a multiset of JSON strings."""
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        out = {}
        tables = [r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name")]
        for t in tables:
            if t in ignored_tables:
                continue
            cols = [r[1] for r in db.execute(f"PRAGMA table_info({t})") if r[1] not in volatile]
            rows = db.execute(f"SELECT {', '.join(cols)} FROM {t}").fetchall()
            out[t] = collections.Counter(
                json.dumps(dict(zip(cols, [round(v, 2) if isinstance(v, float) else v for v in r])),
                           sort_keys=True) for r in rows)
        return out
    finally:
        db.close()


def diff(before: dict, after: dict) -> dict[str, dict[str, list]]:
    """Per table: rows removed and rows added (sorted, as JSON strings)."""
    out = {}
    for t in sorted(set(before) | set(after)):
        b, a = before.get(t, collections.Counter()), after.get(t, collections.Counter())
        removed, added = sorted((b - a).elements()), sorted((a - b).elements())
        if removed or added:
            out[t] = {"removed": removed, "added": added}
    return out


def normalise(value: Any) -> Any:
    """Answers compare loosely: case/space-insensitive strings, numbers to cents, numeric strings
    as numbers, lists as sorted multisets, dict values recursively."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return round(float(value), 2)
    if isinstance(value, str):
        s = " ".join(value.strip().split()).casefold()
        try:
            return round(float(s.replace("$", "").replace(",", "")), 2)
        except ValueError:
            return s
    if isinstance(value, (list, tuple)):
        return sorted((normalise(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, dict):
        return {str(k).casefold(): normalise(v) for k, v in value.items()}
    return repr(value)


def summarise(changes: dict) -> str:
    if not changes:
        return "no changes"
    return "; ".join(f"{t}: -{len(c['removed'])} +{len(c['added'])}" for t, c in changes.items())


def explain(gold: dict, agent: dict) -> str:
    """The first difference between the two change sets, for the report."""
    for t in sorted(set(gold) | set(agent)):
        g, a = gold.get(t, {"removed": [], "added": []}), agent.get(t, {"removed": [], "added": []})
        for kind in ("removed", "added"):
            missing = sorted((collections.Counter(g[kind]) - collections.Counter(a[kind])).elements())
            extra = sorted((collections.Counter(a[kind]) - collections.Counter(g[kind])).elements())
            if missing:
                return f"{t}: expected row {kind} but not by the agent: {missing[0]}"
            if extra:
                return f"{t}: row {kind} by the agent but not expected: {extra[0]}"
    return "equal"


def grade(world_dir: str, db_path: str, answer_path: str, task_id: str, seed: int) -> dict:
    # Appended, not prepended: files the agent left beside the world cannot shadow the stdlib.
    sys.path.append(world_dir)
    from appworld_lite import World, generate
    from appworld_lite.runner import run_cell
    from appworld_lite.world import IGNORED_TABLES, VOLATILE_COLUMNS

    solution = os.path.join(HERE, "solutions", f"{task_id}.py")
    if not os.path.isfile(solution):
        raise RuntimeError(f"no gold solution for task '{task_id}' at {solution}")
    if not os.path.isfile(db_path):
        raise RuntimeError(f"no world database at {db_path}")
    checks = []

    def check(name: str, passed: bool, detail: str) -> None:
        checks.append({"name": name, "passed": passed, "detail": detail})

    with tempfile.TemporaryDirectory(prefix="appworld-grade-") as tmp:
        ref = os.path.join(tmp, "world.db")
        generate(ref, seed)
        seed_rows = snapshot(ref, IGNORED_TABLES, VOLATILE_COLUMNS)
        world = World(ref)
        with open(solution, encoding="utf-8") as f:
            result = run_cell(f.read(), {"__name__": "__main__", "apis": world.apis}, 120.0)
        gold_done = world.completion()
        world.close()
        if not result.ok or not gold_done["completed"]:
            raise RuntimeError(f"the gold solution of '{task_id}' failed: "
                               f"{result.error or 'it did not complete'}\n{result.output[-2000:]}")
        gold_changes = diff(seed_rows, snapshot(ref, IGNORED_TABLES, VOLATILE_COLUMNS))

    agent_db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        agent_seed = agent_db.execute("SELECT value FROM meta WHERE key = 'seed'").fetchone()
    finally:
        agent_db.close()
    check("seed", agent_seed is not None and int(agent_seed[0]) == seed,
          f"world seed {agent_seed[0] if agent_seed else None}, task seed {seed}")

    try:
        with open(answer_path, encoding="utf-8") as f:
            done = json.load(f)
    except FileNotFoundError:
        done = {"completed": False, "answer": None}
    completed = bool(done.get("completed"))
    check("completed", completed,
          "apis.supervisor.complete_task was called" if completed else
          "apis.supervisor.complete_task was never called")

    agent_changes = diff(seed_rows, snapshot(db_path, IGNORED_TABLES, VOLATILE_COLUMNS))
    same = agent_changes == gold_changes
    check("state", same, f"expected {summarise(gold_changes)}; the agent made "
          f"{summarise(agent_changes)}" + ("" if same else f"; {explain(gold_changes, agent_changes)}"))

    gold_answer = gold_done["answer"]
    if gold_answer is None:
        check("answer", True, "no answer required")
    else:
        got = done.get("answer")
        ok = normalise(got) == normalise(gold_answer)
        check("answer", ok, f"expected {json.dumps(gold_answer)}, got {json.dumps(got)}")

    failed = [c for c in checks if not c["passed"]]
    reason = "all checks passed" if not failed else "; ".join(
        f"{c['name']}: {c['detail']}" for c in failed)
    return {"passed": not failed, "reason": reason, "checks": checks}


def main() -> int:
    p = argparse.ArgumentParser(prog="evaluate.py")
    p.add_argument("--world", required=True, help="directory holding the appworld_lite package")
    p.add_argument("--db", required=True, help="the agent's world database")
    p.add_argument("--answer", required=True, help="the agent's answer.json (may be missing)")
    p.add_argument("--task", required=True, help="task id, e.g. split_bill_1")
    p.add_argument("--seed", required=True, type=int, help="the task's world seed")
    a = p.parse_args()
    try:
        report = grade(a.world, a.db, a.answer, a.task, a.seed)
    except Exception as e:  # noqa: BLE001 - a grader error, reported as one JSON line
        print(json.dumps({"passed": False, "reason": f"grader error: {e}", "checks": []}))
        return 1
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
