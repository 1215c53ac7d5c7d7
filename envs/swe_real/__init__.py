"""swe_real: SWE tasks planted in real pure-Python packages from PyPI, graded by their own test suites.

See packages.py for the pinned packages, generate.py for the tasks, tasks.py for the loader, env.py for the env.
"""
