"""The paired statistics of k-sample evaluations (agentrl.evaluation): each test checks a value worked out by
hand (or by an independent brute force in the test), so a wrong formula fails. Guards the evaluation of issue
54, whose first design (one greedy episode per task, a sign test) could only see gains of about 10 points."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from agentrl.evaluation import (
    compare_paired,
    detectable_effect,
    held_out_means,
    paired_t_interval,
    pilot_diff_sd,
    sign_flip_test,
    sign_test,
    t_critical,
    wilson,
)


def brute_force_p(diffs: list[float]) -> float:
    """The sign-flip p over every sign pattern, written out with itertools (no shortcut shared with the code)."""
    observed = abs(sum(diffs))
    patterns = list(itertools.product((1, -1), repeat=len(diffs)))
    return sum(abs(sum(s * x for s, x in zip(signs, diffs, strict=True))) >= observed - 1e-12 for signs in patterns) / len(patterns)


@pytest.mark.parametrize(("diffs", "p"), [
    ([1, 1, -0.5], 4 / 8),  # |sums| of ±1 ±1 ±0.5: 2.5, 1.5, 0.5, 0.5, 0.5, 0.5, 1.5, 2.5; four reach 1.5
    ([1, 1, 1, 1], 2 / 16),  # only all-plus and all-minus reach 4
    ([1, 1, 1, 1, 0, 0], 2 / 16),  # zeros never move the sum: the same test
    ([0.25, 0.5, 1.0], 2 / 8),  # the 8 sums are distinct in size; only ±1.75 reach 1.75
])
def test_exact_sign_flip_p_matches_a_hand_count(diffs, p):
    assert sign_flip_test(diffs) == pytest.approx(p)


def test_no_difference_gives_p_one():
    assert sign_flip_test([0.0] * 12) == 1.0
    assert sign_flip_test([]) == 1.0
    assert sign_flip_test([0.0] * 40, exact_max=0) == 1.0


def test_the_test_is_two_sided_and_symmetric():
    rng = random.Random(3)
    d = [rng.choice([-1, -0.5, 0, 0.25, 0.5, 1]) for _ in range(12)]
    assert sign_flip_test(d) == sign_flip_test([-x for x in d])
    long = [rng.choice([-1, -0.5, 0, 0.25, 0.5, 1]) for _ in range(60)]
    assert sign_flip_test(long) == sign_flip_test([-x for x in long])  # the Monte Carlo path too


def test_monte_carlo_agrees_with_exact_enumeration_on_14_tasks():
    d = [0.5, 0.25, -0.25, 1.0, 0.75, -0.5, 0.25, 0.5, -1.0, 0.25, 0.5, 0.0, 0.75, -0.25]
    exact = brute_force_p(d)
    assert sign_flip_test(d) == pytest.approx(exact)  # 13 nonzero: the exact path
    mc = sign_flip_test(d, exact_max=0, draws=20_000, seed=1)
    assert abs(mc - exact) < 0.015, (mc, exact)  # standard error of 20000 draws ≤ 0.0036
    assert 0.05 < exact < 0.95  # a p where the agreement means something


def test_monte_carlo_p_is_never_zero():
    # 2 of 2^30 patterns reach 30: no draw hits, and the +1 correction gives 1 / (draws + 1)
    assert sign_flip_test([1.0] * 30, draws=20_000) == pytest.approx(1 / 20_001)


def test_sign_test_counts_rises_and_falls_of_task_means():
    gained, lost, p = sign_test([0.5, 0.25, -0.5, 0.0, 1.0, 1.0])
    assert (gained, lost) == (4, 1)
    assert p == pytest.approx(2 * (1 + 5) / 2**5)  # n = 5 untied, k = 1
    assert sign_test([0.0, 0.0]) == (0, 0, 1.0)


def test_cluster_test_equals_task_test_when_every_cluster_has_one_task():
    before = {f"t{i}": v for i, v in enumerate([0.0, 0.25, 0.5, 1.0, 0.0, 0.75, 0.5])}
    after = {f"t{i}": v for i, v in enumerate([0.5, 0.25, 1.0, 0.75, 0.5, 1.0, 0.25])}
    out = compare_paired(before, after, clusters={t: t for t in before})
    assert out["clusters"] == 7 and out["p_clustered"] == out["p_permutation"]


def test_tasks_of_one_module_move_together_in_the_cluster_test():
    # six tasks gained, three in each of two modules: by task p = 2/2^6; by module the sums (3, 3) give 2/2^2
    before = {f"{m}-{i}": 0.0 for m in "ab" for i in range(3)}
    after = dict.fromkeys(before, 1.0)
    out = compare_paired(before, after, clusters={t: t.split("-")[0] for t in before})
    assert out["p_permutation"] == pytest.approx(2 / 64)
    assert (out["clusters"], out["p_clustered"]) == (2, pytest.approx(0.5))
    assert (out["gained"], out["lost"], out["tasks"], out["mean_diff"]) == (6, 0, 6, 1.0)


def test_compare_pairs_only_tasks_both_sides_scored():
    out = compare_paired({"a": 0.0, "b": 0.5, "c": 1.0}, {"b": 1.0, "c": 0.5, "d": 1.0})
    assert out["tasks"] == 2 and out["mean_diff"] == pytest.approx(0.0)
    assert (out["gained"], out["lost"]) == (1, 1) and "p_clustered" not in out


@pytest.mark.parametrize(("df", "t"), [(1, 12.706), (2, 4.303), (4, 2.776), (10, 2.228), (30, 2.042), (120, 1.980)])
def test_t_critical_matches_the_printed_table(df, t):
    assert t_critical(df) == pytest.approx(t, abs=1e-3)


def test_paired_t_interval_by_hand():
    # mean 0.3, sd sqrt(0.1 / 4) = 0.158114, se 0.0707107, t_{0.975, 4} = 2.7764 (table): half-width 0.196324
    mean, low, high = paired_t_interval([0.1, 0.2, 0.3, 0.4, 0.5])
    assert mean == pytest.approx(0.3)
    assert (low, high) == (pytest.approx(0.103676, abs=1e-5), pytest.approx(0.496324, abs=1e-5))
    assert paired_t_interval([0.5]) == (0.5, -1.0, 1.0)  # no spread to estimate from one task
    assert paired_t_interval([1.0, 0.9])[2] == 1.0  # clipped where differences of rates end


def test_detectable_effect_by_hand():
    # z_{0.975} = 1.959964, z_{0.8} = 0.841621: 2.801585 × 0.3 / √100
    assert detectable_effect(0.3, 100) == pytest.approx(0.0840476, abs=1e-6)
    assert detectable_effect(0.3, 100, power=0.5) == pytest.approx(1.959964 * 0.03, abs=1e-6)
    assert detectable_effect(0.3, 400) == pytest.approx(detectable_effect(0.3, 100) / 2)


def test_detectable_effect_of_the_one_greedy_episode_design_is_about_ten_points():
    # issue 54: 151 tasks, one greedy episode each, discordance q = 0.19. Near no effect the per-task difference
    # is ±1 on a share q of tasks and 0 elsewhere, so sd_d ≈ √q: the design sees about 10 points.
    assert detectable_effect(math.sqrt(0.19), 151) == pytest.approx(0.0994, abs=5e-4)


def test_pilot_diff_sd_by_hand():
    # differences 0.25, 0, -0.5 (task d only in one): mean -1/12, squares sum 0.291667, / 2 → sd 0.381881
    first = {"a": 0.5, "b": 0.25, "c": 1.0, "d": 0.0}
    second = {"a": 0.75, "b": 0.25, "c": 0.5}
    assert pilot_diff_sd(first, second) == pytest.approx(0.381881, abs=1e-6)
    with pytest.raises(ValueError, match="at least 2 tasks"):
        pilot_diff_sd({"a": 0.0}, {"a": 1.0})


def test_held_out_means_averages_each_task_over_its_scored_samples():
    def rec(iid, ok, infra=False):
        return {"instance_id": iid, "resolved": ok, "infra_error": infra}

    records = [rec("a", True), rec("a", False), rec("b", True), rec("b", True), rec("c", False), rec("c", False, True)]
    h = held_out_means(records)
    assert h.per_task == {"a": 0.5, "b": 1.0, "c": 0.0}
    assert (h.mean, h.n, h.masked) == (0.5, 3, 1)
    assert (h.low, h.high) == wilson(1.5, 3)
