"""Typed run configuration: one pydantic model per section, YAML presets, dotted command-line overrides.

Order of precedence (later wins): defaults below → configs/<env>.yaml (when --env names a preset) →
--config FILE → dotted overrides (`trainer.lr=1e-6 rollout.group_size=8`). Every problem is reported at
once in one ConfigError naming the key path and the allowed values; unknown keys get a "did you mean".
The defaults run on a 2-core CPU with the default model.
"""

from __future__ import annotations

import difflib
import importlib.util
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentrl.algo import defaults as D
from agentrl.errors import ConfigError


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_attribute_docstrings=True)


class ModelConfig(_Section):
    name: str = "smollm2-135m-instruct"
    """Model to train: an alias (smollm2-135m-instruct, tiny), a local HF directory, or a hub id."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """Parameter dtype of the trainer's weights (the master weights; AdamW state follows trainer.optimizer_state)."""
    compute_dtype: Literal["auto", "float32", "bfloat16"] = "auto"
    """Mixed precision: the dtype the transformer body's forward and backward run in (torch.autocast); the LM head,
    log-softmax and loss stay fp32. auto: bfloat16 where the hardware has bf16 matrix units (CPU flags amx_bf16 or
    avx512_bf16, or a CUDA device with bf16), else float32 (agentrl.precision). A resumed run keeps its dtype."""
    device: str = "cpu"
    """Torch device of the trainer and the embedded engine."""
    threads: int = Field(0, ge=0)
    """torch intra-op threads (0 = all cores)."""


class EnvConfig(_Section):
    name: str = "calc"
    """Registered env name (see `agentrl envs`)."""
    kwargs: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments passed to the env constructor (e.g. {split: train, difficulty: 1})."""
    eval_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Overrides of `kwargs` for held-out evaluation (e.g. {split: dev})."""


