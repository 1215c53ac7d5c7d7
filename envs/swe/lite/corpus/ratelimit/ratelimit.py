"""Rate limiters driven by an explicit clock (seconds as numbers): a token bucket and a sliding window."""


class TokenBucket:
    """Holds up to `capacity` tokens, refilled at `rate` tokens per second; each request spends tokens."""

    def __init__(self, capacity, rate, now=0.0):
        if capacity <= 0 or rate <= 0:
            raise ValueError("capacity and rate must be positive")
        self.capacity = capacity
        self.rate = rate
        self.tokens = capacity
        self.updated = now

    def _refill(self, now):
        if now < self.updated:
            raise ValueError("time went backwards")
        elapsed = now - self.updated
        self.tokens = min(self.capacity, self.tokens + elapsed * self.rate)
        self.updated = now

    def allow(self, now, cost=1):
        """Spend `cost` tokens at time `now` if available; True when the request may proceed."""
        if cost > self.capacity:
            raise ValueError("cost exceeds capacity")
        self._refill(now)
        if self.tokens >= cost:
            self.tokens -= cost
            return True
        return False

    def wait_time(self, now, cost=1):
        """Seconds until `cost` tokens are available (0 when they are now)."""
        self._refill(now)
        missing = cost - self.tokens
        if missing <= 0:
            return 0.0
        return missing / self.rate


class SlidingWindow:
    """Allows at most `limit` events in any window of `window` seconds (events at t - window expire)."""

    def __init__(self, limit, window):
        if limit < 1 or window <= 0:
            raise ValueError("limit must be >= 1 and window > 0")
        self.limit = limit
        self.window = window
        self.events = []

    def _expire(self, now):
        """Drop the events that left the window; returns the live ones."""
        while self.events and self.events[0] <= now - self.window:
            self.events.pop(0)
        return self.events

    def allow(self, now):
        """Record an event at `now` if under the limit; True when allowed."""
        live = self._expire(now)
        if len(live) >= self.limit:
            return False
        live.append(now)
        return True

    def remaining(self, now):
        """How many more events the window accepts at `now`."""
        return self.limit - len(self._expire(now))


def simulate(limiter, times):
    """Which of the request times (ascending) a limiter allows, as a list of bools."""
    return [limiter.allow(t) for t in times]
