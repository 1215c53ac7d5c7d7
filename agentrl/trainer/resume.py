"""Resume = the run's own resolved config.yaml + its latest (or a named) checkpoint.

`agentrl train --resume RUN` reads RUN/config.yaml, not the env preset or the defaults, so a bare resume
continues exactly the run that was started. Overrides on resume are allowed only for keys that cannot change
what the continuation computes (how long to train, logging, checkpoint and eval cadence, local threads);
anything else is refused with the key named, since it would silently make a different run under the old name.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import yaml

from agentrl.errors import ConfigError

SAFE_ON_RESUME = (
    "trainer.steps", "trainer.checkpoint_every", "trainer.keep_checkpoints", "trainer.sample_every",
    "trainer.eval_every", "trainer.eval_episodes", "trainer.tensorboard", "model.threads", "rollout.urls",
    "rollout.concurrency", "cluster.address", "trainer.run_dir", "trainer.max_train_s", "trainer.mmap_threshold",
    "trainer.ranks",  # a sharded run resumes at another world size (DCP re-shards: docs/distributed.md)
)
"""Keys that may change when a run is resumed (the rest must equal the run's config.yaml)."""


def run_dir_of(resume: str | Path) -> Path:
    """The run directory of `--resume RUN` or `--resume RUN/checkpoints/step_N`."""
    path = Path(resume)
    run = path.parent.parent if path.parent.name == "checkpoints" else path
    if not run.is_dir():
        raise ConfigError(f"--resume {resume}: no such run directory")
    return run


def _is_safe(key: str) -> bool:
    return any(key == k or key.startswith(k + ".") for k in SAFE_ON_RESUME)


def resume_config(resume: str | Path, overrides: list[str] = (), *, env: str | None = None,
                  config_file: str | None = None):
    """The config to resume with: RUN/config.yaml plus the (safe) overrides; refuses everything else by name."""
    from agentrl.config import load_config, parse_override

    run = run_dir_of(resume)
    saved = run / "config.yaml"
    if not saved.is_file():
        raise ConfigError(f"--resume {resume}: {saved} is missing, so the run's settings are unknown")
    if config_file is not None:
        raise ConfigError(f"--resume takes the run's own settings from {saved}; drop --config {config_file}")
    name = (yaml.safe_load(saved.read_text()) or {}).get("env", {}).get("name")
    if env is not None and env != name:
        raise ConfigError(f"--resume {resume}: the run trains env {name!r}, not --env {env!r}; drop --env")
    refused = [".".join(parse_override(o)[0]) for o in overrides if not _is_safe(".".join(parse_override(o)[0]))]
    if refused:
        raise ConfigError(f"{', '.join(refused)} cannot change on resume (the run's value is in {saved}); "
                          f"keys that can: {', '.join(SAFE_ON_RESUME)}. Start a new run to change the rest")
    return load_config(None, saved, list(overrides))


def check_resumable(cfg, run_dir: Path) -> None:
    """Refuse to resume `run_dir` with a config that differs from its config.yaml in a key outside SAFE_ON_RESUME."""
    saved = run_dir / "config.yaml"
    if not saved.is_file():
        return
    from agentrl.config import dump_config

    old, new = yaml.safe_load(saved.read_text()) or {}, yaml.safe_load(dump_config(cfg))
    changed = [k for k in _diff(old, new) if not _is_safe(k)]
    if changed:
        raise ConfigError(f"resuming {run_dir} with different {', '.join(changed)} than its config.yaml; "
                          "resume with the run's own config (agentrl train --resume RUN) or start a new run")


def _diff(a: dict, b: dict, prefix: str = "") -> list[str]:
    keys = []
    for k in sorted(set(a) | set(b)):
        x, y, path = a.get(k), b.get(k), f"{prefix}{k}"
        if isinstance(x, dict) and isinstance(y, dict) and not path.endswith("kwargs"):
            keys += _diff(x, y, path + ".")
        elif x != y:
            keys.append(path)
    return keys


def rewind_logs(run_dir: Path, done: int) -> int:
    """Drop what the run logged after its checkpoint `done` (steps done + 1 ... are trained again on resume):
    metrics.jsonl rows with "step" > done, trajectories.jsonl rows with train/step > done, samples/step_N*.txt
    with N > done, and a torn last line. Returns how many log rows were dropped. Each file is rewritten beside
    itself and moved into place, so a crash here leaves the old file whole."""
    dropped = _rewind_jsonl(run_dir / "metrics.jsonl", lambda row: row.get("step"), done)
    dropped += _rewind_jsonl(run_dir / "trajectories.jsonl",
                             lambda row: (row.get("metrics") or {}).get("train/step"), done)
    for sample in (run_dir / "samples").glob("step_*.txt"):
        if (m := re.match(r"step_(\d+)", sample.name)) and int(m.group(1)) > done:
            sample.unlink()
    return dropped


def _rewind_jsonl(path: Path, step_of, done: int) -> int:
    """Keep the rows of `path` whose step (step_of(row); rows without one stay) is at most `done`."""
    if not path.is_file():
        return 0
    kept = dropped = 0
    tmp = path.with_name(path.name + ".rewind")
    with open(path, "rb") as src, open(tmp, "wb") as dst:
        for line in src:
            try:
                row = json.loads(line)
                step = step_of(row) if isinstance(row, dict) else None
            except ValueError:  # a line torn by the crash the run resumes from
                row, step = None, None
            if row is None or (isinstance(step, (int, float)) and step > done):
                dropped += 1
                continue
            dst.write(line if line.endswith(b"\n") else line + b"\n")
            kept += 1
    if dropped:
        os.replace(tmp, path)
    else:
        tmp.unlink()
    return dropped
