#!/usr/bin/env python3
"""Trusted evaluator of the online bin-packing suites (Troupe evolve contract).

Usage:
    python3 evaluate.py --program PATH --phase validation|test [--timeout-s S]

The candidate program runs in its own process and plays an online protocol on stdin/stdout,
one line per message, so it never sees an item before it has placed the previous one:

    evaluator -> program   "instance <capacity>"   a new instance starts, no bins are open
    evaluator -> program   "item <size>"           place this item
    program -> evaluator   "<bin index>"           0-based; the number of open bins opens a new bin
    evaluator -> program   "end"                   the instance is over
    (end of stdin)                                 the program exits

The evaluator checks every placement (an integer index of an open bin with room, or exactly the
next new bin) and counts the bins itself: the score is the average number of bins used over the
phase's instances (lower is better). Nothing the program prints is trusted beyond bin indices.

Phases (settings in suite.json next to this file):
    validation  instances generated from the suite's distribution with a fixed seed (used by
                the search)
    test        the published instances in the data file named by suite.json (never used by the
                search; the score is comparable with the published reference numbers)

Output: exactly one JSON line on stdout,
    {"status": "ok"|"invalid"|"error"|"timeout", "score": float|null, "signature": [bins per
     instance], "metrics": {...}, "stderrTail": str, "evalMs": int, "evaluatorVersion": str}
Exit status 0 whenever that line was printed (the status says how the program did); any other
exit status is an evaluator (infrastructure) failure. Standard library only.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time

EVALUATOR_VERSION = "binpacking-online/1"
STDERR_TAIL_BYTES = 2000
HERE = os.path.dirname(os.path.abspath(__file__))


class Invalid(Exception):
    """The program broke the protocol or the packing rules."""


def generate_instances(spec):
    """Instances drawn from the suite's distribution with a fixed seed (validation phase)."""
    rng = random.Random(spec["seed"])
    capacity = spec["capacity"]
    instances = []
    for _ in range(spec["instances"]):
        if spec["distribution"] == "uniform":
            items = [rng.randint(spec["low"], spec["high"]) for _ in range(spec["items"])]
        elif spec["distribution"] == "weibull":
            items = [
                min(spec["high"], max(spec["low"], int(rng.weibullvariate(spec["scale"], spec["shape"]))))
                for _ in range(spec["items"])
            ]
        else:
            raise ValueError("unknown distribution " + spec["distribution"])
        instances.append((capacity, items))
    return instances


def load_instances(path):
    """The published instances (test phase), in the FunSearch JSON layout."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return [(inst["capacity"], inst["items"]) for _, inst in sorted(data["instances"].items())]


class Candidate:
    """The program as a child process, with stderr drained in the background and a deadline."""

    def __init__(self, program, timeout_s):
        program = os.path.abspath(program)
        self.proc = subprocess.Popen(
            [sys.executable, program],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=os.path.dirname(program),
            text=True,
            bufsize=1,
            # Line by line both ways, wherever the grader runs: without this a candidate's
            # unflushed print sits in its stdout buffer while both sides wait (a timeout on a
            # host without PYTHONUNBUFFERED, an answer in Troupe's images, which set it).
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.timed_out = False
        self.stderr = []
        self.stderr_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self.stderr_thread.start()
        self.timer = threading.Timer(timeout_s, self._expire)
        self.timer.daemon = True
        self.timer.start()

    def _drain_stderr(self):
        for chunk in iter(lambda: self.proc.stderr.read(4096), ""):
            self.stderr.append(chunk)
            # Keep memory bounded: only the tail is ever reported.
            if len(self.stderr) > 64:
                self.stderr = ["".join(self.stderr)[-STDERR_TAIL_BYTES:]]

    def _expire(self):
        self.timed_out = True
        self.proc.kill()

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def receive(self):
        line = self.proc.stdout.readline()
        if line == "":
            raise EOFError()
        return line

    def finish(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            code = self.proc.wait()
        finally:
            self.timer.cancel()
        self.stderr_thread.join(timeout=1)
        return code

    def kill(self):
        self.proc.kill()
        self.timer.cancel()

    def stderr_tail(self):
        return "".join(self.stderr)[-STDERR_TAIL_BYTES:]


def pack(candidate, capacity, items):
    """Runs one instance through the protocol; returns the number of bins the placements used."""
    candidate.send("instance %d" % capacity)
    remaining = []
    for n, item in enumerate(items):
        candidate.send("item %d" % item)
        reply = candidate.receive().strip()
        try:
            index = int(reply)
        except ValueError:
            raise Invalid("item %d: reply %r is not a bin index" % (n, reply[:40]))
        if index == len(remaining):
            remaining.append(capacity)
        elif not 0 <= index < len(remaining):
            raise Invalid("item %d: bin %d does not exist (%d open)" % (n, index, len(remaining)))
        if remaining[index] < item:
            raise Invalid("item %d: size %d does not fit bin %d (room %d)" % (n, item, index, remaining[index]))
        remaining[index] -= item
    candidate.send("end")
    return len(remaining)


def evaluate(program, phase, timeout_s):
    with open(os.path.join(HERE, "suite.json"), encoding="utf-8") as f:
        suite = json.load(f)
    if phase == "validation":
        instances = generate_instances(suite["validation"])
    else:
        instances = load_instances(os.path.join(HERE, suite["test"]["data"]))
    result = {"signature": [], "metrics": {"phase": phase, "instances": len(instances)}}
    candidate = Candidate(program, timeout_s)
    bins = []
    try:
        for capacity, items in instances:
            bins.append(pack(candidate, capacity, items))
    except Invalid as err:
        candidate.kill()
        candidate.finish()
        result.update(status="timeout" if candidate.timed_out else "invalid", score=None)
        result["metrics"]["reason"] = str(err)
        result["stderrTail"] = candidate.stderr_tail()
        return result
    except (EOFError, BrokenPipeError, OSError):
        code = candidate.finish()
        status = "timeout" if candidate.timed_out else "error"
        result.update(status=status, score=None)
        result["metrics"]["reason"] = (
            "deadline of %.1f s passed" % timeout_s
            if status == "timeout"
            else "program ended (exit %s) before placing every item" % code
        )
        result["stderrTail"] = candidate.stderr_tail()
        return result
    code = candidate.finish()
    result["stderrTail"] = candidate.stderr_tail()
    if candidate.timed_out:
        result.update(status="timeout", score=None)
        return result
    if code != 0:
        result.update(status="error", score=None)
        result["metrics"]["reason"] = "program exited with status %d" % code
        return result
    lower = [-(-sum(items) // capacity) for capacity, items in instances]
    score = sum(bins) / len(bins)
    result.update(status="ok", score=score, signature=bins)
    result["metrics"]["l1Bound"] = sum(lower) / len(lower)
    result["metrics"]["excessOverL1Pct"] = 100.0 * (score - result["metrics"]["l1Bound"]) / result["metrics"]["l1Bound"]
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--program", required=True)
    parser.add_argument("--phase", choices=["validation", "test"], required=True)
    parser.add_argument("--timeout-s", type=float, default=60.0)
    args = parser.parse_args()
    started = time.monotonic()
    result = evaluate(args.program, args.phase, args.timeout_s)
    result["evalMs"] = int((time.monotonic() - started) * 1000)
    result["evaluatorVersion"] = EVALUATOR_VERSION
    sys.stdout.write(json.dumps(result, allow_nan=False) + "\n")


if __name__ == "__main__":
    main()
