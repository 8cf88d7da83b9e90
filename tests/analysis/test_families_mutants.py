"""Family rules of bayesdp/analysis/families.py against brute-force suprema computed here (issue 25):
each bound must equal the supremum over the declared domain, so a rule that reads only one end of an
interval (or drops a term) fails."""

import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.analysis import Domain, analyze

RNG = np.random.default_rng(25)
M_REC, D = 30, 3
X = RNG.standard_normal((M_REC, D))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01     # every row strictly inside the unit ball


def _student_score_sup_bruteforce(nu_lo: float, nu_hi: float, s: float) -> float:
    """sup over nu in [nu_lo, nu_hi] and residual r of |d/dloc log StudentT(y | nu, loc, s)| =
    (nu + 1)|r|/(nu s^2 + r^2), by brute force: a dense nu grid (ends included) and, for each nu, a dense
    r grid refined twice around its best point (no closed form used)."""
    best = 0.0
    for nu in np.linspace(nu_lo, nu_hi, 801):
        lo, hi = 0.0, 50.0 * s * max(1.0, np.sqrt(nu))
        for _ in range(3):
            r = np.linspace(lo, hi, 4001)
            v = (nu + 1.0) * r / (nu * s * s + r * r)
            i = int(np.argmax(v))
            step = r[1] - r[0]
            lo, hi = max(0.0, r[i] - step), r[i] + step
        best = max(best, float(v[i]))
    return best


def _t_model(df_offset: float, df_slope: float, scale: float):
    def model(X, y=None):
        # df = offset + slope * X[:, 0] ranges over [offset - |slope|, offset + |slope|] (|X[:, 0]| <= 1);
        # loc depends on theta through X[:, 1:] @ w[1:] (norm <= 1)
        w = numpyro.sample("w", dist.Normal(0, 1).expand([X.shape[1]]).to_event(1))
        with numpyro.plate("data", X.shape[0]):
            numpyro.sample("obs", dist.StudentT(df_offset + df_slope * X[:, 0], X[:, 1:] @ w[1:], scale), obs=y)
    return model


@pytest.mark.parametrize("offset,slope,scale", [
    (5.0, 4.0, 0.5),     # df in [1, 9]: the supremum is at the upper end ((nu+1)/(2 s sqrt(nu)): 10/6 > 2/2)
    (1.05, 0.95, 0.7),   # df in [0.1, 2]: the supremum is at the lower end
    (3.0, 2.5, 1.3),     # df in [0.5, 5.5]: interior minimum at df = 1, the upper end the larger
])
def test_student_t_score_bound_with_df_interval_is_the_bruteforce_sup(offset, slope, scale):
    an = analyze(_t_model(offset, slope, scale), {"X": X, "y": RNG.standard_normal(M_REC)},
                 Domain.parse(["X.norm=1"]))
    sup = _student_score_sup_bruteforce(offset - slope, offset + slope, scale)
    g = an.constants.record_grad_bound        # = sup |score| * sup |X[:, 1:]| = sup |score| * 1
    assert g >= sup
    assert g <= sup * (1 + 1e-5)
    assert "StudentT" in an.constants.provenance["record_grad_bound"]
    # the curvature |d^2/dloc^2| = (nu+1)|nu s^2 - r^2|/(nu s^2 + r^2)^2, brute force over the same grids
    hess = 0.0
    for nu in np.linspace(offset - slope, offset + slope, 401):
        r = np.linspace(0.0, 50.0 * scale * max(1.0, np.sqrt(nu)), 20001)
        hess = max(hess, float(np.max((nu + 1) * np.abs(nu * scale ** 2 - r * r) / (nu * scale ** 2 + r * r) ** 2)))
    assert hess <= an.constants.record_smoothness <= hess * (1 + 1e-5)


def test_student_t_score_bound_fixed_df_matches_closed_form_free_bruteforce():
    an = analyze(_t_model(4.0, 0.0, 0.8), {"X": X, "y": RNG.standard_normal(M_REC)}, Domain.parse(["X.norm=1"]))
    sup = _student_score_sup_bruteforce(4.0, 4.0, 0.8)
    assert sup <= an.constants.record_grad_bound <= sup * (1 + 1e-5)
