"""Fixture seed: predicts the majority training label for every test id."""
import csv

THRESHOLD = 0.5  # troupe:param float[0,1]

with open("train.csv", newline="") as f:
    labels = [int(r["label"]) for r in csv.DictReader(f)]
guess = 1 if sum(labels) / len(labels) > THRESHOLD else 0
with open("test.csv", newline="") as f:
    ids = [r["id"] for r in csv.DictReader(f)]
with open("submission.csv", "w", newline="") as f:
    f.write("id,label\n" + "".join("%s,%d\n" % (i, guess) for i in ids))
