#!/usr/bin/env python3
"""Toy evaluator: runs the program, reads "x y" from its stdout and scores -(x-1)^2-(y+2)^2.

Usage: evaluate.py --program PATH --phase validation|test --timeout-s S [--delay-s D]
--delay-s makes each evaluation take at least D seconds (tests that must interrupt a search).
Prints one JSON line per the Troupe evolve contract.
"""
import argparse
import json
import subprocess
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--program", required=True)
parser.add_argument("--phase", required=True)
parser.add_argument("--timeout-s", type=float, default=10)
parser.add_argument("--delay-s", type=float, default=0)
args = parser.parse_args()
started = time.monotonic()


def emit(status, score=None, reason=None, tail=""):
    if args.delay_s > 0:
        time.sleep(max(0.0, args.delay_s - (time.monotonic() - started)))
    metrics = {"phase": args.phase}
    if reason:
        metrics["reason"] = reason
    print(json.dumps({
        "status": status,
        "score": score,
        "signature": [] if score is None else [score],
        "metrics": metrics,
        "stderrTail": tail,
        "evalMs": int((time.monotonic() - started) * 1000),
        "evaluatorVersion": "toy/1",
    }))


try:
    done = subprocess.run([sys.executable, args.program], capture_output=True, text=True, timeout=args.timeout_s)
except subprocess.TimeoutExpired:
    emit("timeout", reason="deadline passed")
    sys.exit(0)
if done.returncode != 0:
    emit("error", reason="exit %d" % done.returncode, tail=done.stderr[-2000:])
    sys.exit(0)
try:
    x, y = (float(v) for v in done.stdout.split())
except ValueError:
    emit("invalid", reason="expected two numbers")
    sys.exit(0)
score = -((x - 1) ** 2) - (y + 2) ** 2
emit("ok", score - (0.01 if args.phase == "test" else 0.0))
