"""Seed program: reads train.csv / test.csv in the working directory, writes submission.csv
(id,p0..p9: class probabilities). Tunable: MODEL 0 = logistic regression, 1 = k-NN,
2 = RBF SVM with Platt probabilities."""
import csv

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.svm import SVC

MODEL = 0  # troupe:param int[0,2]
C = 1.0  # troupe:param float[0.01,100] log
NEIGHBORS = 5  # troupe:param int[1,30]


def read(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    x = np.array([[float(r["pixel%d" % i]) for i in range(64)] for r in rows]) / 16.0
    y = np.array([int(r["label"]) for r in rows]) if "label" in rows[0] else None
    return [r["id"] for r in rows], x, y


def main():
    _, x, y = read("train.csv")
    ids, xt, _ = read("test.csv")
    if MODEL == 0:
        model = LogisticRegression(C=C, max_iter=2000)
    elif MODEL == 1:
        model = KNeighborsClassifier(n_neighbors=NEIGHBORS)
    else:
        model = SVC(C=C, gamma="scale", probability=True, random_state=0)
    proba = model.fit(x, y).predict_proba(xt)
    with open("submission.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id"] + ["p%d" % k for k in range(10)])
        for key, row in zip(ids, proba):
            w.writerow([key] + ["%.6f" % p for p in row])


if __name__ == "__main__":
    main()
