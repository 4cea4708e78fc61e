#!/usr/bin/env python3
"""Trusted evaluator of digits-mle (Troupe evolve contract), MLE-bench style.

Usage:
    python3 evaluate.py --program PATH --phase validation|test [--timeout-s S]

The candidate program runs in its own process, in a fresh temporary directory that holds
train.csv (features and labels) and test.csv (the phase's features, no labels); it must write
submission.csv there: header "id,label", exactly one row per test id, labels integers 0..9.
The evaluator validates that file and computes the accuracy against the phase's labels itself
(higher is better); a score the program prints is never read.

Phases:
    validation  data/validation_{features,labels}.csv next to this file (used by the search)
    test        ../test-data/test_{features,labels}.csv, shipped only for the test phase, so
                the test labels are never present while the search runs

Output: exactly one JSON line (status, score, signature = per-class accuracy, metrics,
stderrTail, evalMs, evaluatorVersion). Exit status 0 whenever that line was printed.
Needs only the standard library itself; the program may use numpy and scikit-learn.
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

EVALUATOR_VERSION = "digits-mle/1"
STDERR_TAIL_BYTES = 2000
HERE = os.path.dirname(os.path.abspath(__file__))
CLASSES = 10


class Invalid(Exception):
    """The submission is missing or malformed."""


def phase_files(phase):
    if phase == "validation":
        folder = os.path.join(HERE, "data")
    else:
        folder = os.path.join(os.path.dirname(HERE), "test-data")
    return os.path.join(folder, phase + "_features.csv"), os.path.join(folder, phase + "_labels.csv")


def read_labels(path):
    with open(path, newline="", encoding="utf-8") as f:
        return {row["id"]: int(row["label"]) for row in csv.DictReader(f)}


def read_submission(path, expected_ids):
    if not os.path.isfile(path):
        raise Invalid("submission.csv was not written")
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None or [h.strip() for h in header] != ["id", "label"]:
            raise Invalid("the header must be 'id,label', got %r" % (header,))
        predictions = {}
        for n, row in enumerate(reader, 2):
            if len(row) != 2:
                raise Invalid("line %d: expected 2 fields, got %d" % (n, len(row)))
            key, label = row[0].strip(), row[1].strip()
            if key in predictions:
                raise Invalid("line %d: id %s appears twice" % (n, key))
            if key not in expected_ids:
                raise Invalid("line %d: unknown id %s" % (n, key[:20]))
            try:
                value = int(label)
            except ValueError:
                raise Invalid("line %d: label %r is not an integer" % (n, label[:20]))
            if not 0 <= value < CLASSES:
                raise Invalid("line %d: label %d is not in 0..9" % (n, value))
            predictions[key] = value
    missing = len(expected_ids) - len(predictions)
    if missing:
        raise Invalid("%d test ids have no prediction" % missing)
    return predictions


def evaluate(program, phase, timeout_s):
    program = os.path.abspath(program)
    features, labels_path = phase_files(phase)
    labels = read_labels(labels_path)
    metrics = {"phase": phase, "samples": len(labels)}
    work = tempfile.mkdtemp(prefix="digits-")
    try:
        shutil.copyfile(os.path.join(HERE, "data", "train.csv"), os.path.join(work, "train.csv"))
        shutil.copyfile(features, os.path.join(work, "test.csv"))
        try:
            done = subprocess.run(
                [sys.executable, program],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                cwd=work,
                timeout=timeout_s,
            )
        except subprocess.TimeoutExpired as err:
            metrics["reason"] = "deadline of %.1f s passed" % timeout_s
            tail = (err.stderr or b"")[-STDERR_TAIL_BYTES:].decode("utf-8", "replace")
            return {"status": "timeout", "score": None, "signature": [], "metrics": metrics, "stderrTail": tail}
        tail = done.stderr[-STDERR_TAIL_BYTES:].decode("utf-8", "replace")
        if done.returncode != 0:
            metrics["reason"] = "program exited with status %d" % done.returncode
            return {"status": "error", "score": None, "signature": [], "metrics": metrics, "stderrTail": tail}
        try:
            predictions = read_submission(os.path.join(work, "submission.csv"), set(labels))
        except (Invalid, UnicodeDecodeError, csv.Error) as err:
            metrics["reason"] = str(err)
            return {"status": "invalid", "score": None, "signature": [], "metrics": metrics, "stderrTail": tail}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    correct = sum(1 for key, label in labels.items() if predictions[key] == label)
    per_class = []
    for c in range(CLASSES):
        keys = [k for k, label in labels.items() if label == c]
        per_class.append(sum(1 for k in keys if predictions[k] == c) / len(keys) if keys else 0.0)
    return {
        "status": "ok",
        "score": correct / len(labels),
        "signature": per_class,
        "metrics": metrics,
        "stderrTail": tail,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--program", required=True)
    parser.add_argument("--phase", choices=["validation", "test"], required=True)
    parser.add_argument("--timeout-s", type=float, default=120.0)
    args = parser.parse_args()
    started = time.monotonic()
    result = evaluate(args.program, args.phase, args.timeout_s)
    result["evalMs"] = int((time.monotonic() - started) * 1000)
    result["evaluatorVersion"] = EVALUATOR_VERSION
    sys.stdout.write(json.dumps(result, allow_nan=False) + "\n")


if __name__ == "__main__":
    main()
