"""Reads the two fields the baseline sweep needs from a competition's config.yaml (the image has
no YAML library): grader.name and grader.is_lower_better."""


def load(path):
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            key, _, value = line.strip().partition(":")
            if key == "name" and line.startswith("  "):
                out["metric"] = value.strip()
            elif key == "is_lower_better":
                out["is_lower_better"] = value.strip() == "true"
    return out
