#!/usr/bin/env python3
"""Trusted evaluator of circle-packing-26 (Troupe evolve contract).

Usage:
    python3 evaluate.py --program PATH --phase validation|test [--timeout-s S]

The candidate program runs in its own process and must print exactly 26 lines "x y r" (decimal
numbers) on stdout. The evaluator parses the printed text as exact rationals (fractions.Fraction)
and checks, with no tolerance at all:
    every radius r > 0; every circle inside the unit square (r <= x <= 1 - r, r <= y <= 1 - r);
    every pair disjoint: (x1 - x2)^2 + (y1 - y2)^2 >= (r1 + r2)^2.
The score is the sum of the radii (higher is better), recomputed here; anything else the program
prints makes the output invalid. Best known: 2.6358627564.

The problem has no data, so both phases run the same check (the test phase re-runs the selected
program in a fresh process: a program whose output changes between runs is caught there).

Output: exactly one JSON line (see the bin-packing evaluator for the fields). Exit status 0
whenever that line was printed. Standard library only.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from fractions import Fraction

EVALUATOR_VERSION = "circle-packing-exact/1"
CIRCLES = 26
BEST_KNOWN = 2.6358627564
STDERR_TAIL_BYTES = 2000
MAX_OUTPUT_BYTES = 1 << 20


class Invalid(Exception):
    """The printed circles are malformed or break a rule."""


def parse_number(text, line_no):
    try:
        value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise Invalid("line %d: %r is not a decimal number" % (line_no, text[:40]))
    return value


def check(stdout):
    lines = [line for line in stdout.splitlines() if line.strip()]
    if len(lines) != CIRCLES:
        raise Invalid("expected %d lines 'x y r', got %d" % (CIRCLES, len(lines)))
    circles = []
    for n, line in enumerate(lines, 1):
        parts = line.split()
        if len(parts) != 3:
            raise Invalid("line %d: expected 'x y r', got %r" % (n, line[:80]))
        x, y, r = (parse_number(p, n) for p in parts)
        if r <= 0:
            raise Invalid("circle %d: radius %s is not positive" % (n, float(r)))
        if not (r <= x <= 1 - r and r <= y <= 1 - r):
            raise Invalid("circle %d leaves the unit square" % n)
        circles.append((x, y, r))
    for i in range(CIRCLES):
        xi, yi, ri = circles[i]
        for j in range(i + 1, CIRCLES):
            xj, yj, rj = circles[j]
            if (xi - xj) ** 2 + (yi - yj) ** 2 < (ri + rj) ** 2:
                raise Invalid("circles %d and %d overlap" % (i + 1, j + 1))
    total = sum(c[2] for c in circles)
    return float(total), [float(c[2]) for c in sorted(circles, key=lambda c: -c[2])]


def evaluate(program, phase, timeout_s):
    program = os.path.abspath(program)
    metrics = {"phase": phase, "bestKnown": BEST_KNOWN}
    try:
        done = subprocess.run(
            [sys.executable, program],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            cwd=os.path.dirname(program),
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired as err:
        tail = (err.stderr or b"")[-STDERR_TAIL_BYTES:].decode("utf-8", "replace")
        metrics["reason"] = "deadline of %.1f s passed" % timeout_s
        return {"status": "timeout", "score": None, "signature": [], "metrics": metrics, "stderrTail": tail}
    tail = done.stderr[-STDERR_TAIL_BYTES:].decode("utf-8", "replace")
    if done.returncode != 0:
        metrics["reason"] = "program exited with status %d" % done.returncode
        return {"status": "error", "score": None, "signature": [], "metrics": metrics, "stderrTail": tail}
    try:
        if len(done.stdout) > MAX_OUTPUT_BYTES:
            raise Invalid("output is larger than %d bytes" % MAX_OUTPUT_BYTES)
        score, radii = check(done.stdout.decode("utf-8"))
    except (Invalid, UnicodeDecodeError) as err:
        metrics["reason"] = str(err)
        return {"status": "invalid", "score": None, "signature": [], "metrics": metrics, "stderrTail": tail}
    metrics["gapToBestKnown"] = BEST_KNOWN - score
    return {"status": "ok", "score": score, "signature": radii, "metrics": metrics, "stderrTail": tail}


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
