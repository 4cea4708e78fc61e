"""A broken evaluator: it crashes before printing its result line, on every candidate."""
import sys


def score_of(program_path):
    total_bins = 0
    return 1 / total_bins  # the author's bug: ZeroDivisionError


print(score_of(sys.argv[-1]))