class RolloutConfig(_Section):
    engine: Literal["embedded", "sglang"] = "embedded"
    """Generation backend: in-process transformers engine, or SGLang servers at `urls`."""
    urls: list[str] = Field(default_factory=list)
    """SGLang server URLs (engine=sglang)."""
    max_batch_size: int = Field(64, ge=1)
    """Embedded engine: requests decoded together. CPU kernels are not batch-invariant, so with near-flat
    distributions (a random model) ~1e-3 of sampled tokens depend on what else was batched; 1 makes every
    sample a function of its seed alone (bitwise), at the cost of throughput."""
    engine_dtype: Literal["auto", "float32", "bfloat16"] = "auto"
    """Embedded engine's dtype (auto: model.compute_dtype as resolved). bfloat16 decodes on a bf16 copy of the
    weights (KV cache in bf16) with an fp32 LM head, so sampling and behaviour logprobs use fp32 logits."""
    packed_weights: bool = True
    """Embedded engine on CPU: decode on oneDNN-packed copies of the linear weights (repacked at every
    weight sync), which skips MKL's per-call weight packing (bench/engine_throughput.py). Costs one more copy
    of those weights in memory (~0.5 GB for the 135M model); false for the leanest runs."""
    tasks_per_step: int = Field(4, ge=1)
    """Distinct tasks (groups) per training step."""
    group_size: int = Field(4, ge=1)
    """Episodes per task (G); GRPO needs 2 or more for a baseline."""
    temperature: float = Field(1.0, ge=0.0)
    """Sampling temperature (logprobs are of this temperature-scaled distribution)."""
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    """Nucleus sampling mass."""
    top_k: int = -1
    """Top-k sampling (-1 disables)."""
    max_turns: int = Field(6, ge=1)
    """Maximum agent turns per episode."""
    max_new_tokens: int = Field(128, ge=1)
    """Maximum tokens the model may generate per turn."""
    max_context_tokens: int = Field(2048, ge=16)
    """Maximum tokens of the whole trajectory (prompt + actions + observations)."""
    episode_timeout_s: float = Field(600.0, gt=0)
    """Wall-clock budget of one episode."""
    max_format_errors: int = Field(3, ge=1)
    """Actions in a row that do not parse as a tool call before the episode ends as format_errors (scored 0)."""
    concurrency: int = Field(16, ge=1)
    """Episodes in flight at once."""
    mode: Literal["sync", "one_step_off", "async"] = "sync"
    """Rollout/training overlap: sync (collect, then train), one_step_off (step n+1 generates while step n
    trains; staleness ≤ 1) or async (generation runs continuously, staleness ≤ max_staleness)."""
    max_staleness: int = Field(1, ge=0)
    """Admission bound η (AReaL): a group starts only if it can be consumed within η policy versions."""
    drop_staleness: int | None = Field(None, ge=0)
    """Hard bound: groups whose oldest token is more versions behind are dropped at consumption (counted)."""
    dynamic_sampling: bool = True
    """DAPO dynamic sampling: drop groups whose rewards have zero std, resample to fill the batch."""
    dynamic_sampling_on: Literal["reward", "success"] = "reward"
    """What dynamic sampling's zero-variance test looks at: the shaped reward the advantages use (reward, DAPO's
    verl/slime form), or task success (success: reward_info's success/resolved/correct flag, agentrl.algo.signal),
    which drops groups whose only variance is format or partial-credit noise. An env that reports no success
    flag falls back to its reward, so `success` then equals `reward`."""
    max_resample_rounds: int = Field(2, ge=0)
    """Extra rounds of sampling allowed per step to fill the batch under dynamic sampling."""
    replay_fraction: float = Field(0.0, ge=0.0, lt=1.0)
    """Share of a step's slots that replay a task whose last group had mixed success (agentrl.trainer.task_sampler);
    the rest (at least one slot in B, since it must stay below 1), and every slot when no such task waits, are
    drawn uniformly, so the run cannot overfit a few tasks. 0 draws every task uniformly."""
    replay_limit: int = Field(2, ge=1)
    """Times one task may be replayed over the run, so a few tasks cannot take over the batch."""
    exclude_warm_start_episodes: int = Field(0, ge=0)
    """Keep the tasks of the warm start's first N expert episodes (warm_start_seed(seed, i), i < N; the warm
    start's sft.episodes) out of the RL pool: a draw that lands on one is redrawn. Needs an env that names a
    seed's task without running it (AgentEnv.task_for_seed). 0 keeps them in."""
    seed: int = 0
    """Base seed of task sampling and episode seeds."""


