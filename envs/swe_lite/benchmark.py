"""Held-out resolved rate of a model on swe_lite: one greedy episode per task at a given level, or k sampled ones.

Used by bench/learn_swe.py and `make demo` (scripts/demo_swe.py). Unlike the loop's seeded held-out sampling,
every eligible task of the held-out splits is run exactly once (greedy) or k times (`samples=k`, at the
config's rollout temperature), so two models (or checkpoints) are compared task by task on the same tasks
(agentrl.evaluation.paired_sign_test; compare_paired on per-task means). Sample j of a task draws with the
same seeds whichever model runs it (sampling_seed), so the comparison is paired in its random draws too. It is
the generic evaluator (agentrl.evaluation.run_episodes) with swe_lite's hook and the training run's episode
budget.
"Resolved" is the grader's verdict (all hidden F2P and P2P tests pass), never a shaped reward; an episode the
loop's own budget ended is graded as it stands, as in `agentrl eval`. An evaluation can be continued: episodes
already finished (`done`) are kept and the rest run. `non_fix_findings` reads a resolved episode's patch for the
changes the test-strength audit (audit.py) calls generic non-fixes, so a learned hack is counted, not credited.
"""

from __future__ import annotations

import ast
import asyncio
import io
import re
import tokenize
from functools import partial
from itertools import zip_longest

from agentrl.envs.swe.tasks import Task, load_any

from agentrl.evaluation import HeldOut

EVAL_WALL_CLOCK_S = 6 * 3600.0
"""Episode wall-clock budget of a held-out evaluation: a backstop only (see resolved_rate)."""
SEEDS = ("sample j of task t samples turn k with seed turn_seed(member_sampling_seed(name_seed(t), j, 0, family), k) "
         "(agentrl.rollout.seeds: sha256 of the instance id, then fixed integer mixes), whatever the checkpoint; "
         "family 0 in every phase, 1 for the pilot's second draw")
"""How the k-sample evaluation's seeds are derived, in words (the bench's record carries it)."""


def sampling_seed(instance_id: str, sample: int, family: int = 0) -> int:
    """The episode sampling seed of sample `sample` of a held-out task: what run_member derives for member `sample`
    of the task seed name_seed(instance_id) under sampling_salt `family` (attempt 0; evaluation never retries)."""
    from agentrl.rollout.seeds import member_sampling_seed, name_seed

    return member_sampling_seed(name_seed(instance_id), sample, 0, family)


def held_out_tasks(split: str = "test", level: int = 0, limit: int | None = None, tasks=None,
                   snapshots=None, pool: list[Task] | None = None) -> list[Task]:
    """The tasks of `split` offered at `level` (level 0: one-line fixes), in file order; with `limit`, at most that
    many, taken round-robin over repos (one task of each repo in turn) so a small sample spans the held-out
    modules instead of the first one or two (16 tasks per module in the bundled corpus). `pool`: the tasks to
    choose from (another corpus's split, e.g. swe_real's); by default swe_lite's `split` (or `tasks`/`snapshots`)."""
    if pool is None:
        pool = load_any(tasks, snapshots, split)
    chosen = [t for t in pool if t.difficulty <= level]
    if not limit or limit >= len(chosen):
        return chosen
    by_repo: dict[str, list[Task]] = {}
    for t in chosen:
        by_repo.setdefault(t.repo, []).append(t)
    spread = [t for round_ in zip_longest(*by_repo.values()) for t in round_ if t is not None]
    return spread[:limit]


