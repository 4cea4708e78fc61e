"""Self-test of the appworld-mini suite, speaking the same commands the driver uses.

    python3 selftest.py            (from anywhere; Python 3.11, standard library only)

For every task in tasks.yaml: seeds a world with `python3 -m appworld_lite.init`, runs the gold
solution through the REPL protocol (`python3 -u -m appworld_lite.repl`), grades it with
grader/evaluate.py (must pass); grades an untouched world (must fail) and a world where only
complete_task() was called (must fail); for each scenario's first task, also gold plus an
unrequested change (must fail) and, for question tasks, an equivalently written answer (must
pass) and a wrong one (must fail); the three solutions of a scenario define the same functions
(the skills task 1 teaches are the ones tasks 2-3 need). Then exercises the REPL itself: check_skill (a good skill
passes; a missing API, an unknown keyword, an undefined name fail and are removed), bad request
lines, timeouts, output capture and a persistent namespace, and checks that a seed always gives
the same world.

stdout gets exactly one JSON line (the summary); progress goes to stderr. Exit 0 iff every check
passed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from typing import Any

SUITE = os.path.dirname(os.path.abspath(__file__))
WORLD = os.path.join(SUITE, "world")
ENV = {**os.environ, "PYTHONPATH": WORLD, "PYTHONDONTWRITEBYTECODE": "1"}


def load_tasks() -> tuple[list[str], list[tuple[str, int, str]]]:
    """Scenario ids and (task id, seed, scenario) from tasks.yaml (a fixed layout; no PyYAML)."""
    text = open(os.path.join(SUITE, "tasks.yaml"), encoding="utf-8").read()
    scenarios, tasks, current = [], [], ""
    for m in re.finditer(r"^(  - id: (\w+)|      - id: (\w+)\n\s+seed: (\d+))$", text, re.M):
        if m.group(2):
            current = m.group(2)
            scenarios.append(current)
        else:
            tasks.append((m.group(3), int(m.group(4)), current))
    return scenarios, tasks


def solution_functions(task: str) -> dict[str, str]:
    """The top-level functions of a gold solution: name -> source."""
    import ast
    path = os.path.join(SUITE, "grader", "solutions", f"{task}.py")
    source = open(path, encoding="utf-8").read()
    return {n.name: ast.get_source_segment(source, n) or "" for n in ast.parse(source).body
            if isinstance(n, ast.FunctionDef)}


def init_world(state: str, seed: int) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "appworld_lite.init", "--db",
                          os.path.join(state, "world.db"), "--seed", str(seed)],
                         env=ENV, capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert len(lines) == 1, f"init printed {len(lines)} lines: {out!r}"
    return json.loads(lines[0])


def grade(state: str, task: str, seed: int, env: dict[str, str] = ENV,
          isolated: bool = True) -> dict[str, Any]:
    p = subprocess.run([sys.executable, *(["-I"] if isolated else []),
                        os.path.join(SUITE, "grader", "evaluate.py"),
                        "--world", WORLD, "--db", os.path.join(state, "world.db"),
                        "--answer", os.path.join(state, "answer.json"), "--task", task,
                        "--seed", str(seed)], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"grader error for {task} (exit {p.returncode}): {p.stdout}{p.stderr}")
    return json.loads(p.stdout.splitlines()[-1])


class Repl:
    """The REPL as a child process, spoken to line by line."""

    def __init__(self, state: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-u", "-m", "appworld_lite.repl", "--db",
             os.path.join(state, "world.db")],
            env=ENV, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, bufsize=1)
        self.next_id = 0

    def send_line(self, line: str) -> dict[str, Any]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        if not reply:
            raise RuntimeError(f"the REPL closed stdout; stderr: {self.proc.stderr.read()}")
        return json.loads(reply)

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        self.next_id += 1
        reply = self.send_line(json.dumps({"op": op, "id": self.next_id, **fields}))
        assert reply["id"] == self.next_id, f"reply id {reply['id']} for request {self.next_id}"
        return reply

    def close(self) -> int:
        assert self.proc.stdin
        self.proc.stdin.close()
        rc = self.proc.wait(timeout=30)
        assert self.proc.stdout and self.proc.stdout.read() == "", "stray output after the replies"
        return rc


class Checks:
    def __init__(self) -> None:
        self.results: list[dict[str, Any]] = []

    def expect(self, name: str, ok: bool, detail: Any = "") -> bool:
        self.results.append({"name": name, "passed": bool(ok), "detail": str(detail)[:500]})
        print(f"{'ok  ' if ok else 'FAIL'} {name}" + ("" if ok else f": {detail}"), file=sys.stderr)
        return bool(ok)


def test_task(c: Checks, tmp: str, task: str, seed: int) -> tuple[bool, bool, bool]:
    gold_state = os.path.join(tmp, task, "gold")
    sup = init_world(gold_state, seed)
    c.expect(f"{task}: init", sup.get("ok") is True and "@" in sup["supervisor"]["email"], sup)
    repl = Repl(gold_state)
    code = open(os.path.join(SUITE, "grader", "solutions", f"{task}.py"), encoding="utf-8").read()
    reply = repl.request("exec", code=code, timeoutS=60)
    c.expect(f"{task}: gold exec ok and completed", reply["ok"] and reply["completed"], reply)
    repl.close()
    g = grade(gold_state, task, seed)
    gold_ok = c.expect(f"{task}: gold passes", g["passed"], g["reason"])

    untouched = os.path.join(tmp, task, "untouched")
    init_world(untouched, seed)
    u = grade(untouched, task, seed)
    untouched_fails = c.expect(f"{task}: untouched fails", not u["passed"], u["reason"])

    lazy = os.path.join(tmp, task, "lazy")
    init_world(lazy, seed)
    repl = Repl(lazy)
    r = repl.request("exec", code="apis.supervisor.complete_task()")
    repl.close()
    l_ = grade(lazy, task, seed)
    lazy_fails = c.expect(f"{task}: completed without work fails", r["completed"] and not l_["passed"],
                          l_["reason"])
    if task.endswith("_1"):
        test_grader_strictness(c, tmp, task, seed, code)
    return gold_ok, untouched_fails, lazy_fails


COLLATERAL = """
_email = apis.supervisor.show_profile()["email"]
_pw = {p["account_name"]: p["password"] for p in apis.supervisor.show_account_passwords()}
_t = apis.notes.login(username=_email, password=_pw["notes"])["access_token"]
apis.notes.create_note(access_token=_t, title="scratch", content="not asked for")
"""


def run_and_grade(tmp: str, label: str, task: str, seed: int, *cells: str) -> dict[str, Any]:
    state = os.path.join(tmp, task, label)
    init_world(state, seed)
    repl = Repl(state)
    for cell in cells:
        r = repl.request("exec", code=cell, timeoutS=60)
        if not r["ok"]:
            raise RuntimeError(f"{task} {label}: {r['error']}\n{r['output']}")
    repl.close()
    return grade(state, task, seed)


def test_grader_strictness(c: Checks, tmp: str, task: str, seed: int, code: str) -> None:
    """Extra changes fail; for question tasks an equivalent answer passes and a wrong one fails."""
    g = run_and_grade(tmp, "collateral", task, seed, code, COLLATERAL)
    c.expect(f"{task}: gold plus an unrequested note fails", not g["passed"] and any(
        ch["name"] == "state" and not ch["passed"] for ch in g["checks"]), g["reason"])
    final = "apis.supervisor.complete_task(answer=answer)"
    if final not in code:
        return
    body = code.replace(final, "")
    equivalent = ("answer = f'$ {answer}' if isinstance(answer, float) else "
                  "[a.upper() for a in reversed(answer)]\n" + final)
    wrong = ("answer = answer + 1 if isinstance(answer, float) else answer[:-1]\n" + final)
    g = run_and_grade(tmp, "equivalent", task, seed, body, equivalent)
    c.expect(f"{task}: an equivalently written answer passes", g["passed"], g["reason"])
    g = run_and_grade(tmp, "wrong", task, seed, body, wrong)
    c.expect(f"{task}: a wrong answer fails", not g["passed"] and any(
        ch["name"] == "answer" and not ch["passed"] for ch in g["checks"]), g["reason"])


GOOD_SKILL = '''def access_token(app_name):
    """Log in to one app as the supervisor; returns the access token."""
    email = apis.supervisor.show_profile()["email"]
    passwords = {p["account_name"]: p["password"] for p in apis.supervisor.show_account_passwords()}
    return getattr(apis, app_name).login(username=email, password=passwords[app_name])["access_token"]
'''
USES_STDLIB = '''def phone_in(text):
    return re.search(r"[0-9]{3}-[0-9]{3}-[0-9]{4}", text).group(0)
'''
MISSING_API = '''def broken(token):
    return apis.mail.no_such_method(access_token=token)
'''
BAD_KEYWORD = '''def bad_kw(token):
    return apis.mail.send_email(access_token=token, to=["a@b.test"], subject="s", body="b")
'''
UNDEFINED = '''def uses_helper(x):
    return helper_that_does_not_exist(x) + len(x)
'''

DOCS_COMPLETE = """
docs = apis.api_docs
missing = [f"{a['name']}.{d['name']}.{p['name']}"
           for a in docs.show_app_descriptions()
           for d in docs.show_api_descriptions(app_name=a["name"])
           for p in docs.show_api_doc(app_name=a["name"], api_name=d["name"])["parameters"]
           if not p["description"]]
