"""Regenerates the digits-mle data files from scikit-learn's bundled copy of the UCI digits.

    python3 tools/make_splits.py   (needs scikit-learn; the troupe-python image has it)

Writes grader/data/train.csv (features and labels: what the program trains on),
grader/data/validation_features.csv and grader/data/validation_labels.csv (the search's
validation phase), and test-data/test_features.csv and test-data/test_labels.csv (the test
phase only; never shipped to a validation-phase evaluation). The split is fixed by SEED.
"""
import csv
import os
import random

from sklearn.datasets import load_digits

SEED = 20240503
TRAIN, VALIDATION = 1000, 397  # the remaining 400 samples are the test split

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FEATURES = ["pixel%d" % i for i in range(64)]


def write(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def main():
    digits = load_digits()
    order = list(range(len(digits.target)))
    random.Random(SEED).shuffle(order)
    splits = {
        "train": order[:TRAIN],
        "validation": order[TRAIN : TRAIN + VALIDATION],
        "test": order[TRAIN + VALIDATION :],
    }

    def features(i):
        return [int(v) for v in digits.data[i]]

    write(
        os.path.join(ROOT, "grader", "data", "train.csv"),
        ["id"] + FEATURES + ["label"],
        [[i] + features(i) + [int(digits.target[i])] for i in splits["train"]],
    )
    for name, folder in (("validation", "grader/data"), ("test", "test-data")):
        ids = splits[name]
        write(os.path.join(ROOT, folder, name + "_features.csv"), ["id"] + FEATURES, [[i] + features(i) for i in ids])
        write(os.path.join(ROOT, folder, name + "_labels.csv"), ["id", "label"], [[i, int(digits.target[i])] for i in ids])


if __name__ == "__main__":
    main()
