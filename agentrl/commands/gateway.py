"""Serve the OpenAI-compatible session gateway in front of a model, to record an existing agent token-in/token-out.

  agentrl gateway --model smollm2-135m-instruct --port 8000            # embedded engine, CPU
  agentrl gateway --model /ckpt/step-100 --engine-url http://gpu:30000 # SGLang servers (tokenizer from --model)
  curl -X POST localhost:8000/sessions        # {"id", "base_url", "api_key"}: point the agent at base_url
  curl localhost:8000/sessions/ID             # the session's record: segments, turns, gateway metrics

Training starts its own gateway (`agentrl train --env external:my_agent.py:run`); this command is for
recording or serving sessions outside a training run. See docs/gateway.md.
"""

from __future__ import annotations

import argparse
import sys

from agentrl.errors import AgentRLError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Model, engine and server options."""
    parser.add_argument("--model", default="smollm2-135m-instruct",
                        help="model alias, HF directory or hub id (its tokenizer and chat template are used)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback only)")
    parser.add_argument("--port", type=int, default=8000, help="port (0 = any free port)")
    parser.add_argument("--engine-url", action="append", default=None, metavar="URL",
                        help="SGLang (or agentrl serve) server to generate with; repeat for several (default: "
                             "an embedded engine in this process)")
    parser.add_argument("--engine-api-key", default=None, help="bearer key of the --engine-url servers")
    parser.add_argument("--admin-api-key", default=None,
                        help="require 'Authorization: Bearer KEY' on the session routes (/sessions)")
    parser.add_argument("--temperature", type=float, default=1.0, help="default sampling temperature")
    parser.add_argument("--max-new-tokens", type=int, default=1024, help="default and cap of a call's max_tokens")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"], help="embedded engine dtype")
    parser.add_argument("--device", default="cpu", help="embedded engine: cpu, cuda, cuda:1, ...")
    parser.add_argument("--seed", type=int, default=None, help="embedded engine RNG seed")


async def serve(args: argparse.Namespace) -> None:
    """Load the tokenizer and engine, serve the gateway until SIGINT/SIGTERM; prints the URL when ready."""
    import asyncio
    import signal

    from agentrl.config import Config, ModelConfig, RolloutConfig
    from agentrl.engine.build import build_engine
    from agentrl.engine.protocol import SamplingParams
    from agentrl.engine.serve import check_listenable, listen_error
    from agentrl.gateway import Gateway
    from agentrl.models import load_tokenizer
    from agentrl.rollout.chat import ChatRenderer

    check_listenable(args.host, args.port)  # before the model loads
    tokenizer = load_tokenizer(args.model)
    renderer = ChatRenderer(tokenizer)
    run_cfg = Config(model=ModelConfig(name=args.model, device=args.device),
                     rollout=RolloutConfig(engine_dtype=args.dtype))
    engine = await asyncio.to_thread(build_engine, run_cfg, tokenizer=tokenizer, urls=args.engine_url,
                                     api_key=args.engine_api_key, seed=args.seed)
    gateway = Gateway(engine, renderer, model_name=args.model, admin_api_key=args.admin_api_key,
                      sampling=SamplingParams(temperature=args.temperature, max_new_tokens=args.max_new_tokens))
    try:
        try:
            url = await gateway.start(args.host, args.port)
        except OSError as e:  # taken between the check and now
            raise AgentRLError(listen_error(args.host, args.port, e)) from None
        print(f"agentrl gateway: listening on {url} (model {args.model}); open a session with POST {url}/sessions",
              flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await gateway.close()
        await engine.close()


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    import asyncio

    if args.max_new_tokens < 1:
        raise AgentRLError(f"--max-new-tokens must be at least 1, got {args.max_new_tokens}")
    asyncio.run(serve(args))
    return 0


if __name__ == "__main__":  # `python -m agentrl.commands.gateway ...`
    _parser = argparse.ArgumentParser(prog="agentrl gateway", description=__doc__)
    add_arguments(_parser)
    try:
        sys.exit(run(_parser.parse_args()))
    except AgentRLError as e:
        print(f"agentrl gateway: error: {e}", file=sys.stderr)
        sys.exit(2)
