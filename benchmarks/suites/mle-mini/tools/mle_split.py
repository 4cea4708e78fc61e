"""Shared helpers of the mle-mini `prepare.py` steps (standard library + numpy).

write_competition() splits a dataset into the MLE-bench layout:
    <public>/train.csv              id, features..., target column(s)   (what a program trains on)
    <public>/test.csv               id, features...                     (no target)
    <public>/sample_submission.csv  id, target column(s)                (the format to write)
    <private>/answers.csv           id, target column(s)                (the test answers: grader only)
The split is a seeded shuffle, so the files are the same on every run of the same scikit-learn.
"""
import csv
import os

import numpy as np


def _write(path, header, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def _fmt(v):
    if isinstance(v, (int, np.integer)):
        return int(v)
    return float("%.6g" % float(v))


def write_competition(public, private, X, y, *, seed, test_fraction, feature_names, target, sample_value, id_offset=0):
    """Writes the four files. `target` is the answer column name; `sample_value` fills the sample
    submission (a constant prediction in the right format)."""
    n = len(y)
    order = np.random.RandomState(seed).permutation(n)
    n_test = int(round(n * test_fraction))
    test, train = order[:n_test], order[n_test:]
    ids = np.arange(n) + id_offset
    feats = lambda i: [_fmt(v) for v in X[i]]
    _write(os.path.join(public, "train.csv"), ["id"] + feature_names + [target],
           [[int(ids[i])] + feats(i) + [_fmt(y[i])] for i in sorted(train)])
    _write(os.path.join(public, "test.csv"), ["id"] + feature_names, [[int(ids[i])] + feats(i) for i in sorted(test)])
    _write(os.path.join(private, "answers.csv"), ["id", target], [[int(ids[i]), _fmt(y[i])] for i in sorted(test)])
    header, value = (["id"] + list(sample_value.keys()), list(sample_value.values()))
    _write(os.path.join(public, "sample_submission.csv"), header, [[int(ids[i])] + value for i in sorted(test)])
