"""Serve a model over HTTP with SGLang's native API (embedded engine), or print/launch the SGLang command.

  agentrl serve --model smollm2-135m-instruct --port 30000            # embedded engine, CPU
  agentrl serve --backend sglang --model /ckpt/step-100 --port 30000  # on a GPU machine with SGLang installed
  agentrl serve --backend sglang --model /ckpt/step-100 --print-only  # just print the launch command

Both answer the same client (agentrl.engine.sglang_client.SGLangClient); see examples/sglang_gpu.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import sys

from agentrl.errors import AgentRLError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options for both backends, then SGLang-only ones."""
    parser.add_argument("--model", default="smollm2-135m-instruct", help="model alias, HF directory or hub id")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback only)")
    parser.add_argument("--port", type=int, default=30000, help="port (0 = any free port; SGLang's default 30000)")
    parser.add_argument("--backend", choices=("embedded", "sglang"), default="embedded",
                        help="embedded: serve here with transformers; sglang: launch a real SGLang server")
    parser.add_argument("--api-key", default=None,
                        help="require 'Authorization: Bearer KEY' on /generate and info endpoints (SGLang's flag)")
    parser.add_argument("--admin-api-key", default=None,
                        help="require this key (instead of --api-key) on control endpoints: pause, continue, "
                             "weight updates, abort, flush (SGLang's flag)")
    g = parser.add_argument_group("embedded backend")
    g.add_argument("--dtype", default="float32", help="float32 | bfloat16")
    g.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ...")
    g.add_argument("--seed", type=int, default=None, help="engine RNG seed for requests without sampling_seed")
    g.add_argument("--max-batch-size", type=int, default=64, help="most requests decoded together")
    g = parser.add_argument_group("sglang backend")
    g.add_argument("--tp-size", type=int, default=1, help="tensor-parallel GPUs per server")
    g.add_argument("--mem-fraction-static", type=float, default=None,
                   help="GPU memory share for weights + KV cache (lower it when a trainer shares the GPU)")
    g.add_argument("--deterministic", action="store_true",
                   help="--enable-deterministic-inference (batch-invariant kernels, per-request sampling_seed)")
    g.add_argument("--sglang-args", default="", help="extra flags passed verbatim, e.g. '--disable-radix-cache'")
    g.add_argument("--print-only", action="store_true", help="print the SGLang command and exit")


def sglang_command(args: argparse.Namespace) -> list[str]:
    """The `python -m sglang.launch_server` argv matching args (weight version starts at 0, as agentrl counts)."""
    from agentrl.models import resolve

    kind, target = resolve(args.model)
    if kind == "tiny":
        raise AgentRLError("the 'tiny' test model has no weights on disk for SGLang; save it with "
                           "save_pretrained() and pass that directory, or use the embedded backend")
    cmd = [sys.executable, "-m", "sglang.launch_server", "--model-path", target, "--host", args.host,
           "--port", str(args.port), "--tp-size", str(args.tp_size), "--weight-version", "0"]
    if args.mem_fraction_static is not None:
        cmd += ["--mem-fraction-static", str(args.mem_fraction_static)]
    if args.deterministic:
        cmd += ["--enable-deterministic-inference"]
    if args.api_key:
        cmd += ["--api-key", args.api_key]
    if args.admin_api_key:
        cmd += ["--admin-api-key", args.admin_api_key]
    return cmd + shlex.split(args.sglang_args)


def run(args: argparse.Namespace) -> int:
    """Serve with the embedded engine until interrupted, or print and exec the SGLang server."""
    if args.backend == "sglang":
        cmd = sglang_command(args)
        print(shlex.join(cmd), flush=True)
        if args.print_only:
            return 0
        if importlib.util.find_spec("sglang") is None:
            raise AgentRLError(
                "SGLang is not installed in this environment. It needs a CUDA GPU machine: "
                "pip install 'sglang[all]' there and run the command above (see examples/sglang_gpu.md)"
            )
        os.execv(cmd[0], cmd)  # replaces this process: signals and exit status are SGLang's own
    import asyncio

    from agentrl.engine.serve import serve_forever

    asyncio.run(serve_forever(args.model, args.host, args.port, dtype=args.dtype, device=args.device,
                              seed=args.seed, max_batch_size=args.max_batch_size, api_key=args.api_key,
                              admin_api_key=args.admin_api_key))
    return 0


if __name__ == "__main__":  # `python -m agentrl.commands.serve ...` works before the CLI lists the command
    _parser = argparse.ArgumentParser(prog="agentrl serve", description=__doc__)
    add_arguments(_parser)
    try:
        sys.exit(run(_parser.parse_args()))
    except AgentRLError as e:
        print(f"agentrl serve: error: {e}", file=sys.stderr)
        sys.exit(2)