class AlgoConfig(_Section):
    advantage: str = "grpo"
    """Advantage estimator, a name in agentrl.algo.advantages.ADVANTAGES: grpo, dr_grpo, alpha_norm, batch_std,
    rloo, reinforce_pp_baseline, or one registered there (docs/algorithms.md §2)."""
    adv_eps: float = Field(D.ADV_EPS, gt=0)
    """ε in (R − mean)/(std + ε)."""
    adv_alpha: float = Field(D.ADV_ALPHA, ge=0.0, le=1.0)
    """α of the α-normalization knob (advantage=alpha_norm): 1 = GRPO, 0 = Dr.GRPO."""
    loss: str = "ppo"
    """Policy loss, a name in agentrl.algo.losses.LOSS_SPECS: ppo, gspo, cispo, dppo, or one registered there."""
    reduction: str | None = None
    """How per-token losses are aggregated, a name in agentrl.algo.losses.REDUCTIONS: token-mean,
    seq-mean-token-mean, seq-mean-token-sum, seq-mean-token-sum-norm, or one registered there (None = the loss's
    own, token-mean for ppo); the normalizer spans the mini-batch."""
    eps_low: float | None = Field(None, ge=0)
    """PPO clip lower ε (None = the loss's preset: 0.2 for ppo)."""
    eps_high: float | None = Field(None, ge=0)
    """PPO clip upper ε, clip-higher (None = the loss's preset: 0.28 for ppo)."""
    dual_clip_c: float | None = Field(D.DUAL_CLIP_C, gt=1.0)
    """Dual-clip bound c for negative advantages (ppo only; None disables)."""
    correction: Literal[D.TOKEN_CORRECTIONS] = D.CORRECTION
    """Token-level off-policy correction on w = π_old/μ: truncated IS, masked IS (IcePop band), or none."""
    tis_cap: float = Field(D.TIS_CAP, gt=0)
    """Token TIS cap C."""
    mis_band: tuple[float, float] = D.MIS_BAND
    """Token MIS / IcePop band [α, β]."""
    trust_region: list[Literal[D.TRUST_REGIONS]] = Field(default_factory=lambda: list(D.TRUST_REGION))
    """Trajectory-level trust regions (all segments of a trajectory decide together)."""
    geo_band: tuple[float, float] = D.GEO_BAND
    """Geo-RS band on the geometric mean of w over the trajectory."""
    seq_band: tuple[float, float] = D.SEQ_BAND
    """Seq-MIS band on the product of w over the trajectory."""
    veto_floor: float = Field(D.VETO_FLOOR, gt=0)
    """Veto a trajectory if any token has w below this floor."""
    opsm_delta: float = Field(D.OPSM_DELTA, ge=0)
    """OPSM: mask negative-advantage trajectories whose mean log(μ/π_old) exceeds δ."""
    kl_coef: float = Field(D.KL_COEF, ge=0)
    """β of the KL-to-reference loss term (0 = no reference model)."""
    kl_estimator: Literal[D.KL_LOSS_ESTIMATORS] = D.KL_ESTIMATOR
    """KL estimator for the reference term."""
    overlong_buffer: int = Field(0, ge=0)
    """DAPO overlong shaping buffer in action tokens before rollout.max_context_tokens (0 disables)."""
    format_reward: float = Field(0.0, ge=0)
    """Weight c of a format term added to each scored episode's reward: c × the share of its turns whose action
    parsed as a tool call (a format reward, as in DeepSeek-R1). Gives a weak model a gradient before it solves
    any task; keep c well below the task reward. 0 disables."""
    credit: Literal[D.CREDIT_MODES] = "outcome"
    """How advantages are assigned to tokens (docs/algorithms.md, turn-level credit): outcome = the episode's group
    advantage on every action token; turn = each turn's discounted return normalised per turn index within the
    group; gigpo = the episode advantage + algo.step_weight × a step advantage normalised within anchor states."""
    turn_gamma: float = Field(1.0, ge=0.0, le=1.0)
    """γ of the per-turn discounted returns G_t = Σ_k γ^(k−t) r_k (credit=turn or gigpo)."""
    step_weight: float = Field(1.0, ge=0.0)
    """ω: weight of the step advantage added to the episode advantage (credit=gigpo)."""
    credit_std: bool = True
    """Divide per-turn returns by their normalisation group's std (+ algo.adv_eps) after centring (turn, gigpo)."""

    @field_validator("advantage", "loss", "reduction")
    @classmethod
    def _registered(cls, value: str | None, info) -> str | None:
        """The registries own the method names: a name must be registered where its function lives."""
        if value is None:
            return value
        from agentrl.algo.advantages import ADVANTAGES
        from agentrl.algo.losses import LOSS_SPECS, REDUCTIONS

        registry, what = {"advantage": (ADVANTAGES, "advantage estimator"), "loss": (LOSS_SPECS, "policy loss"),
                          "reduction": (REDUCTIONS, "reduction")}[info.field_name]
        if value not in registry:
            raise ValueError(f"not a registered {what} (registered: {', '.join(registry)})")
        return value


