"""The pinned packages: enough of them, permissive licences, sha256-checked, snapshots that keep tests and licences."""

from __future__ import annotations

import hashlib
import re

import agentrl.envs.swe.real.packages as packages
import pytest
from agentrl.envs.swe.real.packages import PackageError, load_packages, snapshot_files

PERMISSIVE = {"MIT", "BSD-3-Clause", "BSD-2-Clause", "Apache-2.0", "ISC"}


def test_at_least_ten_pinned_permissive_packages_split_by_package():
    pkgs = load_packages()
    assert len(pkgs) >= 10
    assert len({p.name for p in pkgs}) == len(pkgs) and len({p.repo for p in pkgs}) == len(pkgs)
    for p in pkgs:
        assert p.license in PERMISSIVE, p.name
        assert re.fullmatch(r"[0-9a-f]{64}", p.sha256), p.name
        assert p.url.endswith(f"{p.version}.tar.gz"), p.name
        assert p.split in ("train", "dev", "test")
    assert {p.split for p in pkgs} == {"train", "dev", "test"}


def test_snapshots_keep_sources_tests_licence_and_our_pytest_ini(cache_ready):
    for p in load_packages():
        files = snapshot_files(p)
        assert any(f.split("/")[-1].upper().startswith(("LICENSE", "MIT-LICENSE")) for f in files), p.name
        assert any(f.startswith(t) and f.endswith(".py") for t in p.tests for f in files), p.name
        assert any(f.startswith(s) and f.endswith(".py") for s in p.source for f in files), p.name
        assert files["pytest.ini"] == f"[pytest]\npythonpath = {p.pythonpath}\n"
        assert not any("__pycache__" in f or f.endswith(".pyc") for f in files)


def test_a_cached_sdist_with_the_wrong_bytes_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTRL_CACHE", str(tmp_path))
    pkg = load_packages()[0]
    bad = packages.sdist_path(pkg)
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"not the pinned sdist")
    assert hashlib.sha256(bad.read_bytes()).hexdigest() != pkg.sha256
    with pytest.raises(PackageError, match="does not match its pinned sha256"):
        packages.download(pkg)
    assert packages.missing() == [p.name for p in load_packages()]


def test_offline_check_names_what_is_missing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("AGENTRL_CACHE", str(tmp_path))
    assert packages.main(["--offline"]) == 1
    assert "swe_real cache lacks: " + load_packages()[0].name in capsys.readouterr().out


def test_unknown_package_names_the_pinned_ones():
    with pytest.raises(PackageError, match="known are click, inflection"):
        packages.package_named("inflexion")


def test_a_snapshot_made_for_other_tests_or_keep_is_rebuilt(cache_ready, tmp_path, monkeypatch):
    """The folder's stamp covers what packages.json keeps, so narrowing a package's `tests` (as click's are) gives
    a folder without the dropped files instead of the stale one (which would no longer match the task records)."""
    import dataclasses
    import shutil

    pkg = next(p for p in load_packages() if p.name == "click")
    cached = packages.sdist_path(pkg)
    monkeypatch.setenv("AGENTRL_CACHE", str(tmp_path))
    packages.sdist_path(pkg).parent.mkdir(parents=True)
    shutil.copy(cached, packages.sdist_path(pkg))
    wide = dataclasses.replace(pkg, tests=("tests",))
    folder = packages.snapshot(wide, log=lambda *_: None)
    assert (folder / "tests/test_termui.py").is_file() and packages.missing([wide]) == []
    assert packages.missing([pkg]) == ["click"]  # same sdist, other tests: not what the cache holds
    assert packages.snapshot(pkg, log=lambda *_: None) == folder
    assert not (folder / "tests/test_termui.py").exists() and (folder / "tests/conftest.py").is_file()
    assert packages.missing([pkg]) == []
