"""Sandbox image builder: a minimal Debian rootfs (python3, pytest, git) built offline and imported into Docker.

Docker Hub is not reachable on the machines this is built on, but the Debian package mirror is, so the default
build is `debootstrap --variant=minbase` from the apt mirror followed by `docker import`. The image is tagged
`agentrl/<name>:<hash of the recipe folder>`, so an unchanged recipe is never rebuilt and an edited one gets a
new tag. The unpacked rootfs stays in the cache: the bubblewrap backend mounts it read-only as its `/`.
`dockerfile=True` builds `images/<name>/Dockerfile` instead (needs a reachable registry).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agentrl.sandboxes.docker_engine import docker_client

from agentrl.errors import AgentRLError

BUILDER_VERSION = "1"  # bump when this file changes what ends up in the image
IMAGES_DIR = Path(__file__).parent / "images"
_COMPLETE = ".agentrl-rootfs-complete"


class ImageMissing(AgentRLError):
    """The sandbox image is not built (run `agentrl sandbox build`)."""


class ImageBuildError(AgentRLError):
    """Building the sandbox image failed; the message names the step and its log."""


def recipe_dir(name: str = "python") -> Path:
    """The folder holding recipe.json and Dockerfile for image `name`."""
    d = IMAGES_DIR / name
    if not (d / "recipe.json").is_file():
        known = sorted(p.name for p in IMAGES_DIR.iterdir() if (p / "recipe.json").is_file())
        raise ImageMissing(f"no sandbox image recipe named {name!r}: known recipes are {known}")
    return d


def load_recipe(name: str = "python") -> dict:
    """The parsed recipe.json of image `name`."""
    return json.loads((recipe_dir(name) / "recipe.json").read_text())


def recipe_hash(name: str = "python") -> str:
    """12 hex digits over the builder version and every file of the recipe folder (names and bytes)."""
    h = hashlib.sha256(f"builder={BUILDER_VERSION}\n".encode())
    d = recipe_dir(name)
    for p in sorted(d.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(d)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def image_tag(name: str = "python") -> str:
    """The Docker tag the current recipe of `name` builds, e.g. agentrl/python:3f2a9c01b7de."""
    return f"agentrl/{name}:{recipe_hash(name)}"


def cache_dir() -> Path:
    """Where rootfs trees are kept: $AGENTRL_CACHE, else /var/cache/agentrl as root, else ~/.cache/agentrl.

    It must be traversable by the unprivileged uids the bwrap backend runs as, hence not under /root.
    """
    if os.environ.get("AGENTRL_CACHE"):
        return Path(os.environ["AGENTRL_CACHE"])
    return Path("/var/cache/agentrl") if os.geteuid() == 0 else Path.home() / ".cache" / "agentrl"


def rootfs_path(name: str = "python") -> Path:
    """The unpacked rootfs of the current recipe (it may not exist yet; see `rootfs_ready`)."""
    return cache_dir() / "rootfs" / f"{name}-{recipe_hash(name)}"


def rootfs_ready(name: str = "python") -> bool:
    """True when the rootfs of the current recipe is fully built."""
    return (rootfs_path(name) / _COMPLETE).exists()


def debian_mirror() -> str:
    """The Debian mirror of this machine's apt sources (deb822 or one-line format), else deb.debian.org."""
    for src in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        uris = suites = None
        for line in Path(src).read_text().splitlines() + [""]:
            if line.startswith("URIs:"):
                uris = line.split()[1]
            elif line.startswith("Suites:"):
                suites = line.split()[1:]
            elif not line.strip() and uris:
                if suites and not any("security" in s for s in suites) and "security" not in uris:
                    return uris
                uris = suites = None
    for src in ["/etc/apt/sources.list", *sorted(glob.glob("/etc/apt/sources.list.d/*.list"))]:
        if os.path.exists(src):
            for line in Path(src).read_text().splitlines():
                parts = line.split()
                if len(parts) >= 3 and parts[0] == "deb" and "security" not in parts[1]:
                    return parts[1] if not parts[1].startswith("[") else parts[2]
    return "http://deb.debian.org/debian"


def _run(cmd: list[str], log_path: Path, step: str) -> None:
    """Run one build step, appending its output to the build log; raise ImageBuildError naming the step."""
    with open(log_path, "ab") as log:
        log.write(f"\n$ {' '.join(cmd)}\n".encode())
        log.flush()
        rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
    if rc != 0:
        tail = log_path.read_text(errors="replace").splitlines()[-8:]
        raise ImageBuildError(f"{step} failed (exit {rc}); log {log_path}:\n  " + "\n  ".join(tail))


