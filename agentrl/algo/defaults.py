"""The algorithm's name lists and default values, in one torch-free module: agentrl.algo's dataclasses and the run
config's `algo` section (agentrl.config) both read them here, so a default or a name is written once.

Values are docs/algorithms.md §11's recommendations; the functions that use them cite their sources.
"""

from __future__ import annotations

# ---- name lists ----
TOKEN_CORRECTIONS = ("none", "tis", "mis")
"""Token-level off-policy corrections on w = π_old/μ (§6): none, truncated IS, masked IS (IcePop band)."""
TRUST_REGIONS = ("geo", "seq", "veto", "opsm")
"""Trajectory-level trust regions (§6): Geo-RS, Seq-MIS, veto, OPSM."""
CREDIT_MODES = ("outcome", "turn", "gigpo")
"""How advantages reach tokens (docs/algorithms.md, turn-level credit)."""
KL_LOSS_ESTIMATORS = ("k1", "k2", "k3")
"""KL estimators the reference term may use (agentrl.algo.kl.KL_ESTIMATORS also has "abs", for metrics)."""

# ---- token and trajectory corrections (§6, §11: token TIS C=2 + veto 1e-4) ----
CORRECTION = "tis"
TIS_CAP = 2.0
MIS_BAND = (0.5, 5.0)
TRUST_REGION = ("veto",)
GEO_BAND = (0.999, 1.001)
SEQ_BAND = (0.5, 2.0)
VETO_FLOOR = 1e-4
OPSM_DELTA = 1e-4

# ---- policy loss (§3, §11: DAPO clip-higher + dual clip) ----
EPS_LOW = 0.2
EPS_HIGH = 0.28
DUAL_CLIP_C = 3.0
KL_COEF = 0.0
KL_ESTIMATOR = "k3"

# ---- advantages (§2) ----
ADV_EPS = 1e-6
ADV_ALPHA = 1.0
