"""Fixture grader: accuracy (higher is better)."""


def grade(submission, answers):
    return sum(1 for s, a in zip(submission, answers) if s["label"] == a["label"]) / len(answers)
