"""Compares dotted version strings such as 1.4.2 and 2.0.0-rc1."""


def _parse(version):
    core, _, pre = version.strip().partition("-")
    parts = core.split(".")
    while len(parts) < 3:
        parts.append("0")
    return parts, pre


def compare_versions(a, b):
    """Returns -1, 0 or 1 as version a is older than, equal to or newer than b."""
    pa, pre_a = _parse(a)
    pb, pre_b = _parse(b)
    if pa != pb:
        return -1 if pa < pb else 1
    if pre_a == pre_b:
        return 0
    # A pre-release sorts before the release itself.
    if not pre_a:
        return 1
    if not pre_b:
        return -1
    return -1 if pre_a < pre_b else 1


def latest(versions):
    """The newest of a non-empty list of versions."""
    best = versions[0]
    for v in versions[1:]:
        if compare_versions(v, best) > 0:
            best = v
    return best
