"""Grader: multi-class log-loss (lower is better) over columns p0..p9; each row is clipped to
[1e-15, 1 - 1e-15] and renormalised, as Kaggle does. Raise ValueError for a malformed row."""
import math

EPS = 1e-15


def grade(submission, answers):
    total = 0.0
    for s, a in zip(submission, answers):
        try:
            probs = [float(s["p%d" % k]) for k in range(10)]
        except ValueError:
            raise ValueError("id %s: a probability is not a number" % s["id"])
        if any(not math.isfinite(p) or p < 0 for p in probs):
            raise ValueError("id %s: probabilities must be finite and >= 0" % s["id"])
        probs = [min(max(p, EPS), 1 - EPS) for p in probs]
        norm = sum(probs)
        total -= math.log(probs[int(a["label"])] / norm)
    return total / len(answers)
