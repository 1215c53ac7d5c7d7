"""bench/learn_swe.py resumes: the same command, run again after SIGTERM or SIGKILL in any phase, continues from
the last finished phase, the last GRPO checkpoint and every finished held-out episode, repeats nothing it
finished, and ends with the table of an uninterrupted run. Guards the 3-hour benchmark that had to start over
whenever it was stopped (issue 47)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / "bench" / "learn_swe.py"


def command(out: Path, backend: str = "docker", *extra: str) -> list[str]:
    """The smallest run with every phase these stops guard: tiny model, 2 held-out tasks one at a time (one
    finished and one cut short at a stop), 4 expert episodes, 2 GRPO steps (one group of 2 episodes each, no
    resampling), each checkpointed, 2 turns per episode; no compute-matched control (its resume, a stopped one
    starting over and a finished one kept, is tests/envs/swe_lite/test_learn_swe_control.py's). Evaluated as the
    learning measurement is (`--samples K --no-greedy`: sampled episodes keyed by (task, sample), no greedy line),
    with one sample per task: as many episodes as a greedy evaluation."""
    return [sys.executable, str(BENCH), "--quick", "--model", "tiny", "--limit", "2", "--eval-concurrency", "1",
            "--samples", "1", "--no-greedy", "--control", "none", "--out", str(out), "trainer.steps=2",
            "trainer.checkpoint_every=1", "rollout.max_resample_rounds=0", "rollout.max_turns=2",
            f"env.kwargs.backend={backend}", *extra]


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


# ---- where each phase is under way, seen from the state directory ----

def episodes_started(stem: str):
    return lambda out: len(lines(out / f"episodes_{stem}_level0_k1.jsonl")) >= 1


# One stop per distinct resume path, SIGTERM and SIGKILL each in an evaluation and in a training phase: the
# warm start's evaluation is the same code as the other two (evaluate_phase), and the signal changes what a phase
# kept only in an evaluation (after SIGKILL the process wrote nothing more; after SIGTERM an episode ending in the
# shutdown must not be kept, a window no stop can time: test_an_episode_that_ends_after_sigterm_is_not_kept).
# Every resume after the first also skips the phases that finished.
STOPS = [  # (phase, a condition that holds part-way through it, the signal sent then)
    ("base model evaluation", episodes_started("base_model"), signal.SIGTERM),  # keeps its finished episode
    ("warm start", lambda out: (out / "sft" / "config.yaml").exists(), signal.SIGKILL),  # kept nothing: starts over
    ("GRPO", lambda out: (out / "grpo" / "checkpoints" / "step_000001" / "complete.json").exists(),
     signal.SIGTERM),  # continues from step 1's checkpoint
    ("GRPO evaluation", episodes_started("GRPO"), signal.SIGKILL),  # keeps its finished episode
]


def interrupt(cmd: list[str], out: Path, when, sig: int, log: Path) -> int:
    """Start cmd, send `sig` once when(out) holds, and return its exit status."""
    with open(log, "ab") as f:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 600
    while not when(out):
        assert proc.poll() is None, f"finished before the phase was reached: {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, "phase not reached in 600 s"
        time.sleep(0.1)
    proc.send_signal(sig)
    return proc.wait(timeout=300)


def snapshot(out: Path) -> dict[str, list[str]]:
    """What the run has kept: finished phases' results and finished episodes, line by line."""
    return {p.name: lines(p) for p in sorted(out.glob("heldout_*.json")) + sorted(out.glob("episodes_*.jsonl"))}


def table_without_times(record: dict) -> list:
    """The record's results, without the wall times (which differ between any two runs)."""
    sampled = dict(record["sampled"])
    sampled["rows"] = [{k: v for k, v in r.items() if k not in ("train_s", "eval_s")} for r in sampled["rows"]]
    assert record["rows"] == [] and sampled["rows"]  # --no-greedy: the sampled rows alone
    return [sampled, record["paired"], record["audit"]]


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.timeout(1800)
def test_a_run_stopped_in_each_resume_path_ends_with_the_uninterrupted_table(tmp_path, docker_backend):
    """Guards each resume path of learn_swe against the bugs that would make a stopped benchmark differ from one
    never stopped: a finished phase or episode run again (or its stored line rewritten), an evaluation that drops
    its finished episodes or keeps a masked one, a killed warm start taken as done instead of started over, GRPO
    restarted from the warm start (or trained past its steps) instead of continued from its last checkpoint, a
    clock that loses a stopped attempt, and SIGTERM not unwinding to exit 143 with the resume line. One run is
    stopped four times (STOPS) and compared with one uninterrupted run of the same recipe; the two signals in every
    phase (10 stops, two full runs) repeated these paths at three times the cost."""
    backend = docker_backend
    reference = tmp_path / "uninterrupted"
    subprocess.run(command(reference, backend), cwd=ROOT, check=True, capture_output=True, timeout=1200)

    out, log = tmp_path / "state", tmp_path / "log.txt"
    cmd = command(out, backend)
    kept: dict[str, list[str]] = {}
    for name, when, sig in STOPS:  # each run resumes the one before and is stopped in the next phase
        rc = interrupt(cmd, out, when, sig, log)
        if sig == signal.SIGTERM:  # unwinds like Ctrl-C and says how to go on
            assert rc == 143, log.read_text()[-3000:]
            assert "the same command resumes from" in log.read_text().splitlines()[-1]
        else:
            assert rc == -signal.SIGKILL
        assert_kept(kept, snapshot(out), name)
        kept = snapshot(out)
    grpo = {f: lines(out / "grpo" / f)[:1] for f in ("metrics.jsonl",)}
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=open(log, "ab"), stderr=subprocess.STDOUT, timeout=1200)
    assert_kept(kept, snapshot(out), "the GRPO evaluation")
    text = log.read_text()
    assert "== GRPO resumed from" in text and "finished episode(s) kept from an interrupted run" in text

    # the same table as the run that was never stopped, every phase's episodes once each, GRPO's step 1 trained once
    record, expected = (json.loads((d / "record.json").read_text()) for d in (out, reference))
    assert table_without_times(record) == table_without_times(expected)
    recipe = json.loads((out / "run.json").read_text())["recipe"]
    for stem, tasks in (("base_model", "base_held_out"), ("warm_start", "held_out"), ("GRPO", "held_out")):
        recs = [json.loads(x) for x in lines(out / f"episodes_{stem}_level0_k1.jsonl")]
        assert sorted((r["instance_id"], r["sample"]) for r in recs) == sorted((t, 0) for t in recipe[tasks]["0"])
        assert not any(r["infra_error"] for r in recs)  # no episode cut short by the shutdown was kept
    assert [json.loads(x)["step"] for x in lines(out / "grpo" / "metrics.jsonl")] == [1, 2]
    assert lines(out / "grpo" / "metrics.jsonl")[:1] == grpo["metrics.jsonl"]
    clock = json.loads((out / "clock.json").read_text())
    assert all(v["start"] is None and v["s"] > 0 for v in clock.values())


