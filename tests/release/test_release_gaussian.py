"""Secure discrete Gaussian noise (CKS20 Algorithm 3 on a power-of-two grid) and its accounting.

Independent values: the discrete Gaussian pmf and its tails summed with mpmath; the zCDP conversion checked
against the Bun-Steinke closed form (a weaker bound) and against dp-accounting's exact 1-D discrete Gaussian
PLD (zCDP must never be below it); the grid-rounding shift checked on random vectors.
"""

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from bayesdp.curves import RDP
from bayesdp.errors import AssumptionError, BudgetError
from bayesdp.publish import noise as N
from bayesdp.budget.accountant import consistency_problem as _consistency_problem
from bayesdp.budget.ledger import Ledger, discrete_gaussian_event, to_decimal


def _exact_pmf(sigma2, ys):
    mpmath.mp.dps = 30
    s2 = mpmath.mpf(Fraction(sigma2).numerator) / Fraction(sigma2).denominator
    n = int(40 * math.sqrt(float(sigma2))) + 20
    z = mpmath.fsum(mpmath.exp(-mpmath.mpf(k) ** 2 / (2 * s2)) for k in range(-n, n + 1))
    return [float(mpmath.exp(-mpmath.mpf(y) ** 2 / (2 * s2)) / z) for y in ys]


@pytest.mark.parametrize("sigma2", [Fraction(1, 2), Fraction(9, 4), Fraction(10)])
def test_discrete_gaussian_sampler_matches_the_exact_law(sigma2):
    """Chi-square goodness of fit of 20000 draws against the exact pmf (cells with >= 5 expected draws, the
    rest pooled); the noise is not seeded, so the threshold is a p-value of 1e-6."""
    n = 20000
    draws = np.array([N.sample_discrete_gaussian(sigma2) for _ in range(n)])
    assert draws.dtype.kind == "i"
    span = int(6 * math.sqrt(float(sigma2))) + 2
    ys = list(range(-span, span + 1))
    p = np.array(_exact_pmf(sigma2, ys))
    keep = p * n >= 5
    obs = np.array([np.sum(draws == y) for y in ys])
    f_obs = np.append(obs[keep], n - obs[keep].sum())
    f_exp = np.append(p[keep] * n, n - p[keep].sum() * n)
    assert stats.chisquare(f_obs, f_exp).pvalue > 1e-6


def test_discrete_gaussian_refuses_nonpositive_variance():
    for bad in (0, Fraction(-1, 2)):
        with pytest.raises(AssumptionError, match="sigma"):
            N.sample_discrete_gaussian(bad)


@pytest.mark.parametrize("sigma", [0.4, 1.0, 3.0])
def test_discrete_gaussian_variance_below_sigma2(sigma):
    """The reported noise variance sigma^2 is an upper bound (exact series)."""
    mpmath.mp.dps = 30
    n = int(40 * sigma) + 20
    w = [mpmath.exp(-mpmath.mpf(k) ** 2 / (2 * mpmath.mpf(sigma) ** 2)) for k in range(-n, n + 1)]
    var = mpmath.fsum(k * k * wk for k, wk in zip(range(-n, n + 1), w)) / mpmath.fsum(w)
    assert float(var) <= sigma * sigma


@pytest.mark.parametrize("sigma_grid", [1.5, 3.0, 10.0])
def test_tail_bound_and_interval_cover(sigma_grid):
    """P(G >= m) <= c Phi_bar((m - 1)/sigma) with c = 1/(1 - 1/(sqrt(2 pi) sigma)) (exact sums), and the
    interval half-width h covers |r G + rounding| with probability >= level (exact)."""
    mpmath.mp.dps = 30
    s = mpmath.mpf(sigma_grid)
    n = int(60 * sigma_grid) + 20
    w = {k: mpmath.exp(-mpmath.mpf(k) ** 2 / (2 * s * s)) for k in range(-n, n + 1)}
    z = mpmath.fsum(w.values())
    c = 1 / (1 - 1 / (mpmath.sqrt(2 * mpmath.pi) * s))
    for m in range(1, int(6 * sigma_grid) + 2):
        tail = mpmath.fsum(w[k] for k in range(m, n + 1)) / z
        assert tail <= c * mpmath.ncdf(-(m - 1) / s)
    r = 2.0 ** -3
    for level in (0.9, 0.95, 0.99):
        h = N.gaussian_interval_halfwidth(sigma_grid * r, r, level)
        # the released value misses the estimate by r |G| + (rounding <= r/2): miss iff |G| > (h - r/2)/r
        lim = math.floor((h - r / 2) / r)
        miss = mpmath.fsum(w[k] for k in range(-n, n + 1) if abs(k) > lim) / z
        assert miss <= 1 - level