class TrainerConfig(_Section):
    steps: int = Field(10, ge=0)
    """Optimizer steps of GRPO."""
    max_train_s: float | None = Field(None, gt=0)
    """Wall-clock budget of the run, from its start (warm start included): the step running when it is spent
    finishes, is checkpointed, and the run ends there (before trainer.steps). None: no budget."""
    lr: float = Field(1e-6, gt=0)
    """AdamW learning rate."""
    weight_decay: float = Field(0.0, ge=0)
    """AdamW weight decay."""
    warmup_steps: int = Field(0, ge=0)
    """Linear learning-rate warm-up steps (then constant)."""
    grad_clip: float = Field(1.0, gt=0)
    """Global gradient-norm clip."""
    micro_batch_tokens: int = Field(2048, ge=64)
    """Token budget of one packed micro-batch (bounds memory; the update does not depend on it)."""
    gradient_checkpointing: bool = True
    """Recompute each layer's activations in the backward pass: a micro-batch keeps only each layer's input, not
    its activations, for about one more forward pass of compute."""
    share_prefix: bool = True
    """Compute a prompt that several rows of a micro-batch start with (a GRPO group's shared prompt, ≥ 32 tokens)
    once in training forwards, its gradient summed over the rows: the same logprobs and gradients up to fp32
    rounding for fewer FLOPs (agentrl.trainer.prefix). Works with gradient checkpointing; false runs every row
    in full."""
    mini_batches: int = Field(1, ge=1)
    """PPO mini-batches per rollout batch: each is one optimizer step (TRL steps_per_generation, verl
    ppo_mini_batch_size); π_old is computed once for the whole batch before the first step."""
    ppo_epochs: int = Field(1, ge=1)
    """Passes over the rollout batch (TRL num_iterations, verl ppo_epochs): mini_batches × ppo_epochs optimizer
    steps per batch. With 1 × 1 (the default) π_old is π_θ of the training forward itself (no recompute)."""
    optimizer_state: Literal["float32", "bfloat16"] = "float32"
    """dtype of AdamW's moment estimates: bfloat16 halves the optimizer's memory (2 of the 4 bytes per parameter
    per moment) for a rounded update; the parameters stay in model.dtype (agentrl.trainer.memory.build_optimizer)."""
    mmap_threshold: int = Field(0, ge=0, le=32 * 2**20)  # glibc refuses thresholds above 32 MiB (64-bit)
    """Bytes from which glibc serves an allocation by mmap, pinned for the run; 0 keeps glibc's dynamic threshold
    (the default: fastest). Pinned at 131072 (128 KiB), a step's freed activations and optimizer temporaries
    leave the process at once instead of staying in a fragmented heap: lower peak RSS for a slower step
    (bench/malloc_mmap.py; docs/results.md). A memory knob like gradient checkpointing: the math is unchanged.
    It holds for the whole process, so the embedded engine's decode pays the page faults too.
    MALLOC_MMAP_THRESHOLD_ in the environment wins."""
    logprob_chunk: int = Field(1024, ge=1)
    """Tokens per chunk when gathering logprobs (never full-vocabulary logits for a whole micro-batch)."""
    run_dir: str = "runs/{env}-{time}"
    """Run directory ({env} and {time} are filled in)."""
    checkpoint_every: int = Field(5, ge=0)
    """Checkpoint every N steps (0 = only at the end)."""
    keep_checkpoints: int = Field(2, ge=1)
    """How many recent checkpoints to keep."""
    sample_every: int = Field(1, ge=0)
    """Write rendered sample trajectories every N steps (0 = never)."""
    eval_every: int = Field(0, ge=0)
    """Held-out evaluation every N steps (0 = only at the end, if eval_episodes > 0)."""
    eval_episodes: int = Field(0, ge=0)
    """Held-out episodes per evaluation (0 disables)."""
    tensorboard: bool = True
    """Also write metrics to TensorBoard."""
    max_masked_frac: float = Field(0.5, gt=0, le=1)
    """Abort the run (non-zero exit, naming the most common cause) when more than this share of the episodes of
    the last `masked_window` steps were masked (env, sandbox or engine failures); 1 never aborts."""
    masked_window: int = Field(3, ge=1)
    """Steps over which max_masked_frac is judged (a shorter run is judged at its last step)."""
    strategy: Literal["single", "fsdp"] = "single"
    """How the policy trains: single = one process on model.device; fsdp = sharded data parallel (PyTorch FSDP2):
    parameters, gradients and optimizer state split over trainer.ranks ranks (or the ranks `torchrun
    --nproc-per-node N -m agentrl train ...` starts), each rank training on its share of the batch; NCCL on CUDA,
    gloo on CPU (docs/distributed.md)."""
    ranks: int = Field(1, ge=1)
    """trainer.strategy=fsdp: training ranks. agentrl starts them on this machine (PyTorch's elastic launcher, as
    `torchrun --standalone` would: agentrl.trainer.launch), or with cluster.backend=ray as Ray actors (this process is
    rank 0). Under torchrun the launcher decides (--nnodes × --nproc-per-node) and this key is not used."""
    collective_timeout_s: float = Field(600.0, gt=0)
    """trainer.strategy=fsdp: how long a rank waits in a collective before the run stops with an error, so a rank
    that hangs ends the run within this time (rank 0 tells the others it is alive while it collects rollouts)."""


