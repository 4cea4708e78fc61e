"""Prepare step (MLE-bench `prepare(raw, public, private)`; raw = the bundled Wisconsin breast cancer data)."""
from sklearn.datasets import load_breast_cancer

from mle_split import write_competition


def prepare(public, private):
    d = load_breast_cancer()
    write_competition(public, private, d.data, d.target, seed=103, test_fraction=0.3,
                      feature_names=["f%d" % i for i in range(d.data.shape[1])], target="label",
                      sample_value={"probability": 0.5})
