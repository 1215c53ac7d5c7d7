"""The real-package task builder: bugs planted in pinned pure-Python PyPI packages, graded by their own suites.

packages.py pins the packages and fills the cache; generate.py builds data/tasks.jsonl (mutations.py: the extra
operators, statements.py: issue texts from failing tests); tasks.py loads the file against the cache.
"""