class SFTConfig(_Section):
    episodes: int = Field(0, ge=0)
    """Expert episodes for the supervised warm start before GRPO (0 skips it)."""
    epochs: int = Field(2, ge=1)
    """Passes over the expert trajectories."""
    lr: float = Field(1e-4, gt=0)
    """AdamW learning rate of the warm start."""
    batch_trajectories: int = Field(8, ge=1)
    """Trajectories per optimizer step."""


class ClusterConfig(_Section):
    backend: Literal["local", "ray"] = "local"
    """Where episodes run: in this process (local), or in rollout-worker actors on a Ray cluster (ray; needs
    `pip install 'agentrl[ray]'`). The trainer, the embedded engine and held-out evaluation stay in the driver."""
    address: str | None = None
    """Ray cluster to join (backend=ray): "auto" (the one `ray start` made on this machine), "host:6379" or
    "ray://host:10001". None starts a single-machine cluster on loopback for this run and stops it afterwards."""
    num_workers: int = Field(2, ge=1)
    """Rollout-worker actors; each builds its env instances (and their sandboxes) on the node Ray places it on."""
    cpus_per_worker: float = Field(1.0, gt=0)
    """Ray CPUs each worker reserves (placement only: its episodes mostly wait on the engine and sandboxes)."""
    worker_resources: dict[str, float] = Field(default_factory=dict)
    """Custom Ray resources each worker needs, e.g. {docker: 1}: workers then run only on nodes started with
    `ray start --resources='{"docker": 1}'` (where a Docker engine runs the sandboxes)."""
    worker_concurrency: int = Field(8, ge=1)
    """Episodes in flight per worker: the driver's back-pressure bound (replaces rollout.concurrency with
    backend=ray: at most num_workers × worker_concurrency episodes run at once)."""
    engine_host: str = "127.0.0.1"
    """rollout.engine=embedded: the address the driver serves its engine on (SGLang's HTTP API) for the
    workers; set it to the driver node's IP on a multi-node cluster."""
    engine_port: int = Field(0, ge=0, le=65535)
    """Port of that server (0 = any free port)."""
    max_episode_retries: int = Field(1, ge=0)
    """Times an episode lost with its worker (actor or node died) is dispatched again to a live worker;
    after that it ends as env_error and is masked, never trained as reward 0."""


def default(section: type[_Section], key: str) -> Any:
    """The default of one key of a config section: the one reader of defaults (the trainer's and the agent loop's
    dataclasses take theirs from here)."""
    field = section.model_fields[key]
    return field.default_factory() if field.default_factory else field.default


