"""SIGTERM during a real `agentrl train --env swe_lite` run: no container of the run outlives the process, and the
run says how to resume, as Ctrl-C does (guards containers still `Created` at the signal, which started afterwards
and ran under the dead pid until their TTL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SWE_TINY = ["model.name=tiny", "sft.episodes=0", "rollout.tasks_per_step=2", "rollout.group_size=2",
            "rollout.max_new_tokens=8", "rollout.max_turns=1", "rollout.concurrency=8", "trainer.steps=50",
            "trainer.tensorboard=false", "trainer.eval_episodes=0", "trainer.checkpoint_every=1",
            "trainer.sample_every=0", "env.kwargs.backend=docker"]


@pytest.fixture(scope="module")
def docker():
    """The shared docker client, or skip where no engine answers or the sandbox image is not built."""
    from agentrl.sandboxes.docker_backend import docker_client
    from agentrl.sandboxes.image import image_exists, image_tag

    try:
        client = docker_client(ping_timeout=3.0)
    except Exception as e:
        pytest.skip(f"needs Docker: {e}")
    if not image_exists(image_tag()):
        pytest.skip(f"{image_tag()} is not built (agentrl sandbox build)")
    return client


def _listed(session: str) -> list[str]:
    """`docker ps -a` of the run's session label: every container of the run, in any state."""
    out = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=agentrl.session={session}"],
                         capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.split()


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("moment", ["preflight", "pool_filling", "training"])
def test_sigterm_during_a_swe_lite_run_leaves_no_container_and_says_how_to_resume(tmp_path, docker, moment):
    """SIGTERM at three moments: while the preflight's sandbox is made in the main thread, while the warm pool is
    being filled by worker threads (containers still `Created`), and mid-training after a checkpoint."""
    session = f"sigterm-{uuid.uuid4().hex[:10]}"
    run, log = tmp_path / "run", tmp_path / "stderr.txt"
    argv = [sys.executable, "-m", "agentrl", "train", "--env", "swe_lite", *SWE_TINY, f"trainer.run_dir={run}"]
    env = {**os.environ, "AGENTRL_SANDBOX_SESSION": session, "PYTHONUNBUFFERED": "1"}
    flt = {"label": [f"agentrl.session={session}"]}
    with open(log, "w") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=REPO)
    try:
        deadline, seen = time.monotonic() + 300, []
        while proc.poll() is None and time.monotonic() < deadline:
            text = log.read_text()
            started = "agentrl train swe_lite" in text  # printed after preflight, before the pool is made
            if moment == "training":
                if (run / "checkpoints" / "step_000001").is_dir():
                    seen = docker.api.containers(all=True, filters=flt)
                    break
            elif (moment == "preflight") != started and (seen := docker.api.containers(all=True, filters=flt)):
                break
            time.sleep(0.02)
        assert proc.poll() is None and seen, f"never reached the moment {moment}: {log.read_text()[-2000:]}"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=180)
        left = _listed(session)  # at once: "once the process exits", not after a grace period
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for cid in _listed(session):
            subprocess.run(["docker", "rm", "-f", cid], capture_output=True)
    err = log.read_text()
    states = sorted(c["State"] for c in seen)
    assert not left, f"SIGTERM at {moment} (containers then: {states}) left {len(left)} behind: {left}"
    assert proc.returncode == 143, err[-2000:]
    assert "Traceback" not in err, err[-3000:]
    if moment == "training":
        assert f"agentrl train: terminated (SIGTERM); run {run}: continue from its last checkpoint with: " \
               f"agentrl train --resume {run}" in " ".join(err.split()), err[-2000:]
    else:
        assert f"agentrl train: terminated (SIGTERM); run {run}: no checkpoint was written yet" in err, err[-2000:]