def test_zcdp_rho_inverts_the_conversion():
    for eps, delta in ((0.25, 1e-5), (1.0, 1e-6), (4.0, 1e-5)):
        rho = N.zcdp_rho(eps, delta)
        assert RDP.linear(rho).epsilon(delta) <= eps < RDP.linear(rho * (1 + 1e-9)).epsilon(delta)
        # Bun-Steinke: rho + 2 sqrt(rho log(1/delta)) is a weaker conversion, so its rho is smaller
        L = math.log(1 / delta)
        rho_bs = (math.sqrt(L + eps) - math.sqrt(L)) ** 2
        assert rho >= rho_bs * (1 - 1e-12)
        # dp-accounting's RDP accountant on the same zCDP event agrees: never below (its orders grid is coarser
        # than the exact optimisation over alpha), within 1e-4 relative (measured 1.5e-5 at the worst case here)
        from dp_accounting import dp_event
        from dp_accounting.rdp import rdp_privacy_accountant

        acc = rdp_privacy_accountant.RdpAccountant()
        acc.compose(dp_event.ZCDpEvent(rho))
        assert eps * (1 - 1e-12) <= acc.get_epsilon(delta) <= eps * (1 + 1e-4)
    for bad in (0.0, 1.0, -1e-5):
        with pytest.raises(AssumptionError, match="delta"):
            N.zcdp_rho(1.0, bad)


@pytest.mark.parametrize("sigma,shift", [(1.0, 1), (2.0, 1), (2.0, 3), (5.0, 2)])
def test_zcdp_charge_is_above_the_exact_one_dimensional_privacy_loss(sigma, shift):
    """For one coordinate the exact privacy loss of the discrete Gaussian with an integer shift is dp-accounting's
    discrete Gaussian PLD; the zCDP charge (CKS20 Theorem 14 + Proposition 12) must never be below it."""
    from dp_accounting.pld import privacy_loss_distribution as P

    rho = shift * shift / (2 * sigma * sigma)
    for delta in (1e-3, 1e-5):
        exact = P.from_discrete_gaussian_mechanism(sigma, sensitivity=shift).get_epsilon_for_delta(delta)
        assert exact <= RDP.linear(rho).epsilon(delta) * (1 + 1e-6)


def test_calibration_is_exact_and_charges_the_rounding():
    for sens, eps, delta, k in ((0.5, 1.0, 1e-5, 30), (0.1, 0.3, 1e-6, 1), (2.0, 4.0, 1e-5, 4)):
        cal = N.gaussian_calibration(sens, eps, delta, k)
        r = Fraction(cal["grid"])
        assert r.numerator == 1 and (r.denominator & (r.denominator - 1)) == 0          # a power of two
        g = Fraction(cal["grid_rounding"])
        assert g * g >= k * r * r                                                          # g >= sqrt(k) r
        eff = Fraction(sens) + g
        assert eff * eff <= 2 * Fraction(cal["rho_target"]) * Fraction(cal["sigma"]) ** 2
        assert eff * eff / (2 * Fraction(cal["sigma"]) ** 2) <= Fraction(cal["rho"]) <= Fraction(cal["rho_target"])
        assert cal["sigma2_grid"] == (Fraction(cal["sigma"]) / r) ** 2
        assert RDP.linear(cal["rho"]).epsilon(delta) <= eps
        # the rounding is a relative 2^-40-ish slack: sigma is the continuous calibration to ~1e-11
        assert cal["sigma"] == pytest.approx(sens / math.sqrt(2 * cal["rho_target"]), rel=1e-9)