class Config(_Section):
    """The whole run configuration."""

    model: ModelConfig = Field(default_factory=ModelConfig)
    env: EnvConfig = Field(default_factory=EnvConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    algo: AlgoConfig = Field(default_factory=AlgoConfig)
    trainer: TrainerConfig = Field(default_factory=TrainerConfig)
    sft: SFTConfig = Field(default_factory=SFTConfig)
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)

    @model_validator(mode="after")
    def _combinations(self) -> Config:
        """Refuse combinations of keys that cannot run together, naming every problem at once."""
        problems = [*_sampling_problems(self), *_algo_problems(self), *_overlap_problems(self.rollout),
                    *_cluster_problems(self.cluster)]
        t = self.trainer
        if t.eval_every and not t.eval_episodes:
            problems.append(f"trainer.eval_every={t.eval_every} evaluates nothing with trainer.eval_episodes=0 "
                            "(set trainer.eval_episodes)")
        problems += _strategy_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self


def _sampling_problems(cfg: Config) -> list[str]:
    """The rollout engine and sampling keys against each other and against training."""
    problems, r, training = [], cfg.rollout, cfg.trainer.steps > 0
    if r.group_size < 2 and training and cfg.algo.advantage != "reinforce_pp_baseline":
        problems.append(f"rollout.group_size={r.group_size} gives {cfg.algo.advantage} no baseline (use 2 or more)")
    if r.engine == "sglang" and not r.urls:
        problems.append("rollout.engine=sglang needs rollout.urls (e.g. rollout.urls=[http://host:30000])")
    if r.engine == "sglang" and training and (r.top_p < 1 or r.top_k not in (-1, 0)):
        problems.append(  # SGLang 0.5.23 returns log_softmax(logits/T) over the full vocabulary
            f"rollout.top_p={r.top_p} / rollout.top_k={r.top_k} with rollout.engine=sglang: SGLang reports "
            "full-vocabulary logprobs, not those of the truncated distribution it samples, which would bias "
            "every importance ratio (train with rollout.top_p=1 and rollout.top_k=-1)")
    if r.urls and r.engine != "sglang":
        problems.append("rollout.urls is used only by rollout.engine=sglang (set it, or leave rollout.urls unset)")
    if r.engine != "embedded" and r.engine_dtype != "auto":
        problems.append(f"rollout.engine_dtype={r.engine_dtype} is used only by rollout.engine=embedded (the "
                        "server's own dtype applies; leave it unset)")
    if r.temperature == 0 and training:
        problems.append("rollout.temperature=0 (greedy) has no sampling distribution to train on (use > 0)")
    if r.max_new_tokens >= r.max_context_tokens:
        problems.append(f"rollout.max_new_tokens={r.max_new_tokens} must be below "
                        f"rollout.max_context_tokens={r.max_context_tokens}")
    return problems


def _algo_problems(cfg: Config) -> list[str]:
    """Correction bands, and the reduction a loss requires."""
    problems = []
    for key in ("geo_band", "seq_band", "mis_band"):
        lo, hi = getattr(cfg.algo, key)
        if not 0 < lo <= 1 <= hi:
            problems.append(f"algo.{key}={[lo, hi]} must be [low, high] with 0 < low ≤ 1 ≤ high")
    if cfg.algo.reduction is not None:
        from agentrl.algo.losses import LOSS_SPECS  # the loss declares the reduction it needs

        need = LOSS_SPECS[cfg.algo.loss].reduction
        if need is not None and cfg.algo.reduction != need:
            problems.append(
                f"algo.loss={cfg.algo.loss} needs algo.reduction={need}, got algo.reduction={cfg.algo.reduction} "
                "(set it to that or leave algo.reduction unset)"
            )
    return problems


def _strategy_problems(cfg: Config) -> list[str]:
    """trainer.strategy against the keys a sharded run cannot honour."""
    t, problems = cfg.trainer, []
    if t.ranks > 1 and t.strategy != "fsdp":
        problems.append(f"trainer.ranks={t.ranks} shards the run over {t.ranks} ranks, which trainer.strategy=single "
                        "cannot do: add trainer.strategy=fsdp (docs/distributed.md)")
    return problems


