"""Grading an SWE attempt: what is taken from the agent, where the tests run, and who decides the verdict.

grader.py rebuilds the tree and scores it; judge.py and worker.py decide swe_lite's own corpus on the host against
a sandboxed worker; harness.py runs arbitrary pytest suites in the sandbox (in_process); tampering.py refuses
shadowing modules and flags structural exploits before anything runs. docs/swe_lite.md has the rules.
"""
