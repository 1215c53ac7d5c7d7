import pytest

from ratelimit import SlidingWindow, TokenBucket, simulate


def test_bucket_initial_state():
    bucket = TokenBucket(4, 2, now=3)
    assert (bucket.capacity, bucket.rate, bucket.tokens, bucket.updated) == (4, 2, 4, 3)


def test_bucket_starts_full():
    bucket = TokenBucket(3, 1)
    assert simulate(bucket, [0, 0, 0, 0]) == [True, True, True, False]


def test_bucket_refills_over_time():
    bucket = TokenBucket(2, 1)
    assert simulate(bucket, [0, 0, 0, 1, 1]) == [True, True, False, True, False]


def test_bucket_caps_at_capacity():
    bucket = TokenBucket(2, 10)
    bucket.allow(0)
    bucket.allow(100)
    assert bucket.tokens == 1
    assert bucket.updated == 100


def test_bucket_fractional_rate():
    bucket = TokenBucket(1, 0.5)
    assert simulate(bucket, [0, 1, 2]) == [True, False, True]


def test_bucket_cost():
    bucket = TokenBucket(5, 1)
    assert bucket.allow(0, cost=4) is True
    assert bucket.allow(0, cost=2) is False
    assert bucket.tokens == 1


def test_bucket_cost_equal_to_capacity():
    bucket = TokenBucket(3, 1)
    assert bucket.allow(0, cost=3) is True
    assert bucket.tokens == 0


def test_bucket_rejected_request_keeps_tokens():
    bucket = TokenBucket(4, 1)
    assert simulate(bucket, [0, 0, 0]) == [True, True, True]
    assert bucket.allow(0, cost=2) is False
    assert bucket.tokens == 1


def test_bucket_cost_too_large():
    with pytest.raises(ValueError, match="cost exceeds capacity"):
        TokenBucket(2, 1).allow(0, cost=3)


def test_bucket_time_backwards():
    bucket = TokenBucket(2, 1, now=5)
    with pytest.raises(ValueError, match="time went backwards"):
        bucket.allow(4)


def test_bucket_same_time_is_not_backwards():
    bucket = TokenBucket(1, 1, now=5)
    assert bucket.allow(5) is True


def test_bucket_bad_capacity():
    with pytest.raises(ValueError):
        TokenBucket(0, 1)


def test_bucket_negative_capacity():
    with pytest.raises(ValueError):
        TokenBucket(-3, 2)


def test_bucket_bad_rate():
    with pytest.raises(ValueError, match="must be positive"):
        TokenBucket(1, 0)


def test_bucket_zero_capacity_fast_rate():
    with pytest.raises(ValueError, match="must be positive"):
        TokenBucket(0, 100)


def test_bucket_zero_rate_large_capacity():
    with pytest.raises(ValueError):
        TokenBucket(1000, 0)


def test_bucket_negative_rate():
    with pytest.raises(ValueError):
        TokenBucket(5, -0.5)


def test_wait_time_zero_when_available():
    assert TokenBucket(1, 1).wait_time(0) == 0.0


def test_wait_time():
    bucket = TokenBucket(2, 4)
    bucket.allow(0, cost=2)
    assert bucket.wait_time(0, cost=2) == 0.5


def test_wait_time_after_partial_refill():
    bucket = TokenBucket(4, 2)
    bucket.allow(0, cost=4)
    assert bucket.wait_time(1, cost=3) == 0.5
    assert bucket.tokens == 2


def test_wait_time_exactly_refilled():
    bucket = TokenBucket(3, 0.5, now=10)
    bucket.allow(10, cost=3)
    assert bucket.wait_time(14, cost=2) == 0.0


def test_wait_time_does_not_spend():
    bucket = TokenBucket(8, 1)
    bucket.allow(0, cost=6)
    assert bucket.wait_time(1, cost=5) == 2.0
    assert bucket.wait_time(1, cost=5) == 2.0


def test_wait_time_backwards():
    bucket = TokenBucket(2, 1, now=3)
    with pytest.raises(ValueError):
        bucket.wait_time(2.5)


def test_window_limit():
    assert simulate(SlidingWindow(2, 10), [0, 1, 2]) == [True, True, False]


def test_window_expiry_boundary():
    assert simulate(SlidingWindow(1, 10), [0, 9, 10]) == [True, False, True]


def test_window_rejected_events_do_not_count():
    assert simulate(SlidingWindow(1, 5), [0, 3, 5, 6]) == [True, False, True, False]


def test_window_slides():
    assert simulate(SlidingWindow(3, 4), [0, 1, 2, 3, 4, 5, 6]) == [True, True, True, False, True, True, True]


def test_window_events_recorded():
    window = SlidingWindow(2, 3)
    simulate(window, [1, 2, 3, 4])
    assert window.events == [2, 4]


def test_window_remaining():
    window = SlidingWindow(3, 10)
    window.allow(0)
    assert window.remaining(5) == 2
    assert window.remaining(10) == 3


def test_window_remaining_when_full():
    window = SlidingWindow(2, 5)
    simulate(window, [0, 1])
    assert window.remaining(1) == 0
    assert window.remaining(5) == 1


def test_window_remaining_fresh():
    assert SlidingWindow(7, 1).remaining(100) == 7


def test_window_bad_limit():
    with pytest.raises(ValueError):
        SlidingWindow(0, 1)


def test_window_negative_limit():
    with pytest.raises(ValueError, match="limit must be"):
        SlidingWindow(-2, 5)


def test_window_bad_window():
    with pytest.raises(ValueError):
        SlidingWindow(1, 0)


def test_window_negative_window():
    with pytest.raises(ValueError):
        SlidingWindow(3, -1)


def test_window_small_valid_config():
    window = SlidingWindow(1, 0.5)
    assert (window.limit, window.window, window.events) == (1, 0.5, [])
    assert simulate(window, [0, 0.25, 0.5]) == [True, False, True]