def test_grid_shift_bound():
    """|round(x/r) - round(x'/r)|_2 <= (|x - x'|_2 + sqrt(k) r)/r: the shift CKS20 Theorem 14 is applied to."""
    rng = np.random.default_rng(0)
    r = 0.25
    for _ in range(2000):
        k = int(rng.integers(1, 8))
        x = rng.normal(size=k) * 3
        v = rng.normal(size=k)
        xp = x + v / np.linalg.norm(v) * rng.uniform(0, 2)
        lhs = np.linalg.norm(np.rint(x / r) - np.rint(xp / r))
        assert lhs <= (np.linalg.norm(x - xp) + math.sqrt(k) * r) / r + 1e-9


def test_gaussian_release_values_on_grid_and_not_seeded():
    a = N.gaussian_release([0.25, -1.5, 3.0], l2_sensitivity=0.2, epsilon=1.0, delta=1e-5)
    b = N.gaussian_release([0.25, -1.5, 3.0], l2_sensitivity=0.2, epsilon=1.0, delta=1e-5)
    assert a.num_coords == 3 and all(float(v / a.grid).is_integer() for v in a.values)
    assert not np.array_equal(a.values, b.values)
    assert a.noise_variance == a.noise_scale ** 2
    with pytest.raises(AssumptionError, match="delta"):
        N.gaussian_release([1.0], 0.2, 1.0, 0.0)
    with pytest.raises(AssumptionError, match=r"^values\[0\] = .*nan\)? must be finite"):
        N.gaussian_release([float("nan")], 0.2, 1.0, 1e-5)


def _event(sens=0.5, eps=1.0, delta=1e-5, k=3):
    from bayesdp.budget.ledger import noise_delta, noise_epsilon

    cal = N.gaussian_calibration(sens, noise_epsilon(eps), noise_delta(delta), k)
    return discrete_gaussian_event(sens, cal["grid_rounding"], cal["sigma"], cal["rho"], cal["delta"], 0.0,
                                   coords=k, grid=cal["grid"]), cal


def test_ledger_consistency_of_a_discrete_gaussian_entry():
    ev, cal = _event()
    e, d = to_decimal("1.0"), to_decimal("0.00001")        # the decimals a release charges
    assert _consistency_problem(e, d, None, ev) is None
    # charged below what rho gives at the delta
    assert "gives epsilon" in _consistency_problem(to_decimal("0.9"), d, None, ev)
    # delta below the conversion delta
    assert "delta" in _consistency_problem(e, to_decimal("0.000001"), None, ev)
    # rho understating the noise (sigma edited down)
    bad = dict(ev, sigma=ev["sigma"] * 0.9)
    assert "rho" in _consistency_problem(e, d, None, bad)
    # released noise scale below the event's sigma
    assert "noise scale" in _consistency_problem(e, d, None, ev, {"noise_scale": ev["sigma"] * 0.5})
    with pytest.raises(BudgetError, match="rho"):
        discrete_gaussian_event(0.5, cal["grid_rounding"], cal["sigma"], cal["rho"] * 0.5, 1e-5)


def test_ledger_refuses_an_undercharged_gaussian_reservation(tmp_path):
    ev, cal = _event()
    led = Ledger.open(tmp_path / "l.jsonl", budget=5, budget_delta=1e-4)
    before = (tmp_path / "l.jsonl").read_bytes()
    with pytest.raises(BudgetError, match="refused"):
        with led.reserve("0.5", "0.00001", "m", "s", event=ev) as res:
            res.mark_drawn()
    assert (tmp_path / "l.jsonl").read_bytes() == before


def test_renyi_rule_composes_gaussian_releases():
    """Ten Gaussian releases of rho each: the accountant's Renyi composition is RDP.linear(10 rho) at the budget's
    delta (zCDP adds), far below the sum of their epsilons."""
    import bayesdp

    ev, cal = _event(eps=0.5, delta=1e-7)
    acct = bayesdp.PrivacyAccountant(budget=3.0, budget_delta=1e-5)
    for _ in range(10):
        acct.spend(ev)
    sp = acct.spent()
    assert sp["epsilon_sum"] == pytest.approx(5.0, rel=1e-6)
    assert sp["epsilon_rdp"] == pytest.approx(RDP.linear(10 * cal["rho"]).epsilon(acct_delta := 1e-5), rel=1e-6)
    assert sp["epsilon"] <= sp["epsilon_rdp"] < 3.0 and acct_delta == 1e-5
