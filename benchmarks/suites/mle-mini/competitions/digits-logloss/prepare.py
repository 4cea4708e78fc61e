"""Prepare step (MLE-bench `prepare(raw, public, private)`; raw = scikit-learn's bundled digits)."""
from sklearn.datasets import load_digits

from mle_split import write_competition


def prepare(public, private):
    d = load_digits()
    write_competition(public, private, d.data.astype(int), d.target, seed=102, test_fraction=0.3,
                      feature_names=["pixel%d" % i for i in range(64)], target="label",
                      sample_value={"p%d" % k: 0.1 for k in range(10)})
