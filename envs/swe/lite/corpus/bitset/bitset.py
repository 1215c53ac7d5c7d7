"""A set of small non-negative integers stored as the bits of one int."""


class BitSet:
    """Supports add/remove/membership, set algebra and iteration in ascending order."""

    def __init__(self, items=()):
        self.bits = 0
        for item in items:
            self.add(item)

    @staticmethod
    def _check(item):
        if not isinstance(item, int) or item < 0:
            raise ValueError(f"items must be non-negative ints, got {item!r}")

    def add(self, item):
        """Insert `item`."""
        self._check(item)
        self.bits |= 1 << item

    def remove(self, item):
        """Delete `item`; KeyError when absent."""
        if item not in self:
            raise KeyError(item)
        self.bits &= ~(1 << item)

    def discard(self, item):
        """Delete `item` if present."""
        if item in self:
            self.remove(item)

    def __contains__(self, item):
        return isinstance(item, int) and item >= 0 and (self.bits >> item) & 1 == 1

    def __len__(self):
        count, bits = 0, self.bits
        while bits:
            bits &= bits - 1
            count += 1
        return count

    def __iter__(self):
        bits, index = self.bits, 0
        while bits:
            if bits & 1:
                yield index
            bits >>= 1
            index += 1

    def __eq__(self, other):
        return isinstance(other, BitSet) and self.bits == other.bits

    def union(self, other):
        """Items in either set."""
        result = BitSet()
        result.bits = self.bits | other.bits
        return result

    def intersection(self, other):
        """Items in both sets."""
        result = BitSet()
        result.bits = self.bits & other.bits
        return result

    def difference(self, other):
        """Items in this set but not in `other`."""
        result = BitSet()
        result.bits = self.bits & ~other.bits
        return result

    def min(self):
        """The smallest item; ValueError when empty."""
        if not self.bits:
            raise ValueError("empty set")
        return (self.bits & -self.bits).bit_length() - 1

    def max(self):
        """The largest item; ValueError when empty."""
        if not self.bits:
            raise ValueError("empty set")
        return self.bits.bit_length() - 1

    def to_ranges(self):
        """Runs of consecutive items as (first, last) pairs."""
        ranges = []
        for item in self:
            if ranges and ranges[-1][1] == item - 1:
                ranges[-1] = (ranges[-1][0], item)
            else:
                ranges.append((item, item))
        return ranges