def build_rootfs(name: str = "python", log: Callable[[str], None] = print) -> Path:
    """debootstrap the recipe into the cache (skipped when already complete) and return its path."""
    root = rootfs_path(name)
    if rootfs_ready(name):
        return root
    if os.geteuid() != 0:
        raise ImageBuildError("building the sandbox rootfs needs root (debootstrap): run 'make setup' as root")
    if shutil.which("debootstrap") is None:
        raise ImageBuildError("debootstrap is not installed: run 'apt-get install debootstrap' (or 'make setup')")
    recipe = load_recipe(name)
    root.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(cache_dir(), 0o755)
    tmp = root.with_name(root.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    log_path = root.with_name(root.name + ".log")
    log_path.write_text("")
    mirror = debian_mirror()
    log(f"debootstrap {recipe['suite']} ({recipe['variant']}, +{','.join(recipe['packages'])}) from {mirror}"
        f" into {tmp} (about 90 s; log {log_path})")
    t0 = time.monotonic()
    _run(["debootstrap", f"--variant={recipe['variant']}", f"--include={','.join(recipe['packages'])}",
          recipe["suite"], str(tmp), mirror], log_path, "debootstrap")
    for pattern in recipe.get("prune", []):
        for p in glob.glob(str(tmp / pattern)):
            shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)
    uid = int(recipe["agent_uid"])
    with open(tmp / "etc/passwd", "a") as f:
        f.write(f"agent:x:{uid}:{uid}:agentrl sandbox agent:/tmp:/bin/bash\n")
    with open(tmp / "etc/group", "a") as f:
        f.write(f"agent:x:{uid}:\n")
    (tmp / "workspace").mkdir(exist_ok=True)  # mount point for docker tmpfs and bwrap --bind
    (tmp / _COMPLETE).write_text(f"{recipe_hash(name)}\n")
    os.chmod(tmp, 0o755)
    tmp.rename(root)
    log(f"rootfs ready in {time.monotonic() - t0:.0f} s: {root}")
    return root


def image_exists(tag: str) -> bool:
    """True when the Docker engine has `tag`."""
    import docker

    try:
        docker_client().images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def _export_rootfs(tag: str, name: str, log: Callable[[str], None]) -> None:
    """Recreate the cached rootfs from an existing image (for bwrap) via `docker export` of a never-started container."""
    root = rootfs_path(name)
    tmp = root.with_name(root.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    client = docker_client()
    container = client.containers.create(tag, command=["true"], labels={"agentrl.owner": "agentrl"})
    try:
        tar = subprocess.Popen(["tar", "-x", "--numeric-owner", "-C", str(tmp)], stdin=subprocess.PIPE)
        for chunk in container.export():
            tar.stdin.write(chunk)
        tar.stdin.close()
        if tar.wait() != 0:
            raise ImageBuildError(f"unpacking the export of {tag} failed")
    finally:
        container.remove(force=True)
    (tmp / _COMPLETE).write_text(f"{recipe_hash(name)}\n")
    os.chmod(tmp, 0o755)
    tmp.rename(root)
    log(f"rootfs exported from {tag} to {root}")


def build_image(name: str = "python", *, dockerfile: bool = False, force: bool = False,
                log: Callable[[str], None] = print) -> str:
    """Build (or find) the image of recipe `name`; return its tag. Idempotent: an existing tag is only checked."""
    tag = image_tag(name)
    if not force and image_exists(tag):
        if os.geteuid() == 0 and not rootfs_ready(name):
            _export_rootfs(tag, name, log)
        log(f"{tag} is up to date")
        return tag
    client = docker_client()
    t0 = time.monotonic()
    labels = {"agentrl.owner": "agentrl", "agentrl.recipe": recipe_hash(name)}
    if dockerfile:
        import docker

        log(f"building {tag} from {recipe_dir(name) / 'Dockerfile'} (needs a reachable registry)")
        try:
            client.images.build(path=str(recipe_dir(name)), tag=tag, rm=True, forcerm=True, labels=labels)
        except (docker.errors.BuildError, docker.errors.APIError) as e:
            raise ImageBuildError(f"docker build of {tag} failed ({e}); without a registry, drop --dockerfile "
                                  "to build offline with debootstrap") from e
    else:
        root = build_rootfs(name, log)
        changes = ["ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "ENV LANG=C.UTF-8",
                   "ENV HOME=/tmp", "WORKDIR /workspace", 'CMD ["/bin/bash"]',
                   *[f"LABEL {k}={v}" for k, v in labels.items()]]
        with tempfile.TemporaryDirectory(dir=root.parent) as td:
            tar_path = Path(td) / "rootfs.tar"
            _run(["tar", "-C", str(root), "--numeric-owner", f"--exclude=./{_COMPLETE}", "-cf", str(tar_path), "."],
                 root.with_name(root.name + ".log"), "tar of the rootfs")
            repo, _, version = tag.partition(":")
            client.api.import_image(src=str(tar_path), repository=repo, tag=version, changes=changes)
    log(f"built {tag} in {time.monotonic() - t0:.0f} s")
    return tag


def require_image(tag: str) -> str:
    """Return `tag` if the engine has it, else raise ImageMissing naming the command that builds it."""
    if not image_exists(tag):
        raise ImageMissing(f"sandbox image {tag} not found: run 'agentrl sandbox build'")
    return tag
