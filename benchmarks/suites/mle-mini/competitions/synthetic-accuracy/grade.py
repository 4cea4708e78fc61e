"""Grader: accuracy (higher is better). `grade(submission, answers)` gets the rows of both files
(lists of dicts, aligned by id by the harness) and returns the score; raise ValueError for a
malformed submission."""


def grade(submission, answers):
    correct = 0
    for s, a in zip(submission, answers):
        try:
            correct += int(float(s["label"])) == int(a["label"])
        except ValueError:
            raise ValueError("id %s: label %r is not a number" % (s["id"], s["label"][:20]))
    return correct / len(answers)
