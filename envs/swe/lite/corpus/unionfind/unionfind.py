"""Disjoint sets (union-find) with union by size and path compression."""


class DisjointSet:
    """Partitions items into groups; union() joins groups, find() names a group by its root."""

    def __init__(self, items=()):
        self.parent = {}
        self.size = {}
        self.count = 0
        for item in items:
            self.add(item)

    def add(self, item):
        """Put `item` in a group of its own (no-op when already present)."""
        if item in self.parent:
            return
        self.parent[item] = item
        self.size[item] = 1
        self.count += 1

    def find(self, item):
        """The root of the group holding `item`; KeyError for unknown items."""
        if item not in self.parent:
            raise KeyError(item)
        root = item
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[item] != root:
            self.parent[item], item = root, self.parent[item]
        return root

    def union(self, a, b):
        """Join the groups of a and b; True when they were separate."""
        self.add(a)
        self.add(b)
        root_a, root_b = self.find(a), self.find(b)
        if root_a == root_b:
            return False
        if self.size[root_a] < self.size[root_b]:
            root_a, root_b = root_b, root_a
        self.parent[root_b] = root_a
        self.size[root_a] += self.size[root_b]
        self.count -= 1
        return True

    def connected(self, a, b):
        """True when a and b are in the same group."""
        return self.find(a) == self.find(b)

    def group_size(self, item):
        """How many items share `item`'s group."""
        return self.size[self.find(item)]

    def groups(self):
        """Every group as a sorted list, groups ordered by their first item."""
        by_root = {}
        for item in self.parent:
            by_root.setdefault(self.find(item), []).append(item)
        return sorted(sorted(group) for group in by_root.values())


def count_islands(grid):
    """Number of 4-connected regions of "#" cells in a list of equal-length strings."""
    cells = DisjointSet()
    for r, row in enumerate(grid):
        for c, char in enumerate(row):
            if char != "#":
                continue
            cells.add((r, c))
            if r > 0 and grid[r - 1][c] == "#":
                cells.union((r, c), (r - 1, c))
            if c > 0 and row[c - 1] == "#":
                cells.union((r, c), (r, c - 1))
    return cells.count
