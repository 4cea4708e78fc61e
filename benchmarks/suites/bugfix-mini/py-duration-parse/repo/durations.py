"""Parses human durations such as 90s, 5m or 1h30m into seconds."""
import re

_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1, "ms": 0.001}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|d|h|m|s)")


def parse_duration(text):
    """Seconds in `text` (int when whole, float otherwise); ValueError when malformed."""
    text = text.strip()
    if not text:
        raise ValueError("empty duration")
    total = 0
    pos = 0
    for match in _PART.finditer(text):
        if match.start() != pos:
            raise ValueError(f"malformed duration: {text!r}")
        total = float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(text):
        raise ValueError(f"malformed duration: {text!r}")
    return int(total) if float(total).is_integer() else total
