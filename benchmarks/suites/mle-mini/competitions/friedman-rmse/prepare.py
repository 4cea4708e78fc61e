"""Prepare step (MLE-bench `prepare(raw, public, private)`; raw = scikit-learn's Friedman #1 generator)."""
from sklearn.datasets import make_friedman1

from mle_split import write_competition


def prepare(public, private):
    X, y = make_friedman1(n_samples=1200, n_features=10, noise=1.0, random_state=14)
    write_competition(public, private, X, y, seed=104, test_fraction=0.3,
                      feature_names=["x%d" % i for i in range(10)], target="target", sample_value={"target": 14.0})
