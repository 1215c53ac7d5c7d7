"""swe_lite: small self-contained bug-fix tasks (SWE-bench format) solved with bash, an editor and submit.

See env.py for the environment, tasks.py for the task schema and loaders, generate.py for the corpus.
"""
