import pytest

from ratelimit import SlidingWindow, TokenBucket, simulate


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


def test_bucket_fractional_rate():
    bucket = TokenBucket(1, 0.5)
    assert simulate(bucket, [0, 1, 2]) == [True, False, True]


def test_bucket_cost():
    bucket = TokenBucket(5, 1)
    assert bucket.allow(0, cost=4) and not bucket.allow(0, cost=2)


def test_bucket_cost_too_large():
    with pytest.raises(ValueError):
        TokenBucket(2, 1).allow(0, cost=3)


def test_bucket_time_backwards():
    bucket = TokenBucket(2, 1, now=5)
    with pytest.raises(ValueError):
        bucket.allow(4)


def test_bucket_bad_config():
    with pytest.raises(ValueError):
        TokenBucket(0, 1)


def test_wait_time_zero_when_available():
    assert TokenBucket(1, 1).wait_time(0) == 0.0


def test_wait_time():
    bucket = TokenBucket(2, 4)
    bucket.allow(0, cost=2)
    assert bucket.wait_time(0, cost=2) == 0.5


def test_window_limit():
    assert simulate(SlidingWindow(2, 10), [0, 1, 2]) == [True, True, False]


def test_window_expiry_boundary():
    assert simulate(SlidingWindow(1, 10), [0, 9, 10]) == [True, False, True]


def test_window_rejected_events_do_not_count():
    assert simulate(SlidingWindow(1, 5), [0, 3, 5, 6]) == [True, False, True, False]


def test_window_remaining():
    window = SlidingWindow(3, 10)
    window.allow(0)
    assert window.remaining(5) == 2 and window.remaining(10) == 3


def test_window_bad_config():
    with pytest.raises(ValueError):
        SlidingWindow(0, 1)


def test_window_bad_window():
    with pytest.raises(ValueError):
        SlidingWindow(1, 0)
