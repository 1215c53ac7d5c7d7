"""A least-recently-used cache with a fixed capacity and hit/miss counters."""


class LRUCache:
    """Maps keys to values, evicting the least recently used key past `capacity`."""

    def __init__(self, capacity):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.order = []
        self.data = {}
        self.hits = 0
        self.misses = 0

    def _touch(self, key):
        """Mark `key` as the most recently used."""
        if key in self.order:
            self.order.remove(key)
        self.order.append(key)

    def get(self, key, default=None):
        """The value for `key` (marking it used), or `default`."""
        if key not in self.data:
            self.misses += 1
            return default
        self.hits += 1
        self._touch(key)
        return self.data[key]

    def put(self, key, value):
        """Insert or update `key`; evicts the oldest key when full. Returns the evicted key or None."""
        evicted = None
        if key not in self.data and len(self.data) >= self.capacity:
            evicted = self.order.pop(0)
            del self.data[evicted]
        self.data[key] = value
        self._touch(key)
        return evicted

    def pop(self, key):
        """Remove `key` and return its value; KeyError if absent."""
        if key not in self.data:
            raise KeyError(key)
        self.order.remove(key)
        return self.data.pop(key)

    def keys(self):
        """Keys from least to most recently used."""
        return list(self.order)

    def __len__(self):
        return len(self.data)
