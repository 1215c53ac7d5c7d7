"""`agentrl plot` on real runs: whole-step ticks, reward_mean visible beside reward_trained_mean (format on its
own panel), and a gateway panel for agent programs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

AGENT = '''
async def run(task, client):
    messages = [{"role": "user", "content": f"Say something ({task['seed'] % 100})."}]
    reply = await client.chat(messages, max_tokens=4)
    messages.append({"role": "assistant", "content": reply["choices"][0]["message"]["content"]})
    messages.append({"role": "user", "content": "Again."})
    if task["seed"] % 2:  # this task's agent rewrites its history: its second call starts a new segment
        messages = [messages[0], {"role": "user", "content": "Different."}]
    reply = await client.chat(messages, max_tokens=4)
    return float(len(reply["choices"][0]["message"]["content"] or "") % 2 == 0)
'''


def _cli(*argv: str) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "agentrl", *argv], capture_output=True, text=True, timeout=900, cwd=REPO)
    assert r.returncode == 0, r.stderr
    return r


@pytest.mark.slow
def test_the_dashboard_of_an_agent_program_run(tmp_path):
    """Guards ticks at 1.5, 2.5 … on an axis of whole steps, rollout/reward_mean drawn under
    rollout/reward_trained_mean on the axis of rollout/format_ok_share, and no gateway panel although the
    prefix-mismatch rate is the gateway's headline metric."""
    import matplotlib.pyplot as plt

    from agentrl.trainer.plot import FLAGGED, GATEWAY, dashboard, read_metrics

    agent, run = tmp_path / "agent.py", tmp_path / "run"
    agent.write_text(AGENT)
    _cli("train", "--env", f"external:{agent}:run", "model.name=tiny", "rollout.tasks_per_step=2",
         "rollout.group_size=2", "rollout.max_context_tokens=256", "trainer.tensorboard=false", "trainer.steps=3",
         "trainer.checkpoint_every=0", "trainer.sample_every=0", "rollout.max_batch_size=1", f"trainer.run_dir={run}")
    assert _cli("plot", str(run)).stdout.strip() == str(run / "dashboard.png")
    rows = read_metrics(run)
    assert max(row["gateway/prefix_mismatch_rate"] for row in rows) > 0  # the history-rewriting task was drawn
    fig = dashboard(rows, "run")
    try:
        by_title = {ax.get_title(): ax for ax in fig.axes if ax.get_title()}
        assert list(by_title)[:3] == ["reward", FLAGGED, "format (share of turns that parsed)"], list(by_title)
        for title, ax in by_title.items():  # whole steps only on every x axis
            ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
            assert ticks and all(float(t).is_integer() for t in ticks), (title, ticks)
        reward = {line.get_label(): line for line in by_title["reward"].get_lines()}
        assert set(reward) == {"reward_mean", "reward_trained_mean"}, set(reward)
        mean, trained = reward["reward_mean"], reward["reward_trained_mean"]
        assert mean.get_linestyle() == "-" and trained.get_linestyle() == "--"
        assert mean.get_linewidth() > 2 * trained.get_linewidth()  # the thick line shows around the dashed one
        assert list(mean.get_xdata()) == [1, 2, 3]
        gateway = by_title[GATEWAY]
        (twin,) = [ax for ax in fig.axes if ax is not gateway and ax.get_shared_x_axes().joined(ax, gateway)]
        assert [line.get_label() for line in gateway.get_lines()] == ["prefix_mismatch_rate"]
        assert [line.get_label() for line in twin.get_lines()] == ["segments_mean", "calls_mean"]
        assert list(gateway.get_lines()[0].get_ydata()) == [row["gateway/prefix_mismatch_rate"] for row in rows]
    finally:
        plt.close(fig)
