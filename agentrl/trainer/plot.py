"""`agentrl plot RUN_DIR`: a PNG dashboard of a run's metrics.jsonl (reward; episodes the grader flagged; the
format share; entropy, KL, IS weights, clip fractions; lengths, zero-std groups, the success signal (groups of
mixed success, |advantage| in groups whose success does not vary, distinct tasks seen), masked share, termination mix,
time per phase; the gateway's prefix mismatch for agent programs). Skipped steps (no optimizer step) are shaded
red on every panel, and the title counts them by reason. Steps are numbered from 1, as in the console,
metrics.jsonl, TensorBoard, samples/ and the checkpoints, and the x axis ticks whole steps only."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

from agentrl.trainer.monitor import FLAGGED_SHARE, FLAGGED_WINDOW, skip_reason

FLAGGED = "flagged episodes (share of graded)"
GATEWAY = "gateway (agent programs)"
SIGNAL = "success signal (groups where the policy is unsure)"
PANELS: list[tuple[str, list[str]]] = [
    ("reward", ["rollout/reward_mean", "rollout/reward_trained_mean", "eval/reward_mean"]),
    (FLAGGED, ["rollout/suspicious_share", "rollout/refused_share"]),
    ("format (share of turns that parsed)", ["rollout/format_ok_share"]),
    ("entropy", ["actor/entropy"]),
    ("KL", ["actor/ppo_kl", "actor/ref_kl", "mismatch/kl_k3"]),
    ("IS weight w = π_old/μ", ["mismatch/tis_mean", "mismatch/tis_abs", "mismatch/tis_clipfrac"]),
    ("clip / rejection fractions", ["actor/pg_clipfrac", "actor/pg_clipfrac_lower", "mismatch/rs_masked_frac_traj"]),
    ("lengths", ["rollout/action_tokens_mean", "rollout/tokens_mean", "rollout/turns_mean"]),
    ("zero-std groups", ["rollout/zero_std_frac"]),
    (SIGNAL, ["rollout/mixed_success_share", "rollout/flat_success_adv_share", "rollout/distinct_tasks_seen"]),
    ("masked share (episodes not trained on)", ["rollout/masked_share"]),
    ("termination mix", ["termination/"]),
    ("time per phase (s)", ["timing/"]),
    (GATEWAY, ["gateway/prefix_mismatch_rate", "gateway/segments_mean", "gateway/calls_mean"]),
]
"""(title, metric names or prefixes ending in '/'), in drawing order; a line's legend order is its key's order."""
OPTIONAL = {GATEWAY}
"""Panels drawn only when the run logged their metrics (the gateway's exist only for agent programs)."""
RIGHT_AXIS = {"gateway/segments_mean", "gateway/calls_mean", "rollout/distinct_tasks_seen"}
"""Counts drawn on a second y axis beside a share on the first."""
AXIS_LABELS = {GATEWAY: ("share of calls", "per episode"), SIGNAL: ("share", "distinct tasks seen (cumulative)")}
"""(left, right) y-axis labels of the panels with a second axis."""
STYLE = {  # reward_mean thick and solid, reward_trained_mean thin and dashed on top: both stay visible when equal
    "rollout/reward_mean": {"lw": 2.6, "zorder": 3},
    "rollout/reward_trained_mean": {"lw": 1.2, "ls": "--", "zorder": 4},
    "eval/reward_mean": {"marker": "s", "zorder": 5},
}
EMPTY_NOTE = {FLAGGED: "no data\n(the env's grader reports no integrity flags)"}


def read_metrics(run_dir: str | Path) -> list[dict]:
    """The records of run_dir/metrics.jsonl (a truncated last line, from a killed run, is skipped)."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        from agentrl.errors import AgentRLError

        raise AgentRLError(f"nothing to plot: {what_folder(Path(run_dir))}")
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def what_folder(path: Path) -> str:
    """What a folder without metrics.jsonl is, in a sentence: a warm-start-only run, a run that has not finished
    a step, a folder of runs, or no run at all."""
    if not path.exists():
        return f"{path} does not exist"
    if not path.is_dir():
        return f"{path} is a file; give a run folder (runs/<name>)"
    if (path / "sft_metrics.jsonl").is_file():
        return (f"{path} is a warm-start-only run (agentrl sft, or trainer.steps=0): it took no GRPO step; its loss "
                f"per epoch is in {path / 'sft_metrics.jsonl'} and its weights in {path / 'checkpoints'}")
    if (path / "config.yaml").is_file():
        return (f"{path} is a run that has not finished a step (still starting, or stopped before its first step; "
                f"it holds {', '.join(sorted(p.name for p in path.iterdir()))})")
    runs = sorted(p for p in path.iterdir() if (p / "config.yaml").is_file())
    if runs:
        return f"{path} is a folder of {len(runs)} run(s), not a run; plot one of them, e.g. agentrl plot {runs[-1]}"
    return f"{path} is not an agentrl run folder (it has no config.yaml or metrics.jsonl)"


def panel_series(rows: list[dict]) -> list[tuple[str, dict[str, tuple[list[int], list[float]]]]]:
    """What each panel draws, in PANELS order: (title, {line name: (steps, values)}). Steps are the records'
    own numbers (from 1; a metrics.jsonl of an older agentrl, whose steps start at 0, is shifted by one), and
    rollout/masked_share is derived as rollout/masked_episodes / rollout/episodes."""
    shift = 1 if rows and rows[0].get("step") == 0 else 0
    steps = [r["step"] + shift for r in rows]
    rows = [{**r, "rollout/masked_share": r["rollout/masked_episodes"] / r["rollout/episodes"]}
            if r.get("rollout/episodes") and "rollout/masked_episodes" in r else r for r in rows]
    panels = []
    for title, keys in PANELS:
        present = {k for r in rows for k in r}
        names = [n for p in keys for n in sorted(k for k in present if k == p or (p.endswith("/") and k.startswith(p)))]
        lines = {}
        for name in names:
            ys = [r.get(name) for r in rows]
            if all(y is None or y == 0 for y in ys) and title in ("termination mix",):
                continue
            xs = [s for s, y in zip(steps, ys, strict=True) if isinstance(y, (int, float))]
            if xs:
                lines[name] = (xs, [y for y in ys if isinstance(y, (int, float))])
        if lines or title not in OPTIONAL:
            panels.append((title, lines))
    return panels


def plot_run(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Write the dashboard PNG (default run_dir/dashboard.png) and return its path."""
    import matplotlib.pyplot as plt

    rows = read_metrics(run_dir)
    out = Path(out) if out else Path(run_dir) / "dashboard.png"
    fig = dashboard(rows, f"agentrl run {Path(run_dir).name}")
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def dashboard(rows: list[dict], name: str):
    """The dashboard of metrics.jsonl records as a matplotlib Figure: one panel per PANELS entry (five a row)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    panels = panel_series(rows)
    cols = 5
    fig, axes = plt.subplots(math.ceil(len(panels) / cols), cols, figsize=(5 * cols, 4.5 * math.ceil(len(panels) / cols)),
                             squeeze=False)
    shift = 1 if rows and rows[0].get("step") == 0 else 0
    skipped = {r["step"] + shift: skip_reason(r) for r in rows if skip_reason(r)}
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (title, lines) in zip(axes.flat, panels, strict=False):
        for s in skipped:
            ax.axvspan(s - 0.5, s + 0.5, color="red", alpha=0.12, lw=0)
        right = ax.twinx() if any(n in RIGHT_AXIS for n in lines) else None
        for i, (metric, (xs, ys)) in enumerate(lines.items()):
            on = right if metric in RIGHT_AXIS else ax
            on.plot(xs, ys, **{"marker": "o", "ms": 3, "color": f"C{i}", "label": metric.split("/", 1)[-1],
                               **STYLE.get(metric, {})})
        if right is not None:
            left_label, right_label = AXIS_LABELS.get(title, ("share", "count"))
            ax.set_ylabel(left_label)
            right.set_ylabel(right_label)
        if title == FLAGGED and lines:
            ax.axhline(FLAGGED_SHARE, color="gray", ls=":", lw=1,
                       label=f"console warns above {FLAGGED_SHARE:.0%} (over {FLAGGED_WINDOW} steps)")
        ax.set_title(title)
        ax.set_xlabel("step")
        if rows:  # every panel spans the run's steps, with whole-step ticks (one step: one tick)
            ax.set_xlim(rows[0]["step"] + shift - 0.5, rows[-1]["step"] + shift + 0.5)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        ax.grid(alpha=0.3)
        if ax.lines or right is not None:
            handles = [h for a in (ax, right) if a is not None for h in a.get_legend_handles_labels()[0]]
            ax.legend(handles=handles, fontsize=7)
        else:
            ax.text(0.5, 0.5, EMPTY_NOTE.get(title, "no data"), ha="center", va="center", transform=ax.transAxes,
                    color="gray")
    title = f"{name} ({len(rows)} steps)"
    if skipped:
        reasons = Counter(why.split(":")[0] for why in skipped.values())
        title += "; skipped (shaded): " + ", ".join(f"{n}× {why}" for why, n in reasons.most_common())
    fig.suptitle(title)
    # Fixed margins in inches (title above the top row, tick and axis labels beside each panel) instead of
    # tight_layout, whose text-measuring pass took as long as drawing the figure (half of the dashboard's time).
    w, h = fig.get_size_inches()
    fig.subplots_adjust(left=0.9 / w, right=1 - 0.9 / w, bottom=0.6 / h, top=1 - 0.9 / h, wspace=0.35,
                        hspace=0.3)
    return fig
