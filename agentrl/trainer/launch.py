"""`trainer.ranks=N` on this machine: agentrl starts the N ranks of a sharded run itself.

`agentrl train --env calc trainer.strategy=fsdp trainer.ranks=2` runs what `torchrun --standalone
--nproc-per-node 2 -m agentrl train ...` runs (PyTorch's own elastic launcher, rendezvous on loopback, no
restarts), with two differences a user sees: a rank that exits non-zero is reported in one line, not by the
launcher's ChildFailedError traceback and report, and the exit status is that rank's own (1 for "no step
trained", 143 after SIGTERM). Rank 0 says why in its own lines above it. Several machines still use torchrun
(docs/distributed.md); under torchrun or Ray every process is already a rank and this module is not used.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
import tempfile
import uuid

LAUNCHED = "AGENTRL_RANKS"
"""Set, to the number of ranks, in the environment of the ranks that launch() starts."""


def launch(ranks: int, argv: list[str], *, command: str = "train") -> int:
    """Run `python -m agentrl <argv>` as `ranks` processes of one group on this machine; returns the exit status:
    0, or the first failed rank's status (128 + N for a rank killed by signal N) after one line naming it. Each
    rank runs the launcher's own command line: it sees trainer.ranks=N but, started by a launcher, joins the
    group instead of launching again (distributed.under_launcher)."""
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import elastic_launch
    from torch.distributed.run import config_from_args, parse_args

    # torchrun's own settings for one machine (--standalone): a c10d store on a free loopback port, no restarts
    # (a restarted group would need --resume), the ranks' output passed through as it comes
    targs = parse_args(["--standalone", "--nproc-per-node", str(ranks), "--max-restarts", "0", "-m", "agentrl", *argv])
    targs.rdzv_backend, targs.rdzv_endpoint, targs.rdzv_id = "c10d", "localhost:0", str(uuid.uuid4())
    targs.master_port = targs.master_port or 29500
    # the launcher's per-rank log folders (empty: the output is passed through) in one folder removed at the end,
    # not a torchelastic_* folder left in the system's temp folder by every run
    targs.log_dir = logs = tempfile.mkdtemp(prefix="agentrl-ranks-")
    # torchrun sets one thread per rank, with a banner; set it quietly, sharing the cores among the ranks
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // ranks)))
    os.environ[LAUNCHED] = str(ranks)
    config, cmd, cmd_args = config_from_args(targs)
    saved = _quiet()
    try:
        elastic_launch(config=config, entrypoint=cmd)(*cmd_args)
    except ChildFailedError as e:
        rank, failure = e.get_first_failure()
        status = failure.exitcode if failure.exitcode >= 0 else 128 - failure.exitcode
        if status in (130, 143):  # a stopped rank: rank 0 already said how to continue
            return status
        how = (f"was killed by {signal.Signals(-failure.exitcode).name}" if failure.exitcode < 0
               else f"exited with status {status}")
        print(f"agentrl {command}: rank {rank} of {ranks} {how} (the lines above say why); the run's other ranks "
              "were stopped", file=sys.stderr)
        return status
    except SignalException as e:  # the launcher itself was stopped (Ctrl-C, SIGTERM): the ranks were too
        return 128 + int(e.sigval)
    finally:
        for logger, level in saved:
            logger.setLevel(level)
        shutil.rmtree(logs, ignore_errors=True)
    return 0


def _quiet() -> list[tuple[logging.Logger, int]]:
    """Silence the launcher's own log lines (a failed rank's line, the death-signal warning): every torch elastic
    logger sets its own level, so each is raised to CRITICAL; returns what to restore."""
    saved = []
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and name.startswith(("torch.distributed.elastic", "torch.distributed.launcher",
                                                                   "torch.distributed.run")):
            saved.append((logger, logger.level))
            logger.setLevel(logging.CRITICAL)
    return saved


def launched_here() -> bool:
    """True in a rank that `trainer.ranks=N` started on this machine (not torchrun or Ray): `agentrl train --resume
    RUN` starts the ranks again."""
    return os.environ.get(LAUNCHED, "").isdigit()
