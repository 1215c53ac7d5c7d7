"""Link folders (sandboxes/link.py): a FIFO pair the host shares between two sandboxes carries lines both ways, the
folder is read-only inside, a third sandbox sees nothing of it, and closing removes the FIFOs and the folders."""

from __future__ import annotations

import pytest
from agentrl.sandboxes.dialogue import Dialogue
from sandbox_helpers import small_config

ECHO = ("import sys\nr = open(sys.argv[1] + '/req', 'rb')\nimport os\nw = os.open(sys.argv[1] + '/ans', os.O_WRONLY)\n"
        "for line in r:\n    os.write(w, b'got ' + line)\n")
ASK = ("import os, sys\nw = os.open(sys.argv[1] + '/req', os.O_WRONLY)\nr = open(sys.argv[1] + '/ans', 'rb')\n"
       "for i in range(3):\n    os.write(w, b'line %d\\n' % i)\n    sys.stdout.write(r.readline().decode())\n")


@pytest.fixture
def boxes(backend):
    from agentrl.sandboxes import sandbox_factory

    make = sandbox_factory(backend, small_config())
    made = [make() for _ in range(3)]
    try:
        yield made
    finally:
        for box in made:
            box.close()


def test_a_fifo_pair_joins_two_sandboxes_and_no_third(boxes):
    from agentrl.sandboxes.link import Pipes, linked

    a, b, other = boxes
    assert linked(a, b)
    pipes = Pipes(a, b, ["req", "ans"])
    echo = Dialogue()
    echo.start(lambda d: a.exec(["python3", "-c", ECHO, a.link_path], timeout=30, stdin=d))
    asked = b.exec(["python3", "-c", ASK, b.link_path], timeout=30)
    echo.abort()
    assert asked.output.splitlines() == ["got line 0", "got line 1", "got line 2"], asked.output
    inside = b.exec(f"ls {b.link_path}; touch {b.link_path}/x; mkfifo {b.link_path}/y", timeout=10)
    assert inside.output.split()[:2] == ["ans", "req"] and inside.exit_code != 0, inside.output
    assert "Read-only file system" in inside.output, inside.output
    assert other.exec(f"ls -A {other.link_path}", timeout=10).output.strip() == ""
    pipes.close()
    assert a.exec(f"ls -A {a.link_path}", timeout=10).output.strip() == ""
    assert not list(b.link_dir.iterdir())
    folder = a.link_dir
    a.close()
    assert not folder.exists()


def test_a_name_that_leaves_the_folder_is_refused(boxes):
    from agentrl.sandboxes.link import Pipes

    a, b, _ = boxes
    for name in ("../x", ".hidden", "a/b"):
        with pytest.raises(ValueError):
            Pipes(a, b, [name])
    assert not list(a.link_dir.iterdir()) and not list(b.link_dir.iterdir())


def test_the_link_root_of_a_killed_owner_is_reaped(backend):
    """A process killed with -9 runs no exit cleanup; the next reap removes its docker link root with its container."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from agentrl.sandboxes import reaper

    if backend != "docker":
        pytest.skip("bwrap's link folder lives in its sandbox folder, reaped with it")
    code = ("import os\nfrom agentrl.sandboxes import open_sandbox\nsb = open_sandbox('docker')\n"
            "print(sb.link_dir.parent, flush=True)\nos.kill(os.getpid(), 9)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180).stdout
    root = Path(out.strip())
    assert root.parent == reaper.LINKS_DIR and (root / "owner.json").is_file(), out
    reaper.reap()
    assert not root.exists()
    assert os.path.isdir(reaper.LINKS_DIR)
