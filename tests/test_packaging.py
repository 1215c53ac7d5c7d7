"""The wheel carries everything an installed `agentrl` needs: every module of the source tree (the CLI's
`agentrl.commands` was once missing) and the presets, which load from the installed package."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_has_every_module_and_the_presets_load_from_it(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path / "dist")], check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("agentrl-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = {f"agentrl/{p.relative_to(ROOT / 'agentrl').as_posix()}" for p in (ROOT / "agentrl").rglob("*.py")}
    assert sources - names == set()
    presets = {f"agentrl/configs/{p.name}" for p in (ROOT / "configs").glob("*.yaml")}
    assert presets and presets - names == set()

    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
                   check=True, capture_output=True)
    probe = ("import agentrl, agentrl.cli, agentrl.commands.train; from agentrl.config import CONFIG_DIR, load_config; "
             "print(agentrl.__file__); print(CONFIG_DIR); print(load_config('calc').rollout.max_new_tokens)")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True,
                         env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}, cwd=tmp_path).stdout.split()
    assert out[0].startswith(str(site)) and out[1] == str(site / "agentrl" / "configs"), out
    assert int(out[2]) > 0