print(len(docs.show_app_descriptions()), missing)
"""


def test_repl(c: Checks, tmp: str) -> None:
    state = os.path.join(tmp, "repl")
    init_world(state, 4242)
    repl = Repl(state)
    ok = repl.request("check_skill", name="access_token", source=GOOD_SKILL)
    c.expect("check_skill: a good skill passes", ok["ok"] and ok["reason"] is None, ok)
    r = repl.request("exec", code="access_token('mail').startswith('mail.')")
    c.expect("check_skill: a passed skill stays callable", r["ok"] and r["output"] == "True\n", r)
    r = repl.request("check_skill", name="phone_in", source=USES_STDLIB)
    c.expect("check_skill: a stdlib module used without import resolves", r["ok"], r)
    r = repl.request("check_skill", name="broken", source=MISSING_API)
    c.expect("check_skill: apis.mail.no_such_method fails",
             not r["ok"] and "no_such_method" in (r["reason"] or ""), r)
    r2 = repl.request("exec", code="broken")
    c.expect("check_skill: a failed skill is removed from the namespace",
             not r2["ok"] and r2["error"].startswith("NameError"), r2)
    r = repl.request("check_skill", name="bad_kw", source=BAD_KEYWORD)
    c.expect("check_skill: an unknown API keyword fails", not r["ok"] and "'to'" in (r["reason"] or ""), r)
    r = repl.request("check_skill", name="uses_helper", source=UNDEFINED)
    c.expect("check_skill: an undefined free name fails",
             not r["ok"] and "helper_that_does_not_exist" in (r["reason"] or ""), r)
    r = repl.request("check_skill", name="nothing", source="x = 1\n")
    c.expect("check_skill: a source without the function fails", not r["ok"], r)
    r = repl.request("check_skill", name="boom", source="def boom(:\n")
    c.expect("check_skill: a source that does not parse fails", not r["ok"], r)

    for line, why in (("this is not json", "not JSON"), ('["exec"]', "JSON object"),
                      ('{"op":"nope","id":7}', "'op'"), ('{"op":"exec","id":8}', "'code'"),
                      ('{"op":"exec","id":9,"code":"1","timeoutS":-1}', "timeoutS")):
        r = repl.send_line(line)
        c.expect(f"bad request {line!r} is refused",
                 r["ok"] is False and r["error"].startswith("bad request:") and why in r["error"], r)
    r = repl.request("exec", code=DOCS_COMPLETE)
    c.expect("api_docs: 7 apps, every parameter of every API documented",
             r["ok"] and r["output"] == "7 []\n", r)
    r = repl.request("exec", code="x = 41\nprint('hello')")
    c.expect("exec: prints are captured", r["ok"] and r["output"] == "hello\n" and not r["completed"], r)
    r = repl.request("exec", code="x + 1")
    c.expect("exec: the namespace persists; a final expression is echoed",
             r["ok"] and r["output"] == "42\n", r)
    r = repl.request("exec", code="import os, sys\nos.write(1, b'raw fd 1\\n')\n"
                                  "sys.__stdout__.write('dunder\\n')\nprint('after')")
    c.expect("exec: writes to fd 1 never reach the protocol", r["ok"] and "after" in r["output"], r)
    r = repl.request("exec", code="input()")
    c.expect("exec: input() cannot read the protocol's requests",
             not r["ok"] and r["error"].startswith("EOFError"), r)
    r = repl.request("exec", code="import subprocess\nsubprocess.run(['cat'])\nprint('cat done')")
    c.expect("exec: a child process cannot read the protocol's requests",
             r["ok"] and r["output"] == "cat done\n", r)
    r = repl.request("exec", code="apis.mail.no_such_method()")
    c.expect("exec: an API error names the API",
             not r["ok"] and r["error"].startswith("ApiError") and "no_such_method" in r["error"]
             and "Traceback" in r["output"], r)
    r = repl.request("exec", code="t = apis.mail.login(username='nobody@x.test', password='p')")
    c.expect("exec: a login error names the argument", not r["ok"] and "'username'" in r["error"], r)
    r = repl.request("exec", code="while True:\n    pass", timeoutS=1)
    c.expect("exec: a timeout is an error", not r["ok"] and r["error"].startswith("TimeoutError"), r)
    r = repl.request("exec", code="print('x' * 200_000)\nraise ValueError('the end')")
    c.expect("exec: long output is capped, keeping the traceback",
             not r["ok"] and len(r["output"]) < 60_000 and "characters dropped" in r["output"]
             and r["output"].rstrip().endswith("ValueError: the end"), r["output"][-300:])
    r = repl.request("exec", code="import copy\nprint(hasattr(apis, '__deepcopy__'), "
                                  "hasattr(apis.mail, '__wrapped__'))")
    c.expect("exec: probing dunders on apis is a plain AttributeError",
             r["ok"] and r["output"] == "False False\n", r)
    r = repl.request("exec", code="apis.supervisor.complete_task(answer=float('nan'))")
    c.expect("exec: a non-JSON answer is refused naming the argument",
             not r["ok"] and "'answer'" in r["error"] and not r["completed"], r)
    r = repl.request("exec", code="raise SystemExit(3)")
    c.expect("exec: SystemExit does not end the REPL", not r["ok"] and "SystemExit" in r["error"], r)
    r = repl.request("exec", code="apis.supervisor.complete_task(answer=[1, 'two'])")
    c.expect("exec: completion is reported", r["ok"] and r["completed"] and r["answer"] == [1, "two"], r)
    r = repl.request("exec", code="1 + 1")
    c.expect("exec: later replies still carry the completion", r["completed"] and r["output"] == "2\n", r)
    rc = repl.close()
    c.expect("repl: end of input exits 0", rc == 0, rc)

    # Files an agent could leave on PYTHONPATH (/workspace/world) must not stand in for the stdlib.
    plant = os.path.join(tmp, "plant")
    os.makedirs(plant)
    for module in ("json", "sqlite3", "tempfile", "collections"):
        with open(os.path.join(plant, f"{module}.py"), "w", encoding="utf-8") as f:
            f.write("raise SystemExit('planted module imported')\n")
    with open(os.path.join(plant, "sitecustomize.py"), "w", encoding="utf-8") as f:
        f.write("raise SystemExit('planted sitecustomize imported')\n")
    planted_env = {**ENV, "PYTHONPATH": os.pathsep.join([plant, WORLD])}
    task, seed = "city_contacts_1", 1801
    untouched = os.path.join(tmp, "planted")
    init_world(untouched, seed)
    # Only isolated mode is safe: without -I, site (and any .pth file) imports stdlib modules
    # from PYTHONPATH before evaluate.py runs a line.
    g = grade(untouched, task, seed, env=planted_env, isolated=True)
    c.expect("grader (python3 -I) ignores modules planted on PYTHONPATH",
             g["passed"] is False and "completed" in g["reason"], g)

    a, b = os.path.join(tmp, "same-a"), os.path.join(tmp, "same-b")
    init_world(a, 77)
    init_world(b, 77)
    dump = lambda d: "\n".join(__import__("sqlite3").connect(os.path.join(d, "world.db")).iterdump())
    c.expect("init: a seed always gives the same world", dump(a) == dump(b))
    init_world(b, 78)
    c.expect("init: another seed gives another world", dump(a) != dump(b))


def main() -> int:
    scenarios, tasks = load_tasks()
    c = Checks()
    c.expect("suite: at least 8 scenarios", len(scenarios) >= 8, scenarios)
    for s in scenarios:
        ids = [t for t, _, sc in tasks if sc == s]
        c.expect(f"suite: {s} has tasks {s}_1..{s}_3",
                 len(ids) >= 3 and ids == [f"{s}_{i}" for i in range(1, len(ids) + 1)], ids)
    for s in scenarios:
        defs = [solution_functions(t) for t, _, sc in tasks if sc == s]
        c.expect(f"suite: {s} solutions define the same functions (reusable skills)",
                 bool(defs) and bool(defs[0]) and all(d == defs[0] for d in defs),
                 [sorted(d) for d in defs])
    gold = untouched = lazy = 0
    with tempfile.TemporaryDirectory(prefix="appworld-selftest-") as tmp:
        for task, seed, _ in tasks:
            try:
                g, u, l_ = test_task(c, tmp, task, seed)
            except (RuntimeError, AssertionError, subprocess.SubprocessError, OSError,
                    ValueError) as e:  # a broken task is a failed check, not a crashed selftest
                c.expect(f"{task}: runs", False, e)
                g = u = l_ = False
            gold, untouched, lazy = gold + g, untouched + u, lazy + l_
        test_repl(c, tmp)
    failed = [r for r in c.results if not r["passed"]]
    print(json.dumps({"scenarios": len(scenarios), "tasks": len(tasks), "goldPassed": gold,
                      "untouchedFailed": untouched, "completedOnlyFailed": lazy,
                      "checks": len(c.results), "failedChecks": failed}))
    print(f"{len(c.results) - len(failed)} passed, {len(failed)} failed", file=sys.stderr)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
