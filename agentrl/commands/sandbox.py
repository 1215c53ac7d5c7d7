"""Build, list and reap sandboxes; run one command in a fresh hardened sandbox.

  agentrl sandbox build [--name python] [--dockerfile] [--force]   build the image offline (debootstrap + import)
  agentrl sandbox ls                                               our images, containers and bwrap folders
  agentrl sandbox reap [--session ID]                              remove leftovers of dead owners / past TTL
  agentrl sandbox exec [--backend B] [--timeout S] -- CMD ...      run CMD, print its output, exit with its code
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Nested subcommands build / ls / reap / exec."""
    sub = parser.add_subparsers(dest="sandbox_command", metavar="ACTION", required=True)
    b = sub.add_parser("build", help="build the sandbox image (offline, cached by recipe hash)")
    b.add_argument("--name", default="python", help="recipe under sandboxes/images/ (default: python)")
    b.add_argument("--dockerfile", action="store_true",
                   help="build images/<name>/Dockerfile instead (needs a reachable registry)")
    b.add_argument("--force", action="store_true", help="rebuild even if the tag exists")
    sub.add_parser("ls", help="list agentrl images, containers and bwrap sandboxes")
    r = sub.add_parser("reap", help="remove sandboxes whose owner process is dead or whose TTL passed")
    r.add_argument("--session", help="remove every sandbox of this session id instead (live owner or not)")
    e = sub.add_parser("exec", help="run one command in a fresh hardened sandbox and exit with its code")
    e.add_argument("--backend", default="auto", help="auto | docker | bwrap | local (local: NO isolation)")
    e.add_argument("--timeout", type=float, default=30.0, help="seconds before the command is killed")
    e.add_argument("--image", default=None, help="docker image tag (default: the current agentrl/python tag)")
    e.add_argument("--memory-mb", type=int, default=1024, help="memory limit of the whole sandbox")
    e.add_argument("--cpus", type=float, default=1.0, help="CPU quota in cores")
    e.add_argument("--pids", type=int, default=256, help="process limit of the whole sandbox")
    e.add_argument("cmd", nargs=argparse.REMAINDER, help="the command, after --")


def run(args: argparse.Namespace) -> int:
    """Dispatch to the chosen action."""
    return {"build": _build, "ls": _ls, "reap": _reap, "exec": _exec}[args.sandbox_command](args)


def _build(args: argparse.Namespace) -> int:
    from agentrl.sandboxes.image import build_image

    build_image(args.name, dockerfile=args.dockerfile, force=args.force,
                log=lambda m: print(f"[sandbox build] {m}", flush=True))
    return 0


def _ls(args: argparse.Namespace) -> int:
    import json
    import time

    from agentrl.sandboxes import reaper
    from agentrl.sandboxes.docker_backend import DockerUnavailable, docker_client
    from agentrl.sandboxes.image import image_tag

    print(f"current image tag: {image_tag('python')}")
    try:
        client = docker_client()
    except DockerUnavailable as e:
        print(f"docker: {e}")
        client = None
    if client is not None:
        for img in client.api.images(filters={"label": "agentrl.owner=agentrl"}):
            print(f"image      {', '.join(img.get('RepoTags') or ['<none>'])}  {img['Size'] >> 20} MB")
        for c in client.api.containers(all=True, filters={"label": "agentrl.owner=agentrl"}):
            lb = c["Labels"]
            age = time.time() - float(lb.get("agentrl.created", time.time()))
            state = "orphan" if reaper.should_reap(lb) else "owned"
            print(f"container  {c['Id'][:12]}  {c['State']:<8} session={lb.get('agentrl.session')} "
                  f"pid={lb.get('agentrl.pid')} age={age:.0f}s {state}")
    if reaper.BWRAP_DIR.is_dir():
        for d in sorted(reaper.BWRAP_DIR.iterdir()):
            if (d / "owner.json").is_file():
                lb = json.loads((d / "owner.json").read_text())
                state = "orphan" if reaper.should_reap(lb) else "owned"
                record = d / reaper.CGROUP_RECORD
                cgroups = json.loads(record.read_text())["dirs"] if record.is_file() else {}
                where = sorted({str(p) for p in cgroups.values()})
                print(f"bwrap      {d.name}  pid={lb.get('agentrl.pid')} {state}"
                      f"  cgroup={' '.join(where) or 'none'}")
    return 0


def _reap(args: argparse.Namespace) -> int:
    from agentrl.sandboxes import reaper

    gone = reaper.reap(session=args.session)
    print(f"removed {len(gone)} sandbox(es){': ' + ' '.join(gone) if gone else ''}")
    return 0


def _exec(args: argparse.Namespace) -> int:
    from agentrl.errors import AgentRLError
    from agentrl.sandboxes import open_sandbox

    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise AgentRLError("no command given: agentrl sandbox exec -- CMD ...")
    # one argument is a shell line ("ls | wc"); several are an argv
    with open_sandbox(args.backend, image=args.image, timeout_s=args.timeout, memory_mb=args.memory_mb,
                      cpus=args.cpus, pids=args.pids) as sb:
        r = sb.exec(cmd[0] if len(cmd) == 1 else cmd)
    sys.stdout.buffer.write(r.raw)
    sys.stdout.flush()
    if r.timed_out:
        print(f"agentrl sandbox exec: timed out after {args.timeout:g} s", file=sys.stderr)
    return r.exit_code
