"""A prefix tree of words with counts: insert, lookup, prefix queries, removal, autocomplete."""


class Trie:
    """Stores words; each node is a dict of children plus an end-of-word counter."""

    def __init__(self, words=()):
        self.root = {"children": {}, "end": 0, "passing": 0}
        self.size = 0
        for word in words:
            self.insert(word)

    def insert(self, word):
        """Add one occurrence of `word` (the empty word is not allowed)."""
        if not word:
            raise ValueError("cannot insert an empty word")
        node = self.root
        node["passing"] += 1
        for char in word:
            node = node["children"].setdefault(char, {"children": {}, "end": 0, "passing": 0})
            node["passing"] += 1
        node["end"] += 1
        self.size += 1

    def _node(self, prefix):
        node = self.root
        for char in prefix:
            node = node["children"].get(char)
            if node is None:
                return None
        return node

    def count(self, word):
        """How many times `word` was inserted."""
        node = self._node(word)
        return node["end"] if node else 0

    def __contains__(self, word):
        return self.count(word) > 0

    def count_prefix(self, prefix):
        """How many inserted words (with repetition) start with `prefix`."""
        node = self._node(prefix)
        return node["passing"] if node else 0

    def remove(self, word):
        """Remove one occurrence of `word`; KeyError when absent."""
        if word not in self:
            raise KeyError(word)
        node = self.root
        node["passing"] -= 1
        for char in word:
            child = node["children"][char]
            child["passing"] -= 1
            if child["passing"] == 0:
                del node["children"][char]
                break
            node = child
        else:
            node["end"] -= 1
        self.size -= 1

    def complete(self, prefix, limit=10):
        """Up to `limit` distinct words starting with `prefix`, in alphabetical order."""
        start = self._node(prefix)
        if start is None:
            return []
        found = []
        stack = [(prefix, start)]
        while stack and len(found) < limit:
            text, node = stack.pop()
            if node["end"] > 0:
                found.append(text)
            for char in sorted(node["children"], reverse=True):
                stack.append((text + char, node["children"][char]))
        return found

    def longest_common_prefix(self):
        """The longest prefix shared by every stored word ("" when empty)."""
        node, prefix = self.root, ""
        while len(node["children"]) == 1 and node["end"] == 0:
            char, node = next(iter(node["children"].items()))
            prefix += char
        return prefix if self.size else ""
