"""Seed program: reads train.csv / test.csv in the working directory, writes submission.csv
(id,probability of label 1). Tunable: MODEL 0 = logistic regression, 1 = random forest,
2 = gradient boosting."""
import csv

import numpy as np
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

MODEL = 1  # troupe:param int[0,2]
C = 1.0  # troupe:param float[0.001,100] log
TREES = 50  # troupe:param int[10,300]


def read(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    cols = [c for c in rows[0] if c not in ("id", "label")]
    x = np.array([[float(r[c]) for c in cols] for r in rows])
    y = np.array([int(r["label"]) for r in rows]) if "label" in rows[0] else None
    return [r["id"] for r in rows], x, y


def main():
    _, x, y = read("train.csv")
    ids, xt, _ = read("test.csv")
    scaler = StandardScaler().fit(x)
    if MODEL == 0:
        model = LogisticRegression(C=C, max_iter=5000)
    elif MODEL == 1:
        model = RandomForestClassifier(n_estimators=TREES, random_state=0)
    else:
        model = GradientBoostingClassifier(n_estimators=TREES, random_state=0)
    proba = model.fit(scaler.transform(x), y).predict_proba(scaler.transform(xt))[:, 1]
    with open("submission.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id", "probability"])
        w.writerows((key, "%.6f" % p) for key, p in zip(ids, proba))


if __name__ == "__main__":
    main()