def assert_kept(before: dict[str, list[str]], now: dict[str, list[str]], where: str) -> None:
    """Nothing finished was run again: every stored result and episode is still there, verbatim and first."""
    for file, old in before.items():
        assert now.get(file, [])[:len(old)] == old, f"{file} changed when the run stopped in {where} went on"


# ---- what a resume refuses, and the wall-time ledger (no Docker, no training) ----

def run_bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH), *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_a_state_directory_of_another_recipe_is_refused_in_one_line(tmp_path):
    out = tmp_path / "state"
    first = run_bench("--quick", "--model", "tiny", "--audit", "--out", str(out))  # pins the recipe, finds no episodes
    assert first.returncode == 2 and first.stderr.count("\n") == 1 and "--audit:" in first.stderr
    assert json.loads((out / "run.json").read_text())["recipe"]["grpo"]["trainer"]["lr"] == 1e-5
    other = run_bench("--quick", "--model", "tiny", "--out", str(out), "trainer.lr=2e-5")
    assert other.returncode == 2 and other.stderr.count("\n") == 1, other.stderr
    assert "holds a run of another recipe (differs in grpo.trainer.lr, sft.trainer.lr)" in other.stderr
    assert "Traceback" not in other.stderr
    fewer = run_bench("--quick", "--model", "tiny", "--limit", "1", "--out", str(out))
    assert fewer.returncode == 2 and "held_out.0" in fewer.stderr


