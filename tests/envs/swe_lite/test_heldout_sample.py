"""A small held-out sample (`make demo`'s 12 tasks, learn_swe --limit) spans the held-out modules: with 16 tasks
per module in file order, the first 12 came from two modules (9 of bank), which measured those two alone."""

from __future__ import annotations

from agentrl.envs.swe_lite.benchmark import held_out_tasks


def test_limit_takes_one_task_per_module_in_turn():
    full = held_out_tasks("dev,test", 0)
    repos = list(dict.fromkeys(t.repo for t in full))
    assert len(repos) >= 12
    sample = held_out_tasks("dev,test", 0, 12)
    first = {r: next(t for t in full if t.repo == r) for r in repos}
    # 12 modules, the first task of each, in the corpus's module order
    assert [t.instance_id for t in sample] == [first[r].instance_id for r in repos[:12]]
    # past one round, the second task of each module follows, still never a task outside the held-out set
    more = held_out_tasks("dev,test", 0, len(repos) + 3)
    assert [t.repo for t in more] == repos + repos[:3]
    ids = {t.instance_id for t in full}
    assert {t.instance_id for t in more} <= ids and len({t.instance_id for t in more}) == len(more)


def test_no_limit_or_a_large_one_keeps_every_task_in_file_order():
    full = held_out_tasks("dev,test", 0)
    assert [t.instance_id for t in held_out_tasks("dev,test", 0, len(full) + 5)] == [t.instance_id for t in full]
    assert all(t.difficulty <= 0 and t.split in ("dev", "test") for t in full)
