"""The built-in corpus and its task builder: small pure-Python modules (corpus/) with seeded bugs.

generate.py builds data/tasks.jsonl from corpus/<module>/ (statements.py: issue texts from failing tests);
corpus/README.md has the rules. The tasks are graded by the judge (grading/judge.py).
"""
