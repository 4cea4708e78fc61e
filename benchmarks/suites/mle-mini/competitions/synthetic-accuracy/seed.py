"""Seed program: reads train.csv / test.csv in the working directory, writes submission.csv
(id,label). Tunable: MODEL 0 = logistic regression, 1 = random forest, 2 = RBF SVM."""
import csv

import numpy as np
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

MODEL = 0  # troupe:param int[0,2]
C = 1.0  # troupe:param float[0.01,100] log
TREES = 100  # troupe:param int[10,300]


def read(path, target):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    cols = [c for c in rows[0] if c not in ("id", target)]
    x = np.array([[float(r[c]) for c in cols] for r in rows])
    y = np.array([int(r[target]) for r in rows]) if target in rows[0] else None
    return [r["id"] for r in rows], x, y


def main():
    _, x, y = read("train.csv", "label")
    ids, xt, _ = read("test.csv", "label")
    scaler = StandardScaler().fit(x)
    if MODEL == 0:
        model = LogisticRegression(C=C, max_iter=2000)
    elif MODEL == 1:
        model = RandomForestClassifier(n_estimators=TREES, random_state=0)
    else:
        model = SVC(C=C)
    pred = model.fit(scaler.transform(x), y).predict(scaler.transform(xt))
    with open("submission.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id", "label"])
        w.writerows(zip(ids, (int(p) for p in pred)))


if __name__ == "__main__":
    main()
