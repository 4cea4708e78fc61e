"""Prepare step (MLE-bench `prepare(raw, public, private)`; raw = the bundled diabetes data)."""
from sklearn.datasets import load_diabetes

from mle_split import write_competition


def prepare(public, private):
    d = load_diabetes()
    write_competition(public, private, d.data, d.target, seed=105, test_fraction=0.3,
                      feature_names=list(d.feature_names), target="target", sample_value={"target": 150.0})
