"""Prepare step (MLE-bench `prepare(raw, public, private)`; the raw data are generated here)."""
from sklearn.datasets import make_classification

from mle_split import write_competition


def prepare(public, private):
    X, y = make_classification(n_samples=1500, n_features=20, n_informative=6, n_redundant=4,
                               n_classes=3, flip_y=0.05, class_sep=0.8, random_state=11)
    write_competition(public, private, X, y, seed=101, test_fraction=0.3,
                      feature_names=["f%d" % i for i in range(20)], target="label", sample_value={"label": 0})
