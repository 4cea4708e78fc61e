"""A least-recently-used cache with hit and miss counters."""
from collections import OrderedDict


class LRUCache:
    """Keeps at most `maxsize` entries, evicting the least recently used one."""

    def __init__(self, maxsize):
        if maxsize < 1:
            raise ValueError("maxsize must be >= 1")
        self.maxsize = maxsize
        self.hits = 0
        self.misses = 0
        self._data = OrderedDict()

    def get(self, key, default=None):
        if key in self._data:
            self.hits += 1
            return self._data[key]
        self.misses += 1
        return default

    def put(self, key, value):
        if len(self._data) >= self.maxsize:
            self._data.popitem(last=False)
        self._data[key] = value

    def __len__(self):
        return len(self._data)

    def __contains__(self, key):
        return key in self._data