def _overlap_problems(r: RolloutConfig) -> list[str]:
    """The rollout mode against its staleness bounds."""
    problems = []
    if r.mode == "one_step_off" and r.max_staleness < 1:
        problems.append("rollout.mode=one_step_off overlaps one step, so it needs rollout.max_staleness ≥ 1")
    if r.mode == "async" and r.max_staleness < 1:
        problems.append("rollout.mode=async with rollout.max_staleness=0 cannot overlap anything (use sync)")
    if r.drop_staleness is not None and r.drop_staleness < r.max_staleness:
        problems.append(
            f"rollout.drop_staleness={r.drop_staleness} is below rollout.max_staleness={r.max_staleness}: "
            "admitted groups would be dropped (use ≥ max_staleness or leave it unset)"
        )
    if r.mode == "sync" and (r.drop_staleness is not None or r.max_staleness != default(RolloutConfig, "max_staleness")):
        key = "drop_staleness" if r.drop_staleness is not None else "max_staleness"
        problems.append(f"rollout.{key} bounds overlapped rollouts, which rollout.mode=sync has none of (use one_step_off "
                        "or async, or leave it unset)")
    return problems


def _cluster_problems(c: ClusterConfig) -> list[str]:
    """Ray-only keys without Ray, a missing Ray install, malformed custom resources."""
    problems = []
    ignored = [k for k in ClusterConfig.model_fields if k != "backend" and getattr(c, k) != default(ClusterConfig, k)]
    if c.backend == "local" and ignored:
        problems.append(f"cluster.{ignored[0]} is used only by cluster.backend=ray (set it, or leave "
                        f"cluster.{ignored[0]} unset)")
    if c.backend == "ray" and importlib.util.find_spec("ray") is None:
        problems.append("cluster.backend=ray needs Ray, which is not installed (pip install 'agentrl[ray]')")
    for name, amount in c.worker_resources.items():
        if name in ("CPU", "GPU"):
            problems.append(f"cluster.worker_resources.{name} is not a custom resource (use cluster.cpus_per_worker)")
        elif amount <= 0:
            problems.append(f"cluster.worker_resources.{name}={amount} must be > 0")
    return problems


# --- loading -------------------------------------------------------------------------------------------

def _config_dir() -> Path:
    """The presets: `agentrl/configs` in an installed wheel, the repository's `configs/` in a checkout."""
    here = Path(__file__).resolve().parent
    installed = here / "configs"
    return installed if installed.is_dir() else here.parent / "configs"


CONFIG_DIR = _config_dir()


def _all_paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every dotted key path of the schema (sections and leaves)."""
    out = []
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        out.append(path)
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out.extend(_all_paths(ann, path + "."))
    return out


def _dict_paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Dotted paths of the schema's dict-valued fields (their sub-keys are free: env.kwargs.split=dev)."""
    out = []
    for name, field in model.model_fields.items():
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out.extend(_dict_paths(ann, f"{prefix}{name}."))
        elif getattr(ann, "__origin__", None) is dict:
            out.append(f"{prefix}{name}")
    return out


def _suggest(path: str) -> str:
    close = difflib.get_close_matches(path, _all_paths(Config), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def parse_override(item: str) -> tuple[list[str], Any]:
    """Split 'a.b.c=value' into (['a','b','c'], YAML-parsed value)."""
    if "=" not in item:
        raise ConfigError(f"override {item!r} is not of the form key.path=value (e.g. trainer.lr=1e-6)")
    key, raw = item.split("=", 1)
    try:
        value = yaml.safe_load(raw) if raw != "" else ""
    except yaml.YAMLError:
        value = raw
    if isinstance(value, str) and raw.strip().lower() in {"none", "null", "~"}:
        value = None
    return key.strip().split("."), value


def _set(tree: dict, keys: list[str], value: Any) -> None:
    for k in keys[:-1]:
        nxt = tree.setdefault(k, {})
        if not isinstance(nxt, dict):
            nxt = tree[k] = {}
        tree = nxt
    tree[keys[-1]] = value


def _drop(tree: dict, keys: list[str]) -> None:
    for k in keys[:-1]:
        tree = tree.get(k) if isinstance(tree, dict) else None
        if not isinstance(tree, dict):
            return
    tree.pop(keys[-1], None)


def _merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for k, v in extra.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) and k != "kwargs" else v
    return out


