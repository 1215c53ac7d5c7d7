"""A fixed-capacity ring buffer (FIFO) that can either reject or overwrite when full."""


class RingBuffer:
    """Holds at most `capacity` items in insertion order, stored in a circular list."""

    def __init__(self, capacity, overwrite=False):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.overwrite = overwrite
        self.slots = [None] * capacity
        self.head = 0
        self.length = 0

    def __len__(self):
        return self.length

    def is_full(self):
        """True when no slot is free."""
        return self.length == self.capacity

    def push(self, item):
        """Append `item`; when full, drop the oldest (overwrite) or raise OverflowError."""
        if self.is_full():
            if not self.overwrite:
                raise OverflowError("buffer is full")
            self.slots[self.head] = item
            self.head = (self.head + 1) % self.capacity
            return
        tail = (self.head + self.length) % self.capacity
        self.slots[tail] = item
        self.length += 1

    def pop(self):
        """Remove and return the oldest item; IndexError when empty."""
        if self.length == 0:
            raise IndexError("pop from an empty buffer")
        item = self.slots[self.head]
        self.slots[self.head] = None
        self.head = (self.head + 1) % self.capacity
        self.length -= 1
        return item

    def peek(self, index=0):
        """The item `index` places from the oldest (negative counts from the newest)."""
        if index < 0:
            index += self.length
        if not 0 <= index < self.length:
            raise IndexError("index out of range")
        return self.slots[(self.head + index) % self.capacity]

    def to_list(self):
        """The items, oldest first."""
        return [self.slots[(self.head + i) % self.capacity] for i in range(self.length)]

    def extend(self, items):
        """Push every item in order."""
        for item in items:
            self.push(item)

    def clear(self):
        """Remove every item."""
        self.slots = [None] * self.capacity
        self.head = 0
        self.length = 0


def moving_average(values, window):
    """The mean of each full window of `window` consecutive values."""
    if window < 1:
        raise ValueError("window must be at least 1")
    buffer = RingBuffer(window, overwrite=True)
    total, result = 0, []
    for value in values:
        if buffer.is_full():
            total -= buffer.peek(0)
        buffer.push(value)
        total += value
        if buffer.is_full():
            result.append(total / window)
    return result
