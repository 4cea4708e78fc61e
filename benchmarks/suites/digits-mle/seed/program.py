"""digits-mle: train a classifier and write submission.csv (Troupe evolve seed).

MLE-bench style: the working directory holds train.csv (id, pixel0..pixel63, label) and test.csv
(id, pixel0..pixel63, no label); the program must write submission.csv with the header
"id,label" and one row per test id. The evaluator grades the submission; nothing the program
prints counts.

Tunable parameters (troupe:param markers):
    MODEL       0 = logistic regression, 1 = k nearest neighbours, 2 = RBF support vector machine
    C           inverse regularisation strength (models 0 and 2)
    GAMMA       RBF kernel width (model 2), on pixels scaled to [0, 1]
    NEIGHBORS   number of neighbours (model 1)
"""
import csv

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.svm import SVC

MODEL = 0  # troupe:param int[0,2]
C = 1.0  # troupe:param float[0.01,100] log
GAMMA = 0.01  # troupe:param float[0.0001,1] log
NEIGHBORS = 5  # troupe:param int[1,15]


def read(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    ids = [row["id"] for row in rows]
    x = np.array([[float(row["pixel%d" % i]) for i in range(64)] for row in rows]) / 16.0
    y = np.array([int(row["label"]) for row in rows]) if rows and "label" in rows[0] else None
    return ids, x, y


def build():
    if MODEL == 0:
        return LogisticRegression(C=C, max_iter=2000)
    if MODEL == 1:
        return KNeighborsClassifier(n_neighbors=NEIGHBORS)
    return SVC(C=C, gamma=GAMMA)


def main():
    _, x_train, y_train = read("train.csv")
    ids, x_test, _ = read("test.csv")
    model = build().fit(x_train, y_train)
    predictions = model.predict(x_test)
    with open("submission.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id", "label"])
        for i, label in zip(ids, predictions):
            w.writerow([i, int(label)])


if __name__ == "__main__":
    main()
