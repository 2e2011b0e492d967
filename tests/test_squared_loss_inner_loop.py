"""Chapter 5's inner-loop measurement (covpo.experiments.squared_loss.inner_loop)."""

from __future__ import annotations

import numpy as np
import pytest

from covpo.experiments.squared_loss import mse_path
from covpo.experiments.squared_loss.inner_loop import squared_loss_inner_loops
from covpo.experiments.sweeps import Method
from covpo import run
from tests.helpers import small_instance

SETTINGS = {"beta": 0.5, "batch_size": 32, "inner_steps": 6, "n_iterations": 3}
METHODS = (
    Method("KimiPO", "kimipo", {**SETTINGS, "extra_responses": 1}, (4.0,)),
    Method("KimiPO-Norm", "kimipo_norm", {**SETTINGS, "extra_responses": 4}, (4.0,)),
    Method("Rebel-OnPolicy", "rebel_onpolicy", SETTINGS, (4.0,)),
)


@pytest.mark.parametrize("method", METHODS, ids=lambda method: method.label)
def test_the_loops_output_is_the_runs_next_iterate(method):
    instance = small_instance()
    loops = squared_loss_inner_loops(method, instance, seed=2)
    assert loops.mse.shape == loops.stray.shape == (3, 7)
    np.testing.assert_allclose(loops.stray[:, 0], 1.0)
    trajectory = run(method.algorithm, instance, rng=np.random.default_rng(2), eta=4.0, **method.hyperparameters)
    np.testing.assert_allclose(loops.end_mse, mse_path(instance, trajectory).mse, rtol=1e-9)
    assert np.all(loops.end_mse < loops.start_mse)


def test_bad_arguments_are_named():
    ppo = Method("PPO", "ppo_noclip", SETTINGS, (1.0,))
    with pytest.raises(ValueError, match="method"):
        squared_loss_inner_loops(ppo, small_instance(), seed=0)
    with pytest.raises(ValueError, match="seed"):
        squared_loss_inner_loops(METHODS[0], small_instance(), seed=-1)
