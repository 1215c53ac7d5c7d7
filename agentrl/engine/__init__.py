"""Token generators and their HTTP faces.

protocol (the Engine protocol: generate token ids → ids + behaviour logprobs + versions; SamplingParams,
Generation), errors, embedded (the in-process transformers engine: continuous batching over kv_batch, sampling,
session_cache, weight sync through weights, oneDNN-packed decode linears in onednn_linear), sglang_client and
sglang_schema (SGLang's native /generate over aiohttp), serve (the embedded engine behind SGLang's wire format),
and build (one `build_engine(cfg)` used by every caller).

Nothing here knows about episodes, envs or training (docs/architecture.md).
"""
