"""Grading an SWE attempt: what is taken from the agent, where the tests run, and who decides the verdict.

grader.py rebuilds the tree and scores it; one worker (worker.py) runs the repo's code in the grading sandbox and
answers one judge over wire.py: judge.py on the host for swe_lite's own corpus, or suite_judge.py in a sandbox of
its own for real packages (suite.py starts those two); harness.py runs arbitrary pytest suites in the sandbox
(in_process); tampering.py refuses shadowing modules and flags structural exploits before anything runs.
docs/swe_lite.md and docs/swe_real.md have the rules.
"""