@pytest.mark.slow
def test_grpo_s_recipe_is_fixed_in_a_pilot_s_state_directory_until_grpo_starts(tmp_path):
    """Guards the protocol of issue 54 (pilot first, then GRPO's recipe committed, then GRPO) against both ways it
    can break: a pilot's state directory that refuses the GRPO recipe fixed after the pilot (the pilot's
    evaluations lost), and a GRPO recipe changed after GRPO or its control started (a run mixing two recipes)."""
    out = tmp_path / "state"
    first = run_bench("--quick", "--model", "tiny", "--audit", "--out", str(out))  # pins the recipe
    assert first.returncode == 2 and "--audit:" in first.stderr
    fixed = run_bench("--quick", "--model", "tiny", "--audit", "--out", str(out), "--grpo-set", "algo.advantage=rloo",
                      "--grpo-set", "trainer.max_train_s=7200")
    assert fixed.returncode == 2 and "--audit:" in fixed.stderr, fixed.stderr  # accepted; --audit then has no episodes
    assert "GRPO's recipe fixed before GRPO started" in fixed.stdout
    run = json.loads((out / "run.json").read_text())
    assert run["recipe"]["grpo"]["algo"]["advantage"] == "rloo" and run["recipe"]["grpo"]["trainer"]["max_train_s"] == 7200
    assert run["recipe"]["sft"]["algo"]["advantage"] == "grpo"  # the warm start's part is what the pilot trained
    assert [sorted(a["changed"]) for a in run["amended"]] == [["grpo.algo.advantage", "grpo.trainer.max_train_s"]]
    assert run["amended"][0]["changed"]["grpo.algo.advantage"] == ["grpo", "rloo"]
    assert "--grpo-set" not in run["amended"][0]["previous_command"] and "--grpo-set" in run["command"]

    everywhere = run_bench("--quick", "--model", "tiny", "--out", str(out), "--grpo-set", "algo.advantage=rloo",
                           "--grpo-set", "trainer.max_train_s=7200", "trainer.lr=2e-5")  # the warm start's too
    assert everywhere.returncode == 2 and "another recipe (differs in grpo.trainer.lr, sft.trainer.lr)" in everywhere.stderr
    assert "--grpo-set algo.advantage=rloo --grpo-set trainer.max_train_s=7200" in everywhere.stderr  # how to resume
    (out / "grpo").mkdir()  # GRPO has started: its recipe is fixed for good
    late = run_bench("--quick", "--model", "tiny", "--out", str(out), "--grpo-set", "algo.advantage=dr_grpo")
    assert late.returncode == 2 and "another recipe (differs in grpo.algo.advantage" in late.stderr, late.stderr
    assert json.loads((out / "run.json").read_text()) == run


