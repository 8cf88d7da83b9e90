"""The peers of ``bayesdp bench peers`` are calibrated correctly: checked against closed forms, not against the
bench's own code."""

import math

import numpy as np
import pytest
from scipy.stats import norm

from bayesdp.bench.peers import gaussian_noise_multiplier, map_estimate, synthetic_d10


def _gdp_delta(mu: float, eps: float) -> float:
    """Dong-Roth-Su: the delta of mu-GDP at eps (the exact Gaussian mechanism)."""
    return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)


@pytest.mark.parametrize("eps, delta, count", [(1.0, 1e-5, 1), (0.5, 1e-6, 1), (4.0, 1e-6, 100)])
def test_noise_multiplier_matches_the_exact_gaussian_mechanism(eps, delta, count):
    """k Gaussian mechanisms of noise multiplier z compose to exactly sqrt(k)/z-GDP: the PLD calibration must sit
    at the exact boundary (never below it: that would be a privacy violation; within 1 % above it)."""
    z = gaussian_noise_multiplier(eps, delta, count)
    mu = math.sqrt(count) / z
    assert _gdp_delta(mu, eps) <= delta * (1 + 1e-3)           # private at the target (PLD is pessimistic)
    assert _gdp_delta(mu * 1.01, eps) > delta                     # and not much more noise than needed


def test_map_estimate_zeroes_the_gradient_of_the_negative_log_posterior():
    d = synthetic_d10(500, 3)
    w = map_estimate(d["X"], d["y"])
    X, y = d["X"].astype(np.float64), d["y"].astype(np.float64)
    grad = X.T @ (1 / (1 + np.exp(-X @ w)) - y) + w
    assert np.linalg.norm(grad) < 1e-8


def test_diffprivlib_peer_fits():
    """The diffprivlib peer runs with the installed scikit-learn (pyproject caps it below 1.8: 1.8 removed the
    ``multi_class`` argument diffprivlib 0.6.6 passes, 1.9 its import) and, with almost no noise (epsilon 1e9),
    fits the MAP of the bench's model: sklearn's C = 1 is the prior N(0, I), ``data_norm`` the declared norm 1."""
    pytest.importorskip("diffprivlib")
    from bayesdp.bench.peers import _diffprivlib

    d = synthetic_d10(500, 3)
    w = map_estimate(d["X"], d["y"])
    coef = _diffprivlib(d["X"], d["y"], 1e9, 1)
    assert coef.shape == w.shape
    assert np.max(np.abs(coef - w)) < 5e-3 * np.linalg.norm(w)      # lbfgs' tolerance, not noise


@pytest.mark.parametrize("args, words", [(["--datasets", "0"], "--datasets 0 must be >= 1"),
                                         (["--sizes", "1"], "--sizes 1 must be >= 2"),
                                         (["--epsilons", "-1"], "--epsilons -1.0 must be finite and > 0"),
                                         (["--epsilons", "nan"], "--epsilons nan must be finite and > 0"),
                                         (["--theta-scale", "0"], "--theta-scale 0 must be finite and > 0"),
                                         (["--theta-scale", "inf"], "--theta-scale inf must be finite and > 0")])
def test_bad_options_are_refused_in_one_line(args, words, capsys):
    """A bad option is one line and exit 2 before any dataset is simulated (--datasets 0 crashed with a
    traceback)."""
    from bayesdp.cli import main

    assert main(["bench", "peers", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err


def test_theta_scale_multiplies_the_true_coefficients():
    """``--theta-scale 3`` (docs/release.md §8.4, the strong-signal case): the same features, labels drawn with
    3 THETA; scale 1 is the default data bit for bit."""
    from bayesdp.bench.peers import THETA
    from bayesdp.bench.utility import synthetic

    one, three = synthetic_d10(300, 5), synthetic_d10(300, 5, 3.0)
    assert np.array_equal(one["X"], three["X"])
    assert np.array_equal(one["y"], synthetic(600, 5, THETA)["y"][:300])
    assert np.array_equal(three["y"], synthetic(600, 5, [3 * t for t in THETA])["y"][:300])
    assert not np.array_equal(one["y"], three["y"])
