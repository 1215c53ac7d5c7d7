"""Envs for the Ray backend tests.

Rollout workers cannot import this test package (it is not installed), so the test module ships this module
by value with `ray.cloudpickle.register_pickle_by_value`: the workers receive the classes themselves through
the driver's registration, as they would a user's env registered in a training script.
"""

from __future__ import annotations

import time

import agentrl
from agentrl.types import user


class TwoTurnParityEnv(agentrl.AgentEnv):
    """Two turns: the first action gets an observation back, the second ends the episode with reward 1 if the
    two actions have an even total length. The tiny random model gets both outcomes, and the second turn
    goes through the observation delta and the sticky routing of a multi-turn trajectory."""

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.lengths = []
        return [user(f"Say anything ({int(self.np_random.integers(1000))}).")], {"task_id": str(seed)}

    def step(self, action):
        self.lengths.append(len(action))
        if len(self.lengths) == 1:
            return [user(f"Again ({int(self.np_random.integers(1000))}).")], 0.0, False, False, {}
        return [], float(sum(self.lengths) % 2 == 0), True, False, {}

    def expert_action(self):
        return "ok"


class SlowEnv(TwoTurnParityEnv):
    """TwoTurnParityEnv whose every step first sleeps `delay_s` (a slow tool): episodes stay in flight long
    enough for a test to kill the worker running them."""

    def __init__(self, delay_s: float = 2.0):
        super().__init__()
        self.delay_s = delay_s

    def step(self, action):
        time.sleep(self.delay_s)
        return super().step(action)


agentrl.register("test_ray_parity", TwoTurnParityEnv, description="two-turn test env with reward variance")
agentrl.register("test_ray_slow", SlowEnv, description="test env whose steps sleep")
