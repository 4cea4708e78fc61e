"""Grader: root mean squared error of column `target` (lower is better)."""
import math


def grade(submission, answers):
    total = 0.0
    for s, a in zip(submission, answers):
        try:
            p = float(s["target"])
        except ValueError:
            raise ValueError("id %s: target %r is not a number" % (s["id"], s["target"][:20]))
        if not math.isfinite(p):
            raise ValueError("id %s: target must be finite" % s["id"])
        total += (p - float(a["target"])) ** 2
    return math.sqrt(total / len(answers))
