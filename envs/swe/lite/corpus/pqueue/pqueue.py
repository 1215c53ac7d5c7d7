"""A binary min-heap priority queue; equal priorities come out in insertion order."""


class PriorityQueue:
    """push(item, priority) / pop() -> item with the smallest priority."""

    def __init__(self):
        self.heap = []
        self.counter = 0

    def __len__(self):
        return len(self.heap)

    def push(self, item, priority):
        """Add `item`; smaller priorities are served first."""
        entry = (priority, self.counter, item)
        self.counter += 1
        self.heap.append(entry)
        self._sift_up(len(self.heap) - 1)

    def peek(self):
        """The next item without removing it; IndexError when empty."""
        if not self.heap:
            raise IndexError("peek from an empty queue")
        return self.heap[0][2]

    def pop(self):
        """Remove and return the item with the smallest priority; IndexError when empty."""
        if not self.heap:
            raise IndexError("pop from an empty queue")
        last = self.heap.pop()
        if not self.heap:
            return last[2]
        top = self.heap[0]
        self.heap[0] = last
        self._sift_down(0)
        return top[2]

    def _sift_up(self, index):
        """Move the entry at `index` up until its parent is smaller."""
        while index > 0:
            parent = (index - 1) // 2
            if self.heap[index] < self.heap[parent]:
                self.heap[index], self.heap[parent] = self.heap[parent], self.heap[index]
                index = parent
            else:
                break

    def _sift_down(self, index):
        """Move the entry at `index` down until both children are larger."""
        size = len(self.heap)
        while True:
            smallest = index
            left = 2 * index + 1
            right = left + 1
            if left < size and self.heap[left] < self.heap[smallest]:
                smallest = left
            if right < size and self.heap[right] < self.heap[smallest]:
                smallest = right
            if smallest == index:
                return
            self.heap[index], self.heap[smallest] = self.heap[smallest], self.heap[index]
            index = smallest


def drain(queue):
    """Pop every item in priority order."""
    items = []
    while len(queue) > 0:
        items.append(queue.pop())
    return items