async def resolved_rate(cfg, engine, tokenizer, tasks: list[Task], level: int, *, concurrency: int | None = None,
                        on_record=None, episodes_path=None, done: dict | None = None, samples: int | None = None,
                        family: int = 0) -> HeldOut:
    """Greedy episodes of `engine`, one per task at `level`; HeldOut keyed by instance id (resolved = 1.0).

    With `samples=k`, k episodes per task at the config's rollout temperature, top_p and top_k (training's
    sampling), sample j drawing with sampling_seed(task, j, family) (each record keeps it as `sampling_seed`);
    HeldOut.per_task is then each task's mean over its scored samples (agentrl.evaluation.held_out_means).
    `done`: records of episodes already finished ({(instance_id, sample): record}, as agentrl.evaluation.load_done
    reads them), which are kept and not run again; `on_record(record)` is called as each new episode finishes
    (to persist it). With `episodes_path`, every episode is written there as readable text (task, verdict, the
    whole exchange): what the model actually did, for reading a rate of 0 as format errors, wrong edits or
    wrong fixes."""
    from agentrl.envs.swe.evaluation import eval_task
    from agentrl.envs.swe_lite import SweLiteEvalHook

    from agentrl.evaluation import EvalConfig, held_out, held_out_means, run_episodes
    from agentrl.registry import make
    from agentrl.rollout.agent_loop import LoopConfig

    # Every task is admitted at once, so an episode also waits for the other episodes' prefill and decode: a
    # wall-clock budget (the loop's episode_timeout_s) would count that queueing against
    # the model. Episodes stay bounded by max_turns × max_new_tokens and the env's per-command timeouts.
    kwargs = {**cfg.env.kwargs, **cfg.env.eval_kwargs, "level": level, "shaped_reward": False, "tasks": tasks}
    kwargs.pop("split", None)
    kwargs.pop("curriculum", None)
    job = EvalConfig(env=cfg.env.name, split=None, model="benchmark", transcripts=episodes_path is not None,
                     concurrency=concurrency or cfg.rollout.concurrency, samples=samples or 1)
    decoding = {"sampling_salt": family} if samples else {"temperature": 0.0, "top_p": 1.0, "top_k": -1}
    loop_cfg = LoopConfig.from_rollout(cfg.rollout, **decoding, episode_timeout_s=EVAL_WALL_CLOCK_S,
                                       grade_at_budget=True)
    index = {t.instance_id: i for i, t in enumerate(tasks)}
    kept = [rec for (iid, j), rec in (done or {}).items() if iid in index and j < job.samples]

    def finished(rec: dict) -> None:
        if samples:  # the seed run_member drew with, kept with the episode (pairs are checked by it)
            rec["sampling_seed"] = sampling_seed(rec["instance_id"], rec["sample"], family)
        if on_record is not None:
            on_record(rec)

    records = kept + await run_episodes(job, [eval_task(t) for t in tasks], partial(make, cfg.env.name, **kwargs),
                                        engine, tokenizer, loop_cfg, hook=SweLiteEvalHook(), on_record=finished,
                                        done=done)
    records.sort(key=lambda rec: (index[rec["instance_id"]], rec["sample"]))
    if episodes_path is not None:
        write_episodes(episodes_path, records, level)
    if samples:
        return held_out_means(records)
    return held_out(records, key=lambda rec: rec["instance_id"], score=lambda rec: rec["resolved"])


def write_episodes(path, records: list[dict], level: int) -> None:
    """Every episode as readable text: task, verdict, ending, then what the model wrote and the env answered."""
    with open(path, "w") as f:
        for rec in records:
            f.write(f"{rec['instance_id']}{'' if rec['sample'] == 0 else '#' + str(rec['sample'])}  level {level}  "
                    f"resolved={rec['resolved']}  "
                    f"termination={rec['termination']}  scored={not rec['infra_error']}\n")
            for row in rec.get("transcript") or []:
                f.write(f"--- {row['role']}\n{row['content'][:6000]}\n")
            f.write("=" * 100 + "\n")


def evaluate_model(cfg, model_name: str, tasks: list[Task], level: int, *, label: str = "",
                   episodes_path=None, done: dict | None = None, on_record=None,
                   concurrency: int | None = None, samples: int | None = None, family: int = 0) -> HeldOut:
    """resolved_rate of a model (a name or a checkpoint's model directory) on its own embedded engine, as many
    episodes at once as there are tasks unless `concurrency` says fewer; `done`, `on_record`, `samples` and
    `family` as in resolved_rate.

    With `label`, prints one progress line per finished episode (an evaluation takes minutes on a CPU)."""
    from agentrl.sandboxes import reaper

    from agentrl.engine.build import build_engine
    from agentrl.models import load_tokenizer

    reaper.install_sigterm_hook()
    tokenizer = load_tokenizer(model_name)
    k = samples or 1
    ids = {t.instance_id for t in tasks}
    kept = sum(iid in ids and j < k for iid, j in done or {})

    async def go():
        # fp32 and seed 0 whatever the preset says: the benchmark's figures were all measured that way
        engine = build_engine(_engine_config(cfg, model_name), tokenizer=tokenizer, seed=0)
        try:
            finished = kept

            def progress(rec: dict) -> None:
                nonlocal finished
                finished += 1
                if on_record is not None:
                    on_record(rec)
                if label:
                    print(f"  {label} level {level}: {finished}/{k * len(tasks)} held-out episodes", flush=True)

            # every task at once: the engine batches their decode steps (a batch of 12 costs far less than 3 of 4
            # on a CPU), and greedy episodes do not depend on what runs beside them beyond kernel rounding
            return await resolved_rate(cfg, engine, tokenizer, tasks, level,
                                       concurrency=concurrency or max(1, len(tasks)), on_record=progress,
                                       episodes_path=episodes_path, done=done, samples=samples, family=family)
        finally:
            await engine.close()

    return asyncio.run(go())


