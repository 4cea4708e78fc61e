"""Prepare step of the fixture competition (standard library only): 60 train rows, 30 test rows,
two noise features, labels 0/1 from a hash of the id, so nothing but the answers predicts them."""
import csv
import hashlib
import os


def label(i):
    return hashlib.sha256(b"fixture-%d" % i).digest()[0] % 2


def prepare(public, private):
    os.makedirs(public, exist_ok=True)
    os.makedirs(private, exist_ok=True)

    def write(path, header, rows):
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(header)
            w.writerows(rows)

    feats = lambda i: [(i * 37) % 11, (i * 53) % 7]
    write(os.path.join(public, "train.csv"), ["id", "a", "b", "label"], [[i] + feats(i) + [label(i)] for i in range(60)])
    test = range(1000, 1030)
    write(os.path.join(public, "test.csv"), ["id", "a", "b"], [[i] + feats(i) for i in test])
    write(os.path.join(public, "sample_submission.csv"), ["id", "label"], [[i, 0] for i in test])
    write(os.path.join(private, "answers.csv"), ["id", "label"], [[i, label(i)] for i in test])


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    prepare(os.path.join(here, "prepared", "public"), os.path.join(here, "prepared", "private"))
