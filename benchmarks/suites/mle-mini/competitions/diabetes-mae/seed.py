"""Seed program: reads train.csv / test.csv in the working directory, writes submission.csv
(id,target). Tunable: MODEL 0 = ridge regression, 1 = random forest, 2 = gradient boosting."""
import csv

import numpy as np
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
from sklearn.linear_model import Ridge
from sklearn.preprocessing import StandardScaler

MODEL = 0  # troupe:param int[0,2]
ALPHA = 1.0  # troupe:param float[0.001,100] log
TREES = 50  # troupe:param int[10,300]
DEPTH = 3  # troupe:param int[1,8]


def read(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    cols = [c for c in rows[0] if c not in ("id", "target")]
    x = np.array([[float(r[c]) for c in cols] for r in rows])
    y = np.array([float(r["target"]) for r in rows]) if "target" in rows[0] else None
    return [r["id"] for r in rows], x, y


def main():
    _, x, y = read("train.csv")
    ids, xt, _ = read("test.csv")
    scaler = StandardScaler().fit(x)
    if MODEL == 0:
        model = Ridge(alpha=ALPHA)
    elif MODEL == 1:
        model = RandomForestRegressor(n_estimators=TREES, max_depth=DEPTH * 2, random_state=0)
    else:
        model = GradientBoostingRegressor(n_estimators=TREES, max_depth=DEPTH, random_state=0)
    pred = model.fit(scaler.transform(x), y).predict(scaler.transform(xt))
    with open("submission.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id", "target"])
        w.writerows((key, "%.4f" % p) for key, p in zip(ids, pred))


if __name__ == "__main__":
    main()