def _engine_config(cfg, model_name: str):
    """cfg with `model_name` as the model and an fp32 embedded engine (the benchmark's fixed evaluation engine)."""
    rollout = cfg.rollout.model_copy(update={"engine": "embedded", "urls": [], "engine_dtype": "float32"})
    return cfg.model_copy(update={"model": cfg.model.model_copy(update={"name": model_name}), "rollout": rollout})


# ---- the non-fix audit of resolved episodes ----

ALWAYS_EQUAL_NAMES = frozenset({"ANY", "mock", "__eq__", "__ne__"})
"""Names whose appearance in an added line marks an always-equal value (audit.py's equal_to_anything and
always_equal non-fixes are built from them)."""
COMPARISONS = frozenset({"==", "!=", "in", "is"})


def added_lines(patch: str) -> list[str]:
    """The lines a unified diff adds, without the leading '+' (file headers left out)."""
    return [line[1:] for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++")]


def _tokens(line: str) -> list[tokenize.TokenInfo]:
    """The Python tokens of one source line (as many as it yields before an unfinished construct)."""
    out: list[tokenize.TokenInfo] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline):
            out.append(tok)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


def _literal(tok: tokenize.TokenInfo):
    """(type name, value) of a number or string token, or None (f-strings and the like)."""
    if tok.type not in (tokenize.NUMBER, tokenize.STRING):
        return None
    try:
        value = ast.literal_eval(tok.string)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return type(value).__name__, value


def example_literals(task: Task) -> set:
    """The numbers and strings of the issue's quoted example (its code blocks; the whole text when it has none)."""
    text = task.problem_statement[:20000]
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, re.S) or [text]
    return {lit for block in blocks for line in block.splitlines()[:200] for tok in _tokens(line)
            if (lit := _literal(tok)) is not None}


def non_fix_findings(task: Task, patch: str) -> list[str]:
    """The added lines of `patch` that the test-strength audit (audit.py) would call a generic non-fix, each as
    "kind: line": `always_equal` (a value equal to anything: mock.ANY, a type defining __eq__/__ne__) and
    `special_case` (a new condition comparing with a number or string of the issue's quoted example, i.e. the
    quoted input or its expected output singled out). A heuristic over text, for reading: a line the gold patch
    adds or the buggy file already has is never flagged."""
    file = task.mutation.get("file")
    known = {line.strip() for line in added_lines(task.patch)}
    known |= {line.strip() for line in (task.files.get(file, "") if file else "").splitlines()}
    quoted = example_literals(task)
    findings = []
    for line in added_lines(patch[:200_000])[:2000]:
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped in known:
            continue
        toks = _tokens(stripped)
        names = {t.string for t in toks if t.type == tokenize.NAME}
        ops = {t.string for t in toks if t.type in (tokenize.OP, tokenize.NAME)}
        in_strings = {w for t in toks if t.type == tokenize.STRING for w in re.findall(r"\w+", t.string)}  # type('A', (), {'__eq__': ...})
        if (names | in_strings) & ALWAYS_EQUAL_NAMES:
            findings.append(f"always_equal: {stripped[:200]}")
        elif "if" in names and ops & COMPARISONS and any(_literal(t) in quoted for t in toks):
            findings.append(f"special_case: {stripped[:200]}")
    return findings


def audit_episodes(records: list[dict], tasks: list[Task]) -> dict:
    """How many resolved episodes contain a change non_fix_findings flags, and which (instance id, with #j for
    sample j > 0 of a k-sample evaluation → lines)."""
    by_id = {t.instance_id: t for t in tasks}
    resolved = [r for r in records if r.get("resolved") and r["instance_id"] in by_id]
    flagged = {r["instance_id"] + (f"#{r['sample']}" if r.get("sample") else ""): found for r in resolved
               if (found := non_fix_findings(by_id[r["instance_id"]], r.get("patch") or ""))}
    return {"resolved": len(resolved), "flagged": len(flagged), "episodes": flagged}
