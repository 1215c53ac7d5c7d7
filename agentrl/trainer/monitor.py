"""Observability of a run: a rich progress display, metrics.jsonl, TensorBoard, sample trajectories.

Metric names are namespaced (rollout/, actor/, mismatch/, staleness/, termination/, timing/, trainer/);
docs/metrics.md defines each of them. Steps are numbered from 1 in every output (the console, metrics.jsonl,
TensorBoard, samples/, trajectories.jsonl, the dashboard): step n is the n-th training step, and checkpoint
step_n holds the weights after it. Every method here takes that number.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from agentrl.rollout.collector import is_flagged, is_graded

PLAIN_EVERY_S = 30.0
"""Without a terminal: at most one progress line per this many seconds, and at least one while a step runs (a
rollout of SWE episodes or a warm-start epoch can go minutes without an event to report)."""
FLAGGED_SHARE = 0.02
"""The console warns when more than this share of the graded episodes of the last FLAGGED_WINDOW steps was
flagged by the grader (suspicious, or refused by the judge): reward hacking that passes a few percent spreads."""
FLAGGED_WINDOW = 5
"""Steps in the flagged-episode window; the warning is printed at most once per window."""


class Monitor:
    """Progress display plus metric sinks for one run directory."""

    def __init__(self, run_dir: Path, *, total_steps: int, tensorboard: bool = True, console: Console | None = None,
                 purge_step: int | None = None):
        self.run_dir = Path(run_dir)
        self.console = console or run_console()
        # a log file or a pipe gets no live bar (its fragments would stay in the file): plain progress lines
        # instead, at most one per PLAIN_EVERY_S
        self.plain = not self.console.is_terminal
        self._last_plain, self._last_line = 0.0, ""
        self._plain_lock = threading.Lock()
        self._beat_stop = threading.Event()
        self._beat: threading.Thread | None = None
        self.metrics_path = self.run_dir / "metrics.jsonl"
        self.samples_dir = self.run_dir / "samples"
        self._tb = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                # a resumed run: TensorBoard hides the events logged after its checkpoint (trained again)
                self._tb = SummaryWriter(str(self.run_dir / "tb"), purge_step=purge_step)
            except ImportError:
                self.console.print("[yellow]tensorboard is not installed: metrics go to metrics.jsonl only[/]")
        self.progress = Progress(
            TextColumn("[bold]{task.fields[label]} {task.fields[step]}/{task.fields[steps]}[/] {task.fields[phase]:<9}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("episodes  reward {task.fields[reward]}"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[note]}"),
            console=self.console,
            transient=False,
            disable=self.plain,
        )
        self._task = None
        self._step, self._planned, self._resampled = 0, 0, []  # the bar's step, its planned episodes, why it grew
        self.total_steps = total_steps
        self._pace_from: tuple[int, float] | None = None  # (first step this process ran, when it began)
        self.timings: dict[str, float] = {}
        self.flagged = FlaggedWatch()

    def __enter__(self) -> Monitor:
        self.progress.start()
        if self.plain:  # a terminal has the live bar's clock; a log file gets a line every PLAIN_EVERY_S instead
            self._beat_stop.clear()
            self._beat = threading.Thread(target=self._heartbeat, name="agentrl-progress", daemon=True)
            self._beat.start()
        return self

    def _heartbeat(self) -> None:
        """Say where the run is at least every PLAIN_EVERY_S, events or not (the plain line's elapsed grows)."""
        while not self._beat_stop.wait(max(PLAIN_EVERY_S / 2, 0.05)):
            self._plain_line(force=False)

    def __exit__(self, *exc) -> None:
        if self._beat is not None:
            self._beat_stop.set()
            self._beat.join()
            self._beat = None
        self.progress.stop()
        if self._tb is not None:
            self._tb.close()

    def begin_step(self, step: int, episodes: int, label: str = "step", steps: int | None = None) -> None:
        """Start the progress bar of step `step` (numbered from 1; episodes = the planned episode count)."""
        if self._task is not None:
            self.progress.remove_task(self._task)
        self.timings = {}
        if label == "step" and self._pace_from is None:
            self._pace_from = (step, time.monotonic())
        self._step, self._planned, self._resampled = step, episodes, []
        self._task = self.progress.add_task(
            "", total=episodes, label=label, step=step, steps=steps or self.total_steps, phase="rollout", reward="-",
            note="",
        )
        self._plain_line(force=True)

    def episodes_resampled(self, step: int, n: int, why: str) -> None:
        """Step `step` samples a dropped group's slot again: its bar's total grows by n, and the bar says why
        (e.g. '4 → 12 episodes: resampled groups with equal rewards (dynamic sampling)'). Another step's
        resample (an overlapped mode's next step) is left to that step's bar."""
        if self._task is None or step != self._step:
            return
        task = self.progress.tasks[-1]
        if why not in self._resampled:
            self._resampled.append(why)
        total = int(task.total or 0) + n
        self.progress.update(self._task, total=total,
                             note=f"({self._planned} → {total} episodes: {'; '.join(self._resampled)})")
        self._plain_line(force=True)

    def episodes_done(self, n: int) -> None:
        """Advance the bar (called as groups finish)."""
        if self._task is not None:
            task = self.progress.tasks[-1]
            if task.completed + n > (task.total or 0):
                self.progress.update(self._task, total=task.completed + n)
            self.progress.advance(self._task, n)
            self._plain_line(force=task.completed >= (task.total or 0))

    @contextmanager
    def phase(self, name: str):
        """Time a phase of the step (reported as timing/<name>_s) and show it."""
        if self._task is not None:
            self.progress.update(self._task, phase=name)
            self._plain_line(force=True)
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.timings[f"timing/{name}_s"] = self.timings.get(f"timing/{name}_s", 0.0) + time.perf_counter() - t0

    def _plain_line(self, *, force: bool) -> None:
        """Without a terminal, say where the run is (label, step, phase, episodes done, elapsed) as one line."""
        with self._plain_lock:  # the heartbeat thread calls this too
            now = time.monotonic()
            tasks = self.progress.tasks
            if not self.plain or self._task is None or not tasks or (not force and now - self._last_plain < PLAIN_EVERY_S):
                return
            task = tasks[-1]
            f = task.fields
            note = f" {f['note']}" if f.get("note") else ""
            line = (f"{f['label']} {f['step']}/{f['steps']} {f['phase']}: {int(task.completed)}/{int(task.total or 0)} "
                    f"episodes, {task.elapsed or 0.0:.0f}s{note}")
            if line != self._last_line:  # a step's start and its rollout phase would say the same thing twice
                self._last_plain, self._last_line = now, line
                self.console.print(line, highlight=False)

    def log(self, step: int, metrics: dict[str, float]) -> None:
        """Append step `step`'s metrics to metrics.jsonl ("step": step) and TensorBoard (global step `step`), and
        print its one-line summary."""
        metrics = {**metrics, **self.timings}
        record = {"step": step, "time": time.time(), **{k: _num(v) for k, v in sorted(metrics.items())}}
        with open(self.metrics_path, "a") as f:
            f.write(json.dumps(record) + "\n")
        if self._tb is not None:
            for k, v in record.items():
                if k not in ("step", "time") and isinstance(v, (int, float)):
                    self._tb.add_scalar(k, v, step)
            self._tb.flush()
        if self._task is not None:
            self.progress.update(self._task, reward=f"{metrics.get('rollout/reward_mean', 0.0):.3f}", phase="done")
        line, left = summary_line(step, metrics), self.time_left(step)
        self.console.print(f"{line.rstrip(' |')}  |  {left}" if left else line)

    def time_left(self, step: int) -> str:
        """'~12 min left': the steps after `step` at the pace of the steps this process ran (a resumed run
        counts from its restart); '' after the last step or before any."""
        if self._pace_from is None or step >= self.total_steps or step < self._pace_from[0]:
            return ""
        first, began = self._pace_from
        left = (time.monotonic() - began) / (step - first + 1) * (self.total_steps - step)
        return f"~{duration(left)} left"

    def write_samples(self, step: int, trajectories, tokenizer, n: int = 2) -> None:
        """Render a few trajectories of step `step` as readable text in samples/step_<step>.txt (action and
        observation spans marked)."""
        self.samples_dir.mkdir(parents=True, exist_ok=True)
        with open(self.samples_dir / f"step_{step:06d}.txt", "w") as f:
            for t in trajectories[:n]:
                f.write(t.render(tokenizer, max_chars=4000))
                f.write("\n" + "=" * 100 + "\n")

    def write_suspicious(self, step: int, trajectories, tokenizer) -> Path | None:
        """The first trajectory of the step whose grader flagged it (tampering found, or an answer the judge
        refused), rendered with its findings; and one console line when flagged episodes pass FLAGGED_SHARE of
        the last FLAGGED_WINDOW steps' graded episodes (at most once per window).

        Runs every step (not only every sample_every): the user should see the policy probing its grader."""
        flagged = next((t for t in trajectories if is_flagged(t.reward_info or {})), None)
        path = None
        if flagged is not None:
            self.samples_dir.mkdir(parents=True, exist_ok=True)
            info, path = flagged.reward_info, self.samples_dir / f"step_{step:06d}_suspicious.txt"
            with open(path, "w") as f:
                f.write(f"reward={flagged.reward} grading_reason={info.get('grading_reason', '')!r}\n"
                        f"refused={info.get('grading_refused') or ''!r}\n"
                        f"findings={info.get('findings', [])}\n\npatch:\n{info.get('patch', '')}\n{'=' * 100}\n")
                f.write(flagged.render(tokenizer, max_chars=8000))
        warning = self.flagged.observe(step, [t.reward_info or {} for t in trajectories])
        if warning is not None:
            self.console.print(f"{warning}; read the flagged trajectories in {self.samples_dir}/step_*_suspicious.txt",
                               style="bold yellow", markup=False, highlight=False)
        return path


@dataclass
class _StepCounts:
    step: int
    graded: int
    suspicious: int
    refused: int
    flagged: int


class FlaggedWatch:
    """Counts flagged episodes over a sliding window of steps and says when their share passes `share`: once,
    then not again until a whole new window has passed (so a hack that persists is reported once per window)."""

    def __init__(self, share: float = FLAGGED_SHARE, window: int = FLAGGED_WINDOW):
        self.share, self.window = share, window
        self.steps: deque[_StepCounts] = deque(maxlen=window)
        self.warned_at: int | None = None

    def observe(self, step: int, infos: list[dict]) -> str | None:
        """Add step `step`'s episodes (their reward_info); the warning line if one is due, else None."""
        graded = [i for i in infos if is_graded(i)]
        self.steps.append(_StepCounts(step, len(graded), sum(bool(i.get("suspicious")) for i in graded),
                                      sum(bool(i.get("grading_refused")) for i in graded),
                                      sum(is_flagged(i) for i in graded)))
        if self.warned_at is not None and step - self.warned_at < self.window:
            return None
        n, flagged = sum(c.graded for c in self.steps), sum(c.flagged for c in self.steps)
        if not n or flagged / n <= self.share:
            return None
        self.warned_at = step
        first = self.steps[0].step
        which = "; ".join(f"{v} {what}" for v, what in (
            (sum(c.suspicious for c in self.steps), "suspicious: rollout/suspicious_share"),
            (sum(c.refused for c in self.steps), "refused by the judge: rollout/refused_share")) if v)
        return (f"warning: {flagged} of {n} graded episodes of step{'s' if step > first else ''} "
                f"{first}{f'–{step}' if step > first else ''} ({flagged / n:.1%}) were flagged by the grader ({which}), "
                f"over {self.share:.0%}: the reward may be rising from hacks, not fixes")


def run_console() -> Console:
    """The run's console on stderr: on a terminal, rich's (wrapped to its width, with live bars); on a log file
    or a pipe, whole lines that never wrap (so `grep '^step'` finds every summary in full)."""
    console = Console(stderr=True)
    if not console.is_terminal:
        console.soft_wrap = True
    return console


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return v


def skip_reason(m: dict[str, float]) -> str | None:
    """Why a step took no optimizer step (None if it took one): no trainable group, or a non-finite gradient."""
    if not m.get("trainer/skipped_steps"):
        return None
    if "actor/grad_norm" in m:
        return f"gradient norm {m['actor/grad_norm']} is not finite"
    masked, zero_std = int(m.get("rollout/masked_episodes", 0)), m.get("rollout/zero_std_frac", 0)
    return (f"no trainable group: {masked} of {int(m.get('rollout/episodes', 0))} episodes masked, "
            f"{int(m.get('rollout/groups_sampled', 0))} groups sampled ({zero_std:.0%} dropped)")


def duration(seconds: float) -> str:
    """A rough human duration: '40 s', '12 min', '2.5 h'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def summary_line(step: int, m: dict[str, float]) -> str:
    """The one-line summary of step `step` printed under the progress bar (a skipped step says so, and why; a
    run of agent programs also shows the gateway's prefix-mismatch rate). The env's reward comes first; where the
    update trained on another one (a format reward, shaping), that one follows it."""
    phases = " ".join(f"{k[7:-2]} {v:.1f}s" for k, v in m.items() if k.startswith("timing/") and k.endswith("_s"))
    why = skip_reason(m)
    update = (f"SKIPPED ({why})" if why else f"loss {m.get('actor/loss', 0):+.4f}  "
              f"entropy {m.get('actor/entropy', 0):.3f}  clip {m.get('actor/pg_clipfrac', 0):.3f}")
    gateway = (f"prefix mismatch {m['gateway/prefix_mismatch_rate']:.1%}  "
               if "gateway/prefix_mismatch_rate" in m else "")  # agent programs behind the gateway
    reward, trained = m.get("rollout/reward_mean", 0), m.get("rollout/reward_trained_mean")
    shaped = f" (trained on {trained:.3f})" if trained is not None and abs(trained - reward) >= 5e-4 else ""
    return (
        f"step {step}: reward {reward:.3f}{shaped}  "
        f"kept {int(m.get('rollout/groups_kept', 0))}/{int(m.get('rollout/groups_sampled', 0))} groups  "
        f"{gateway}{update}  |  {phases}"
    )