def yaml_problem(path: Path, e: yaml.YAMLError) -> str:
    """One line for a YAML syntax error that names the file and the line:column (PyYAML itself says
    '<unicode string>' and spreads the message over several lines)."""
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    what = " ".join(str(getattr(e, "problem", None) or e).split())
    context = getattr(e, "context", None)
    return f"{where}: not valid YAML: {what}" + (f" ({' '.join(str(context).split())})" if context else "")


def _read_yaml(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise ConfigError(yaml_problem(path, e)) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of sections at the top level, got {type(data).__name__}")
    return data


def _format_errors(err: ValidationError) -> list[str]:
    problems = []
    for e in err.errors():
        path = ".".join(str(p) for p in e["loc"])
        if e["type"] == "extra_forbidden":
            problems.append(f"{path} is not a key{_suggest(path)}")
        elif e["type"] == "literal_error":
            allowed = e.get("ctx", {}).get("expected", "")
            problems.append(f"{path}={e.get('input')!r} is not allowed (allowed: {allowed})")
        elif e["type"] == "value_error" and not path:
            problems.extend(str(e["ctx"]["error"]).split("; "))
        else:
            problems.append(f"{path}={e.get('input')!r}: {e['msg'].removeprefix('Value error, ')}")
    return problems


def load_config(env: str | None = None, config_file: str | Path | None = None, overrides: list[str] = ()) -> Config:
    """Build the run config from defaults, the env's preset, a YAML file and dotted overrides."""
    tree: dict = {}
    source = "config"
    if env is not None:
        preset = CONFIG_DIR / f"{env}.yaml"
        if preset.is_file():
            tree = _merge(tree, _read_yaml(preset))
            source = str(preset)
        tree = _merge(tree, {"env": {"name": env}})
    if config_file is not None:
        path = Path(config_file)
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
        tree = _merge(tree, _read_yaml(path))
        source = str(path)
        if env is not None:
            tree = _merge(tree, {"env": {"name": env}})
    problems = []
    for item in overrides:
        keys, value = parse_override(item)
        in_dict = any(".".join(keys[:i]) in _dict_paths(Config) for i in range(1, len(keys)))
        if ".".join(keys) not in _all_paths(Config) and not in_dict:
            problems.append(f"{'.'.join(keys)} is not a key{_suggest('.'.join(keys))}")
            continue
        _set(tree, keys, value)
    cfg = None
    for _ in range(2):  # a second pass without the bad keys still reports the combination problems
        try:
            cfg = Config.model_validate(tree)
            break
        except ValidationError as e:
            problems.extend(p for p in _format_errors(e) if p not in problems)
            bad = [err["loc"] for err in e.errors() if err["loc"]]
            if not bad:
                break
            for loc in bad:
                _drop(tree, [str(k) for k in loc])
    if problems:
        n = len(problems)
        raise ConfigError(f"{_blame(source, problems, overrides)}: {n} problem{'s' if n > 1 else ''}: " + "; ".join(problems))
    return cfg


def _blame(source: str, problems: list[str], overrides: list[str]) -> str:
    """Where the problems came from: the command line (KEY=VALUE overrides), the file, or both."""
    if source == "config":  # no file involved: nothing to tell apart
        return source
    keys = {item.partition("=")[0].strip() for item in overrides}
    from_cli = [any(p == k or p.startswith((k + " ", k + "=", k + ".")) for k in keys) for p in problems]
    try:
        source = str(Path(source).resolve().relative_to(Path.cwd()))
    except ValueError:
        pass
    if all(from_cli):
        return "command line"
    return f"{source} and command line" if any(from_cli) else source


def dump_config(cfg: Config) -> str:
    """The resolved config as YAML (saved in every run directory)."""
    return yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)
