"""Learning signals that tell a gain from a hack (#47): a real tiny-model run whose env flags episodes (as
swe_lite's grader does for tampering) shows the share per step in metrics.jsonl and on the dashboard beside
reward, and the console says so once per window when flagged episodes pass 2%."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli import TINY_RUN, ParityEnv

REPO = Path(__file__).resolve().parents[1]


class FlaggedEnv(ParityEnv):
    """ParityEnv graded like swe_lite: info says the grading was valid and, with flagged=True, that the episode's
    change looked like tampering (every episode: a policy that has learned a hack)."""

    def __init__(self, flagged: bool = True):
        super().__init__()
        self.flagged = flagged

    def step(self, action):
        messages, reward, terminated, truncated, _ = super().step(action)
        return messages, reward, terminated, truncated, {"grading_valid": True, "grading_reason": "ok",
                                                         "suspicious": self.flagged}


def _train(run: Path, *overrides: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "agentrl", "train", "--env", "tests.test_cli_flagged:FlaggedEnv", *TINY_RUN,
            "trainer.checkpoint_every=0", f"trainer.run_dir={run}", *overrides]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=900, cwd=REPO)
    assert r.returncode == 0, r.stderr
    return r


@pytest.mark.slow
def test_flagged_episodes_warn_once_per_window_and_show_beside_reward(tmp_path):
    from agentrl.trainer.monitor import FLAGGED_WINDOW
    from agentrl.trainer.plot import FLAGGED, panel_series, read_metrics

    run = tmp_path / "run"
    steps = FLAGGED_WINDOW + 1
    r = _train(run, f"trainer.steps={steps}")
    warnings = [line for line in r.stderr.splitlines() if line.startswith("warning:")]
    episodes = [int(row["rollout/episodes"]) for row in read_metrics(run)]
    first, rest = episodes[0], sum(episodes[1:])
    samples = f"read the flagged trajectories in {run / 'samples'}/step_*_suspicious.txt"
    assert warnings == [  # step 1 passes 2% (all of its episodes), then silence until a new window: steps 2–6
        f"warning: {first} of {first} graded episodes of step 1 (100.0%) were flagged by the grader ({first} "
        f"suspicious: rollout/suspicious_share), over 2%: the reward may be rising from hacks, not fixes; {samples}",
        f"warning: {rest} of {rest} graded episodes of steps 2–{steps} (100.0%) were flagged by the grader ({rest} "
        f"suspicious: rollout/suspicious_share), over 2%: the reward may be rising from hacks, not fixes; {samples}",
    ], r.stderr
    order = [line.split(":")[0] for line in r.stderr.splitlines() if re.match(r"^(step \d+:|warning:)", line)]
    assert order[:3] == ["step 1", "warning", "step 2"] and order[-2:] == [f"step {steps}", "warning"], order
    assert sorted(p.name for p in (run / "samples").glob("*_suspicious.txt")) == \
        [f"step_{n:06d}_suspicious.txt" for n in range(1, steps + 1)]
    rows = read_metrics(run)
    assert [row["rollout/suspicious_share"] for row in rows] == [1.0] * steps
    assert [row["rollout/refused_share"] for row in rows] == [0.0] * steps
    panels = [title for title, _ in panel_series(rows)]
    assert panels[:2] == ["reward", FLAGGED]  # beside reward
    flagged = dict(panel_series(rows))[FLAGGED]
    assert flagged["rollout/suspicious_share"] == (list(range(1, steps + 1)), [1.0] * steps)
    plot = subprocess.run([sys.executable, "-m", "agentrl", "plot", str(run)], capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    assert plot.returncode == 0 and (run / "dashboard.png").stat().st_size > 0, plot.stderr

    clean = tmp_path / "clean"  # graded, never flagged: no warning, the share logged as 0
    r = _train(clean, "env.kwargs.flagged=false")
    assert "warning:" not in r.stderr and not list((clean / "samples").glob("*_suspicious.txt")), r.stderr
    assert [row["rollout/suspicious_share"] for row in read_metrics(clean)] == [0.0, 0.0]
