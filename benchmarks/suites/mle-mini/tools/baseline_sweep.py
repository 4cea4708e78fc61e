"""The baseline sweep behind the medal thresholds of every mle-mini competition.

For each competition, fits a fixed set of scikit-learn models on prepared/public/train.csv,
predicts prepared/public/test.csv, grades the predictions with the competition's own grade.py
against prepared/private/answers.csv, and prints one JSON line per competition: every model's
score and the thresholds derived from them (best = gold, second = silver, third = bronze,
median of the sweep = median). Run inside the troupe-python image (see README.md):

    docker run --rm -v "$PWD/benchmarks/suites/mle-mini:/s" -w /s troupe-python:latest \
        python3 tools/baseline_sweep.py
"""
import csv
import importlib.util
import json
import os
import statistics

import numpy as np
import yaml_lite
from sklearn.dummy import DummyClassifier, DummyRegressor
from sklearn.ensemble import (GradientBoostingClassifier, GradientBoostingRegressor, RandomForestClassifier,
                              RandomForestRegressor)
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, SVR

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def classifiers():
    s = StandardScaler
    return {
        "dummy (prior)": DummyClassifier(strategy="prior"),
        "gaussian naive Bayes": GaussianNB(),
        "k-NN (k=5)": make_pipeline(s(), KNeighborsClassifier(5)),
        "logistic regression (C=1)": make_pipeline(s(), LogisticRegression(max_iter=5000)),
        "random forest (100)": RandomForestClassifier(100, random_state=0),
        "gradient boosting (100)": GradientBoostingClassifier(random_state=0),
        "RBF SVM (C=1)": make_pipeline(s(), SVC(probability=True, random_state=0)),
    }


def regressors():
    s = StandardScaler
    return {
        "dummy (mean)": DummyRegressor(),
        "k-NN (k=5)": make_pipeline(s(), KNeighborsRegressor(5)),
        "ridge (alpha=1)": make_pipeline(s(), Ridge()),
        "random forest (100)": RandomForestRegressor(100, random_state=0),
        "gradient boosting (100)": GradientBoostingRegressor(random_state=0),
        "RBF SVR (C=10)": make_pipeline(s(), SVR(C=10)),
    }


def sweep(folder):
    cfg = yaml_lite.load(os.path.join(folder, "config.yaml"))
    pub = os.path.join(folder, "prepared", "public")
    train, test = rows(os.path.join(pub, "train.csv")), rows(os.path.join(pub, "test.csv"))
    answers = rows(os.path.join(folder, "prepared", "private", "answers.csv"))
    sample = rows(os.path.join(pub, "sample_submission.csv"))
    columns = list(sample[0].keys())
    target = [c for c in answers[0] if c != "id"][0]
    feats = [c for c in test[0] if c != "id"]
    x = np.array([[float(r[c]) for c in feats] for r in train])
    xt = np.array([[float(r[c]) for c in feats] for r in test])
    spec = importlib.util.spec_from_file_location("grade", os.path.join(folder, "grade.py"))
    grade = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(grade)
    regression = target == "target"
    y = np.array([float(r[target]) if regression else int(r[target]) for r in train])
    scores = {}
    for name, model in (regressors() if regression else classifiers()).items():
        model.fit(x, y)
        if columns[1:] == [target]:
            pred = model.predict(xt)
            sub = [{"id": r["id"], target: str(p)} for r, p in zip(test, pred)]
        elif columns[1:] == ["probability"]:
            pred = model.predict_proba(xt)[:, 1]
            sub = [{"id": r["id"], "probability": str(p)} for r, p in zip(test, pred)]
        else:
            proba = model.predict_proba(xt)
            sub = [dict([("id", r["id"])] + [(c, str(p)) for c, p in zip(columns[1:], row)]) for r, row in zip(test, proba)]
        scores[name] = round(grade.grade(sub, answers), 4)
    lower = cfg["is_lower_better"]
    ranked = sorted(scores.values(), reverse=not lower)
    thresholds = {"gold": ranked[0], "silver": ranked[1], "bronze": ranked[2],
                  "median": round(statistics.median(ranked), 4)}
    return {"competition": os.path.basename(folder), "metric": cfg["metric"], "lower_is_better": lower,
            "scores": scores, "thresholds": thresholds}


def main():
    comps = os.path.join(ROOT, "competitions")
    for name in sorted(os.listdir(comps)):
        print(json.dumps(sweep(os.path.join(comps, name))), flush=True)


if __name__ == "__main__":
    main()
