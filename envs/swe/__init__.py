"""One SWE toolkit: an env that fixes a planted bug with bash, an editor and submit, graded by hidden tests.

    env.py          SweEnv: tools, levels, episode, reward (one env for every task source)
    sources.py      where tasks come from: the built-in corpus, real packages, a JSONL of yours
    tasks.py        the task schema (SWE-bench fields) and the JSONL / SWE-bench loaders
    evaluation.py   `agentrl eval`'s hook: splits, task validation, the gold / empty / expert oracles
    levels.py, expert.py, editor.py, observation.py, patches.py, mutate.py, audit.py
    grading/        grader (rebuild, score), judge + worker, the in-process harness, tampering
    lite/           the built-in corpus and its builder (swe_lite's tasks)
    real/           the pinned packages and their builder (swe_real's tasks)

The registered names `swe_lite` and `swe_real` are presets of SweEnv (envs/swe_lite, envs/swe_real) that differ
only in their default task source.
"""