@pytest.mark.slow
def test_grpo_s_time_budget_holds_across_attempts(tmp_path):
    """Guards trainer.max_train_s in the learning measurement (GRPO within 2 CPU-hours, issue 54) against a run that
    spans interruptions: a resumed GRPO given a fresh budget instead of what earlier attempts left, and a GRPO that
    stopped on its budget trained on by the next invocation because it ended before trainer.steps. The real
    trainer on the tiny model and the parity test env (no Docker)."""
    import runpy

    from agentrl.config import load_config
    from agentrl.trainer.loop import train
    from tests.test_cli import TINY_RUN

    bench = runpy.run_path(str(BENCH))
    grpo_phase, Clock = bench["grpo_phase"], bench["Clock"]  # noqa: N806

    def cfg(run_dir, *extra):
        return load_config("test_cli_parity", None, overrides=[*TINY_RUN, f"trainer.run_dir={run_dir}", *extra])

    warm = train(cfg(tmp_path / "sft", "trainer.steps=1")).checkpoint

    def steps_trained(out):
        return [json.loads(x)["step"] for x in lines(out / "grpo" / "metrics.jsonl")]

    # spent after step 1 of 3: the phase ends there, and running it again trains nothing more
    out = tmp_path / "spent"
    out.mkdir()
    grpo = cfg(out / "grpo", "trainer.steps=3", "trainer.max_train_s=0.001")
    first = grpo_phase(out, grpo, warm, Clock(out), reeval=False)
    assert first.name == "step_000001" and steps_trained(out) == [1]
    assert grpo_phase(out, grpo, warm, Clock(out), reeval=False) == first and steps_trained(out) == [1]

    # an attempt stopped at step 1 with all but a moment of a 100 s budget used: the next one gets that moment
    # (one step more), not 100 s (the two steps left)
    out = tmp_path / "left"
    out.mkdir()
    grpo_phase(out, cfg(out / "grpo", "trainer.steps=1"), warm, Clock(out), reeval=False)  # step 1's checkpoint
    (out / "clock.json").write_text(json.dumps({"grpo": {"s": 100 - 0.001, "start": None}}))
    last = grpo_phase(out, cfg(out / "grpo", "trainer.steps=3", "trainer.max_train_s=100"), warm, Clock(out),
                      reeval=False)
    assert last.name == "step_000002" and steps_trained(out) == [1, 2]


def test_a_directory_that_is_no_state_directory_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    r = run_bench("--quick", "--model", "tiny", "--out", str(tmp_path))
    assert r.returncode == 2 and "has no run.json" in r.stderr and r.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_the_clock_counts_a_killed_attempt_up_to_its_last_kept_work(tmp_path):
    import runpy

    Clock = runpy.run_path(str(BENCH))["Clock"]  # noqa: N806
    clock = Clock(tmp_path)
    clock.begin("grpo")
    start = clock.data["grpo"]["start"]
    # the process dies here; the next one reads the ledger and learns the attempt kept 30 s of work
    again = Clock(tmp_path)
    again.begin("grpo", kept_until=lambda s: s + 30.0)
    assert again.seconds("grpo") == pytest.approx(30.0) and again.data["grpo"]["start"] >= start
    total = again.end("grpo")
    assert 30.0 <= total < 40.0 and Clock(tmp_path).seconds("grpo") == total
    again.begin("grpo", fresh=True)  # measured again from scratch (--reeval)
    assert again.seconds("grpo") == 0.0


def test_an_episode_that_ends_after_sigterm_is_not_kept(tmp_path, monkeypatch):
    """Guards a resumed evaluation keeping an episode the shutdown cut short (scored 0 or masked in place of its
    result): once SIGTERM has arrived, the episode store writes nothing more, and a resume keeps only what was
    written before. The stops above cannot time an episode to end inside that window; this is the rule itself."""
    import runpy

    from agentrl.sandboxes import reaper

    EpisodeStore = runpy.run_path(str(BENCH))["EpisodeStore"]  # noqa: N806
    store = EpisodeStore(tmp_path, "x_level0", "tiny", ["a", "b"], fresh=False)
    store.append({"instance_id": "a", "sample": 0, "resolved": True, "infra_error": False})
    monkeypatch.setattr(reaper, "terminated", True)
    store.append({"instance_id": "b", "sample": 0, "resolved": False, "infra_error": False, "termination": "timeout"})
    assert [json.loads(x)["instance_id"] for x in lines(tmp_path / "episodes_x_level0.jsonl")] == ["a"]
    monkeypatch.setattr(reaper, "terminated", False)
    assert list(EpisodeStore(tmp_path, "x_level0", "tiny", ["a", "b"], fresh=False).done) == [("a", 0)]
