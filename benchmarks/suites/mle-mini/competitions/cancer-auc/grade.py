"""Grader: ROC AUC of column `probability` (higher is better), ties counted half
(Mann-Whitney). Raise ValueError for a malformed row."""
import math


def grade(submission, answers):
    scored = []
    for s, a in zip(submission, answers):
        try:
            p = float(s["probability"])
        except ValueError:
            raise ValueError("id %s: probability %r is not a number" % (s["id"], s["probability"][:20]))
        if not math.isfinite(p):
            raise ValueError("id %s: probability must be finite" % s["id"])
        scored.append((p, int(a["label"])))
    scored.sort()
    ranks = [0.0] * len(scored)
    i = 0
    while i < len(scored):
        j = i
        while j + 1 < len(scored) and scored[j + 1][0] == scored[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2.0 + 1
        i = j + 1
    pos = sum(1 for _, y in scored if y == 1)
    neg = len(scored) - pos
    rank_sum = sum(r for r, (_, y) in zip(ranks, scored) if y == 1)
    return (rank_sum - pos * (pos + 1) / 2.0) / (pos * neg)
