"""A tiny CSV row splitter."""
from .parser import split_row, join_row

__all__ = ["split_row", "join_row"]
