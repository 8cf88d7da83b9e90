"""Each family rule of bayesdp/analysis/families.py called directly, against closed forms worked out here,
exact rationals and brute-force suprema over grids (issue 25, docs/mutation.md).

The rules are the small proofs behind every certificate of a model: a prior's K block (precision bounds) or
V part (gradient bound, smoothness, convexity), and a likelihood's score and curvature bounds over the
declared ranges.  Each number here is derived independently of the rule's code, and each refusal is checked
word for word (the analysis shows it to the user).
"""

from __future__ import annotations

import math
from fractions import Fraction as Q

import numpy as np
import numpyro.distributions as dist
import pytest

from bayesdp.analysis import families as F
from bayesdp.analysis.families import LIKELIHOOD_RULES, PRIOR_RULES, GaussianTerm, PriorFacts, Unsupported


def _is_up(got: float, q) -> bool:
    """``got`` is the smallest float >= q."""
    q = Q(q)
    return Q(got) >= q and Q(math.nextafter(got, -math.inf)) < q


def _is_down(got: float, q) -> bool:
    """``got`` is the largest float <= q."""
    q = Q(q)
    return Q(got) <= q and Q(math.nextafter(got, math.inf)) > q


def _upper(got: float, exact: float, rel: float = 1e-15) -> bool:
    return exact <= got <= exact * (1 + rel)


def prior(family, transform="IdentityTransform"):
    return PRIOR_RULES[(family, transform)]


# -- Gaussian priors -----------------------------------------------------------------------------------------


def test_normal_prior_precision_and_bounds():
    term = prior(dist.Normal)({"scale": np.array([0.5, 2.0])})
    assert isinstance(term, GaussianTerm) and term.diagonal is True
    assert term.precision.tolist() == [4.0, 0.25] and term.bounds == (0.25, 4.0)
    assert term.rule == "Normal prior -> quadratic K"
    assert term.detail == "K = |theta - loc|^2/(2 scale^2), scale in [0.5, 2]"
    # bounds rounded outward around the exact 1/scale^2 of the binary scales
    term = prior(dist.Normal)({"scale": np.array([[0.3, 3.0], [1.1, 0.7]])})
    assert _is_down(term.bounds[0], 1 / Q(3.0) ** 2) and _is_up(term.bounds[1], 1 / Q(0.3) ** 2)
    assert term.precision.shape == (4,) and term.precision[0] == 1 / (0.3 * 0.3)


def test_lognormal_prior_in_log_space():
    term = prior(dist.LogNormal, "ExpTransform")({"scale": np.array([0.25, 4.0])})
    assert term.precision.tolist() == [16.0, 1 / 16] and term.bounds == (1 / 16, 16.0) and term.diagonal
    assert term.rule == "LogNormal prior -> quadratic K in log-space"
    assert term.detail == ("K = |log sigma - loc|^2/(2 scale^2) (Jacobian included), scale in [0.25, 4]")


@pytest.mark.parametrize("scale,shown", [([0.0], "0"), ([1.0, -2.0, -3.0], "-2"), ([np.nan], "nan"),
                                         ([1.0, np.inf], "inf"), ([[1.0, 2.0], [3.0, -4.0]], "-4"),
                                         ([1.0, 0.0, 2.0], "0")])
def test_a_scale_that_is_not_positive_and_finite_is_named(scale, shown):
    for rule in (prior(dist.Normal), prior(dist.LogNormal, "ExpTransform"), prior(dist.Laplace),
                 prior(dist.Cauchy), prior(dist.HalfCauchy, "ExpTransform")):
        with pytest.raises(Unsupported) as e:
            rule({"scale": np.array(scale)})
        assert str(e.value) == f"its scale = {shown} must be finite and > 0"


def test_mvn_prior_eigenvalues_of_the_inverse_covariance():
    # L = [[2, 0], [1, 1]]: Sigma = [[4, 2], [2, 2]], eigenvalues 3 -+ sqrt(5); the precision's are their inverses
    term = prior(dist.MultivariateNormal)({"scale_tril": np.array([[2.0, 0.0], [1.0, 1.0]])})
    lo_ex, hi_ex = 1 / (3 + math.sqrt(5)), 1 / (3 - math.sqrt(5))
    assert term.diagonal is False and term.rule == "MultivariateNormal prior -> quadratic K"
    assert term.detail == "eigenvalues of the covariance L L^T (proven: enclosed product, verified Cholesky)"
    assert lo_ex * (1 - 1e-13) <= term.bounds[0] <= lo_ex and hi_ex <= term.bounds[1] <= hi_ex * (1 + 1e-13)
    # Sigma^-1 = [[2, -2], [-2, 4]] / 4, symmetric
    assert np.allclose(term.precision, np.array([[0.5, -0.5], [-0.5, 1.0]]), rtol=1e-14, atol=1e-15)
    assert np.array_equal(term.precision, term.precision.T)


def test_mvn_prior_refusals():
    with pytest.raises(Unsupported) as e:
        prior(dist.MultivariateNormal)({"scale_tril": np.eye(2)[None].repeat(3, axis=0)})
    assert str(e.value) == "a batch of MultivariateNormal priors is not covered"
    # a singular covariance [[1, 1], [1, 1]] (eigenvalue 0): not provably positive definite
    with pytest.raises(Unsupported) as e:
        prior(dist.MultivariateNormal)({"scale_tril": np.array([[1.0, 0.0], [1.0, 0.0]])})
    assert str(e.value) == "its covariance matrix is not (provably) positive definite"
    # an eigenvalue of 1e-17 is within the float error of Sigma (norm ~1): refused too
    with pytest.raises(Unsupported):
        prior(dist.MultivariateNormal)({"scale_tril": np.array([[1.0, 0.0], [0.0, 3e-9]])})
    # well above the error: admitted, the proven bounds enclosing the exact 1 and 1e6
    term = prior(dist.MultivariateNormal)({"scale_tril": np.diag([1.0, 1e-3])})
    assert term.bounds[1] >= 1e6 and term.bounds[0] <= 1.0


# -- V priors -----------------------------------------------------------------------------------------------------


def test_laplace_prior_gradient_bound():
    # |grad V| = |(1/b_j)_j| = sqrt(1 + 1/4 + 1/16) (not sqrt(sum b_j^2) = sqrt(21))
    facts = prior(dist.Laplace)({"scale": np.array([1.0, 2.0, 4.0])})
    assert isinstance(facts, PriorFacts)
    assert facts.v_grad_bound >= math.sqrt(1.3125)
    assert facts.v_grad_bound <= math.sqrt(1.3125) * (1 + 1e-15)
    # a site of shape (2, 2): every coordinate counts, sqrt(4 * 1/0.25) = 4
    facts2 = prior(dist.Laplace)({"scale": np.full((2, 2), 0.5)})
    assert 4.0 <= facts2.v_grad_bound <= 4.0 * (1 + 1e-15)
    assert (facts.k_strong_convexity, facts.k_smoothness, facts.v_smoothness, facts.v_convex) == (None, None, None,
                                                                                               True)
    assert facts.rule == "Laplace prior -> bounded-gradient convex V"
    assert facts.detail == "grad V = sign(theta - loc)/scale; not differentiable at loc (not smooth)"


def _student_sup_bruteforce(nu: float, s: float) -> tuple[float, float]:
    """sup_r |V'(r)| and sup_r |V''(r)| of V = (nu+1)/2 log(1 + r^2/(nu s^2)), on a dense grid (no closed form)."""
    r = np.linspace(0.0, 60.0 * s * max(1.0, math.sqrt(nu)), 600_001)
    d1 = (nu + 1) * r / (nu * s * s + r * r)
    d2 = (nu + 1) * (nu * s * s - r * r) / (nu * s * s + r * r) ** 2
    return float(d1.max()), float(np.abs(d2).max())


def test_student_t_prior_gradient_and_smoothness():
    facts = prior(dist.StudentT)({"df": np.array([3.0, 5.0]), "scale": np.array([0.5, 2.0])})
    g1, h1 = _student_sup_bruteforce(3.0, 0.5)
    g2, h2 = _student_sup_bruteforce(5.0, 2.0)
    # |grad V| over the two coordinates: sqrt(g1^2 + g2^2) = sqrt(16/3 + 36/80); smoothness max(h1, h2) = 4/0.75
    assert math.hypot(g1, g2) <= facts.v_grad_bound <= math.sqrt(16 / 3 + 0.45) * (1 + 1e-15)
    assert max(h1, h2) <= facts.v_smoothness and _is_up(facts.v_smoothness, Q(4) / Q(3, 4))
    assert facts.v_convex is False and facts.k_strong_convexity is None and facts.k_smoothness is None
    assert facts.rule == "StudentT/Cauchy prior -> bounded-gradient smooth non-convex V"
    assert facts.detail == "score (nu+1) r/(nu s^2 + r^2)"
    # the smoothness is the largest over the coordinates (here the second's: df 1, scale 0.5 -> 2/0.25 = 8)
    facts = prior(dist.StudentT)({"df": np.array([30.0, 1.0]), "scale": np.array([0.5, 0.5])})
    assert facts.v_smoothness == 8.0
    # df broadcast against the scales
    facts = prior(dist.StudentT)({"df": np.array(3.0), "scale": np.array([1.0, 1.0])})
    assert _upper(facts.v_grad_bound, math.sqrt(2 * 16 / 12))
    # a site of shape (2, 2): four coordinates, df 3 and scale 1: |grad V|^2 = 4 * 16/12; smoothness 4/3
    facts = prior(dist.StudentT)({"df": np.full((2, 2), 3.0), "scale": np.full((2, 2), 1.0)})
    assert _upper(facts.v_grad_bound, math.sqrt(4 * 16 / 12)) and _is_up(facts.v_smoothness, Q(4, 3))
    facts = prior(dist.Cauchy)({"scale": np.full((2, 3), 2.0)})
    assert _upper(facts.v_grad_bound, math.sqrt(6 * 0.25)) and facts.v_smoothness == 0.5


def test_cauchy_prior_is_df_one():
    # nu = 1: |V'| <= 2/(2 s) = 1/s, |V''| <= 2/s^2; scale 2: 0.5 and 0.5
    facts = prior(dist.Cauchy)({"scale": np.array([2.0])})
    g, h = _student_sup_bruteforce(1.0, 2.0)
    assert g <= facts.v_grad_bound <= 0.5 * (1 + 1e-15) and h <= facts.v_smoothness == 0.5
    with pytest.raises(Unsupported) as e:
        prior(dist.StudentT)({"df": np.array([0.0]), "scale": np.array([1.0])})
    assert str(e.value) == "its df = 0 must be finite and > 0"


def test_student_score_sq_exact():
    assert F.student_score_sq(3.0, 0.5) == Q(16, 3)
    assert F.student_score_sq(1.0, 2.0) == Q(1, 4)
    assert F.student_score_sq(0.1, 1.0) == (Q(0.1) + 1) ** 2 / (4 * Q(0.1))


def test_halfcauchy_prior_in_log_space():
    facts = prior(dist.HalfCauchy, "ExpTransform")({"scale": np.array([0.5, 3.0, 1.0])})
    # V(u) = log(1 + e^{2u}/s^2) - u: V' in (-1, 1), V'' = 4 s^2 e^{2u}/(s^2 + e^{2u})^2 <= 1, whatever s
    u = np.linspace(-30, 30, 200_001)
    for s in (0.5, 3.0, 1.0):
        e2 = np.exp(2 * u)
        d1 = 2 * e2 / (s * s + e2) - 1
        d2 = 4 * s * s * e2 / (s * s + e2) ** 2
        # d2 <= 1 exactly (4ab <= (a + b)^2); evaluated in float64 it may land an ulp or two above (numpy < 2)
        assert np.abs(d1).max() <= 1.0 and d2.max() <= 1.0 + 4 * np.finfo(float).eps and d2.max() > 0.999
    assert math.sqrt(3) <= facts.v_grad_bound <= math.sqrt(3) * (1 + 1e-15)
    assert (facts.v_smoothness, facts.v_convex, facts.k_strong_convexity, facts.k_smoothness) == (1.0, True, None, None)
    assert facts.rule == "HalfCauchy prior -> bounded-gradient smooth convex V in log-space"
    assert facts.detail == "V(u) = log(1 + e^(2u)/s^2) - u, u = log sigma"


def test_prior_rule_registers_under_every_key():
    class A(dist.Normal):
        pass

    class B(dist.LogNormal):
        pass

    fn = F.normal_prior
    try:
        assert F.prior_rule(A, (B, "ExpTransform"))(fn) is fn
        assert PRIOR_RULES[(A, "IdentityTransform")] is fn and PRIOR_RULES[(B, "ExpTransform")] is fn
    finally:
        PRIOR_RULES.pop((A, "IdentityTransform"), None)
        PRIOR_RULES.pop((B, "ExpTransform"), None)


# -- likelihood rules ------------------------------------------------------------------------------------------------


def test_likelihood_rule_registers_and_names():
    class MyBern(dist.BernoulliLogits):
        pass

    rule = LIKELIHOOD_RULES[dist.BernoulliLogits]
    try:
        assert F.likelihood_rule(rule, MyBern) is rule and LIKELIHOOD_RULES[MyBern] is rule
    finally:
        LIKELIHOOD_RULES.pop(MyBern, None)
    assert rule.rule == "Bernoulli(logits) likelihood, logits affine in theta"
    assert LIKELIHOOD_RULES[dist.StudentT].rule == "StudentT(loc) likelihood, loc affine in theta"


def _sigmoid_grid():
    return 1 / (1 + np.exp(-np.linspace(-40, 40, 4001)))


@pytest.mark.parametrize("y", [(0.0, 1.0), (0.25, 0.5), (0.0, 0.5), (0.5, 1.0), (0.1, 0.2), (0.3, 0.3)])
def test_bernoulli_score_is_the_sup_over_eta_and_responses(y):
    s = _sigmoid_grid()
    ys = np.linspace(y[0], y[1], 101)
    sup = float(np.abs(s[:, None] - ys[None, :]).max())
    got = LIKELIHOOD_RULES[dist.BernoulliLogits].score_bound({}, y)
    assert sup <= got <= sup + 1e-15 and got == max(y[1], 1 - y[0]) or _is_up(got, 1 - Q(y[0]))


def _binom_boxes(n_lo, n_hi, y_lo, y_hi):
    """Every record (n, y) with integer n in [n_lo, n_hi] and integer y in [y_lo, min(y_hi, n)]."""
    return [(n, y) for n in range(int(n_lo), int(n_hi) + 1) for y in range(int(y_lo), int(min(y_hi, n)) + 1)]


@pytest.mark.parametrize("n,y", [((3, 10), (0, 10)), ((3, 10), (2, 5)), ((5, 5), (0, 5)), ((2, 8), (1, 1)),
                                 ((0, 4), (0, 4)), ((6, 9), (4, 7))])
def test_binomial_score_and_difference_are_the_bruteforce_sups(n, y):
    rule = LIKELIHOOD_RULES[dist.BinomialLogits]
    fixed = {"total_count": (float(n[0]), float(n[1]))}
    recs = _binom_boxes(*n, *y)
    s = np.linspace(0.0, 1.0, 1001)       # sigmoid(eta) over (0, 1), its ends as limits
    score = max(float(np.abs(nn * s - yy).max()) for nn, yy in recs)
    diff = max(float(np.abs((n1 - n2) * s - (y1 - y2)).max()) for n1, y1 in recs for n2, y2 in recs)
    assert rule.score_bound(fixed, (float(y[0]), float(y[1]))) == score
    assert rule.diff_bound(fixed, (float(y[0]), float(y[1]))) == diff
    assert rule.hessian_bound(fixed) == n[1] / 4 and rule.support(fixed, (3,)) == (0.0, float(n[1]), True)
    assert rule.convex is True and rule.fixed == ("total_count",)


def test_binomial_total_count_must_be_bounded_and_nonnegative():
    rule = LIKELIHOOD_RULES[dist.BinomialLogits]
    for tc, shown in [((0.0, math.inf), "[0, inf]"), ((-1.0, 5.0), "[-1, 5]")]:
        for call in (lambda f: rule.score_bound(f, (0.0, 1.0)), rule.hessian_bound,
                     lambda f: rule.diff_bound(f, (0.0, 1.0))):
            with pytest.raises(Unsupported) as e:
                call({"total_count": tc})
            assert str(e.value) == (f"its total_count lies in {shown} over the domain; it must be bounded and >= 0")
    assert rule.hessian_bound({"total_count": (0.0, 0.0)}) == 0.0         # n = 0 admitted (lo >= 0)
    assert _is_up(rule.hessian_bound({"total_count": (0.0, 0.3)}), Q(0.3) / 4)


def test_negative_binomial_score_and_curvature():
    rule = LIKELIHOOD_RULES[dist.NegativeBinomial2]
    assert LIKELIHOOD_RULES[dist.GammaPoisson] is rule
    mu = np.exp(np.linspace(-30, 30, 6001))
    for k_box, y_hi in [((2.0, 3.0), 10.0), ((2.0, 3.0), 2.0), ((0.5, 0.5), 7.0)]:
        fixed = {"concentration": k_box}
        ks = np.linspace(*k_box, 11)
        ys = np.arange(0.0, y_hi + 1)
        psi = max(float(np.abs(k * (mu[:, None] - ys[None, :]) / (k + mu[:, None])).max()) for k in ks)
        hes = max(float((mu[:, None] * k * (k + ys[None, :]) / (k + mu[:, None]) ** 2).max()) for k in ks)
        got = rule.score_bound(fixed, (0.0, y_hi))
        assert psi <= got == max(k_box[1], y_hi) and psi >= got * (1 - 1e-6)
        got = rule.hessian_bound(fixed, (0.0, y_hi))
        assert hes <= got and _is_up(got, (Q(k_box[1]) + Q(y_hi)) / 4) and hes >= got * (1 - 1e-5)
    assert rule.hessian_bound({"concentration": (1.0, 2.0)}) == math.inf       # no response range: no bound
    assert rule.convex is True and rule.support({"concentration": (1.0, 1.0)}, (2,)) == (0.0, math.inf, True)


def test_negative_binomial_refusals():
    rule = LIKELIHOOD_RULES[dist.NegativeBinomial2]
    for k, shown in [((0.0, 2.0), "[0, 2]"), ((1.0, math.inf), "[1, inf]")]:
        for call in (lambda f: rule.score_bound(f, (0.0, 1.0)), lambda f: rule.hessian_bound(f, (0.0, 1.0))):
            with pytest.raises(Unsupported) as e:
                call({"concentration": k})
            assert str(e.value) == (f"its concentration lies in {shown} over the domain; it must be fixed, finite "
                                    "and > 0 (a model argument)")
    with pytest.raises(Unsupported) as e:
        rule.score_bound({"concentration": (1.0, 2.0)}, (0.0, math.inf))
    assert str(e.value) == ("its response has no declared upper bound; the score k (mu - y)/(k + mu) reaches y: "
                            "declare the counts' range (e.g. --domain y.max=B)")


def _cut(lo, hi):
    return {"cutpoints": None, "_box:cutpoints": (np.array(lo, float), np.array(hi, float))}


def test_ordered_logistic_bounds_and_cutpoint_checks():
    rule = LIKELIHOOD_RULES[dist.OrderedLogistic]
    ok = _cut([[-1.0, 0.5, 2.0]], [[-0.5, 1.0, 2.5]])
    assert rule.score_bound(ok, (0.0, 3.0)) == 1.0 and rule.hessian_bound(ok) == 0.5
    assert rule.support(ok, (5,)) == (0.0, 3.0, True) and F._ordered_k(ok) == 4
    # per record boxes (2 records): the second's are increasing too
    assert F._ordered_k(_cut([[-1.0, 0.0], [0.0, 1.0]], [[-0.5, 0.5], [0.5, 1.5]])) == 3
    assert F._ordered_k(_cut([[0.0]], [[0.0]])) == 2           # one cutpoint: nothing to order
    # brute force of psi = 1 - u - v and d psi/d eta = u(1 - u) + v(1 - v) over eta, class y, cutpoints c = (-1, 0.5, 2)
    c = np.array([-np.inf, -1.0, 0.5, 2.0, np.inf])
    eta = np.linspace(-40, 40, 8001)
    sig = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    for yv in range(4):
        u, v = sig(c[yv] - eta), sig(c[yv + 1] - eta)
        assert np.abs(1 - u - v).max() <= 1.0 and (u * (1 - u) + v * (1 - v)).max() <= 0.5
    assert np.abs(1 - sig(c[1] - eta)).max() > 0.999999           # y = 0 reaches |psi| -> 1
    for bad, msg in [(_cut([[-1.0, -np.inf]], [[0.0, 1.0]]), "its cutpoints are not bounded over the domain; fix "
                                                             "them (public constants)"),
                     (_cut([[-1.0, 0.0]], [[0.0, np.inf]]), "its cutpoints are not bounded over the domain; fix "
                                                            "them (public constants)"),
                     # boxes [-1, 0.5] and [0.5, 1]: the first can equal the second (not strictly increasing)
                     (_cut([[-1.0, 0.5]], [[0.5, 1.0]]), "its cutpoints are not proven strictly increasing over the "
                                                         "domain; fix them as increasing public constants"),
                     (_cut([[-1.0, 0.0], [0.0, 0.2]], [[-0.5, 0.5], [0.5, 1.5]]),
                      "its cutpoints are not proven strictly increasing over the domain; fix them as increasing "
                      "public constants")]:
        for call in (lambda f: rule.score_bound(f, (0.0, 2.0)), rule.hessian_bound, F._ordered_k):
            with pytest.raises(Unsupported) as e:
                call(bad)
            assert str(e.value) == msg


def test_student_t_likelihood_bounds_over_df_and_scale_intervals():
    t, c = LIKELIHOOD_RULES[dist.StudentT], LIKELIHOOD_RULES[dist.Cauchy]
    # df in [1, 9], scale in [0.5, 2]: sup at the smallest scale and the larger end value of (nu+1)^2/(4 s^2 nu):
    # nu = 1: 4/1 = 4, nu = 9: 100/9 = 11.1
    fixed = {"df": (1.0, 9.0), "scale": (0.5, 2.0)}
    assert _upper(t.score_bound(fixed, None), math.sqrt(100 / 9))
    # df in [0.1, 2]: the lower end wins ((1.1)^2/(4 0.25 0.1) = 12.1 > 9/(4 0.25 2) = 4.5)
    assert _upper(t.score_bound({"df": (0.1, 2.0), "scale": (0.5, 1.0)}, None), math.sqrt(12.1), rel=1e-14)
    # curvature (nu+1)/(nu s^2) at the smallest df and scale: df [2, 9], scale [0.5, 1]: 3/(2 * 0.25) = 6
    assert t.hessian_bound({"df": (2.0, 9.0), "scale": (0.5, 1.0)}) == 6.0
    assert _is_up(t.hessian_bound({"df": (0.3, 9.0), "scale": (0.7, 1.0)}), (Q(0.3) + 1) / (Q(0.3) * Q(0.7) ** 2))
    # Cauchy: nu = 1 whatever the fixed values say: score 1/s, curvature 2/s^2 at scale 2: 0.5, 0.5
    assert c.score_bound({"scale": (2.0, 3.0)}, None) == 0.5 and c.hessian_bound({"scale": (2.0, 3.0)}) == 0.5
    assert (t.convex, c.convex, t.fixed, c.fixed) == (False, False, ("df", "scale"), ("scale",))


def test_student_t_likelihood_refusals():
    t, c = LIKELIHOOD_RULES[dist.StudentT], LIKELIHOOD_RULES[dist.Cauchy]
    for rule, fixed, msg in [
        (t, {"df": (1.0, 2.0), "scale": (0.0, 1.0)}, "its scale can be 0 over the declared domain; it must be bounded "
                                                      "below by a positive number (declare the data it is computed "
                                                      "from, or fix it)"),
        (c, {"scale": (-1.0, 1.0)}, "its scale can be -1 over the declared domain; it must be bounded below by a "
                                    "positive number (declare the data it is computed from, or fix it)"),
        (t, {"df": (0.0, 2.0), "scale": (1.0, 1.0)}, "its df lies in [0, 2] over the declared domain; it must be "
                                                      "finite and > 0"),
        (t, {"df": (1.0, math.inf), "scale": (1.0, 1.0)}, "its df lies in [1, inf] over the declared domain; it must "
                                                           "be finite and > 0"),
    ]:
        for call in (lambda f: rule.score_bound(f, None), rule.hessian_bound):
            with pytest.raises(Unsupported) as e:
                call(fixed)
            assert str(e.value) == msg


def test_refused_families_say_why():
    assert LIKELIHOOD_RULES[dist.Normal].refuse.startswith("the Normal log-likelihood has gradient")
    assert LIKELIHOOD_RULES[dist.Poisson].predictor is None


@pytest.mark.parametrize("theta", [4.0004, 2.5071])
def test_mvn_prior_bounds_contain_the_exact_eigenvalues_of_an_ill_conditioned_covariance(theta):
    # Sigma = L L^T with L a rotation times diag(1e4, 1e-2): eigenvalues 1e8 and 1e-4.  At these two angles (found
    # by a search over 400) float64's eigvalsh returns a smallest eigenvalue 9e-5 (relative) ABOVE the exact one of
    # the binary L: only the widening by 8 d eps |Sigma| keeps 1/lambda_min an upper bound.
    import mpmath as mp

    L = np.array([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]]) @ np.diag([1e4, 1e-2])
    with mp.workdps(60):
        S = mp.matrix([[mp.mpf(float(x)) for x in row] for row in L])
        lam = sorted(mp.eigsy(S * S.T)[0])
        assert mp.mpf(float(np.linalg.eigvalsh(L @ L.T).min())) > lam[0]      # the float eigenvalue is too large
        term = prior(dist.MultivariateNormal)({"scale_tril": L})
        assert mp.mpf(term.bounds[0]) <= 1 / lam[1] and mp.mpf(term.bounds[1]) >= 1 / lam[0]
        assert mp.mpf(term.bounds[1]) <= 1 / lam[0] * (1 + mp.mpf("0.01"))    # widened, not by much


def test_ordered_logistic_cutpoints_as_one_box_and_a_late_violation():
    # constant cutpoints arrive as 1-d boxes (one per cutpoint): K = 3 cutpoints + 1 = 4 classes
    assert F._ordered_k(_cut([-1.0, 0.5, 2.0], [-0.5, 1.0, 2.5])) == 4
    # the violation between the 2nd and 3rd cutpoints (box [0.5, 1] against [0.9, 2.5]) is found
    with pytest.raises(Unsupported, match="not proven strictly increasing"):
        F._ordered_k(_cut([[-1.0, 0.5, 0.9]], [[-0.5, 1.0, 2.5]]))
    with pytest.raises(Unsupported, match="not proven strictly increasing"):
        F._ordered_k(_cut([-1.0, 0.5, 0.9], [-0.5, 1.0, 2.5]))


# -- rules added after the first mutation run: Beta prior, replace-one differences (docs/mutation.md, families) ------


def _beta_v_prime_sup(a: float, b: float) -> float:
    """sup over u of |V'(u)| of the Beta(a, b) potential in u = logit g with NumPyro's clipped sigmoid, on a grid:
    inside the clip V' = b g - a (1 - g) (g = sigmoid(u)), in its tails 2 sigmoid(u) - 1 (the unclipped Jacobian)."""
    u = np.linspace(-36.0, 36.0, 72_001)
    g = 1 / (1 + np.exp(-u))
    inside = np.abs(b * g - a * (1 - g)).max()
    tails = np.abs(2 * g - 1).max()
    return float(max(inside, tails))


def test_beta_prior_gradient_bound_smoothness_and_convexity_per_coordinate():
    rule = prior(dist.Beta, "SigmoidTransform")
    # a (2, 2) site: per coordinate sup |V'| = max(a, b, 1): 3, 1 (a, b < 1: the tails' 1), 1, 4.5
    a = np.array([[2.0, 0.5], [1.0, 0.3]])
    b = np.array([[3.0, 0.2], [1.0, 4.5]])
    facts = rule({"concentration1": a, "concentration0": b})
    assert isinstance(facts, PriorFacts)
    sups = [_beta_v_prime_sup(x, y) for x, y in zip(a.reshape(-1), b.reshape(-1))]
    assert math.sqrt(sum(s * s for s in sups)) <= facts.v_grad_bound
    assert _upper(facts.v_grad_bound, math.sqrt(9 + 1 + 1 + 20.25))
    assert (facts.k_strong_convexity, facts.k_smoothness, facts.v_smoothness, facts.v_convex) == (None, None, None,
                                                                                               False)
    assert facts.rule == "Beta prior -> bounded-gradient V in logit-space"
    assert facts.detail == ("V(u) = a softplus(-u) + b softplus(u), u = logit g; |V'| <= max(a, b, 1) with NumPyro's "
                            "clipped sigmoid; V' jumps where the clip starts: not smooth")
    # a, b <= 1 everywhere (1 itself included): convex; one coordinate Beta(1, 1) among others: not smooth
    facts = rule({"concentration1": np.array([0.5, 1.0]), "concentration0": np.array([1.0, 0.25])})
    assert facts.v_convex is True and facts.v_smoothness is None and _upper(facts.v_grad_bound, math.sqrt(2))
    for c1, c0 in [([0.5, 1.0], [1.0, 1.5]), ([1.5, 1.0], [1.0, 0.5])]:
        assert rule({"concentration1": np.array(c1), "concentration0": np.array(c0)}).v_convex is False
    # Beta(1, 1) on every coordinate: V' = 2 sigmoid(u) - 1, smoothness 1/2, convex; b broadcast against a
    facts = rule({"concentration1": np.ones((2, 3)), "concentration0": np.array(1.0)})
    assert facts.v_smoothness == 0.5 and facts.v_convex is True and _upper(facts.v_grad_bound, math.sqrt(6))
    assert facts.rule == "Beta prior -> bounded-gradient V in logit-space, smooth convex"
    assert facts.detail == ("V(u) = a softplus(-u) + b softplus(u), u = logit g; |V'| <= max(a, b, 1) with NumPyro's "
                            "clipped sigmoid")
    for c1, c0 in [(1.0, 2.0), (2.0, 1.0)]:   # one of the two concentrations is 1: not uniform, not smooth
        facts = rule({"concentration1": np.array(c1), "concentration0": np.array(c0)})
        assert facts.v_smoothness is None and facts.v_convex is False and _upper(facts.v_grad_bound, 2.0)
    # a broadcast against b, and the sum of squares of binary values: exact, rounded up once
    facts = rule({"concentration1": np.array(0.7), "concentration0": np.array([1.3, 2.9])})
    v = facts.v_grad_bound
    assert Q(v) ** 2 >= Q(1.3) ** 2 + Q(2.9) ** 2 and v <= math.sqrt(1.3 ** 2 + 2.9 ** 2) * (1 + 1e-15)


def test_beta_prior_refusals_name_the_concentration():
    rule = prior(dist.Beta, "SigmoidTransform")
    for p, msg in [({"concentration1": np.array([1.0, 0.0]), "concentration0": np.array(1.0)},
                    "its concentration1 = 0 must be finite and > 0"),
                   ({"concentration1": np.array(2.0), "concentration0": np.array([3.0, -1.0])},
                    "its concentration0 = -1 must be finite and > 0")]:
        with pytest.raises(Unsupported) as e:
            rule(p)
        assert str(e.value) == msg


def test_negative_binomial_difference_at_a_shared_predictor():
    rule = LIKELIHOOD_RULES[dist.NegativeBinomial2]
    mu = np.exp(np.linspace(-30, 30, 6001))[:, None, None]
    # one concentration k: psi(y) - psi(y') = k (y' - y)/(k + mu), sup y_hi - y_lo (mu -> 0)
    for k, (y_lo, y_hi) in [(2.5, (1.0, 7.0)), (0.3, (0.0, 4.0))]:
        ys = np.arange(y_lo, y_hi + 1)
        diff = np.abs(k * (ys[None, None, :] - ys[None, :, None]) / (k + mu)).max()
        got = rule.diff_bound({"concentration": (k, k)}, (y_lo, y_hi))
        assert diff <= got == y_hi - y_lo and diff >= got * (1 - 1e-9)
    # the difference of two binary response ends: exact, rounded up once
    assert _is_up(rule.diff_bound({"concentration": (0.3, 0.3)}, (0.1, 0.7)), Q(0.7) - Q(0.1))
    # a per-record k in [1.5, 3]: psi in (-y_hi, k_hi), |psi - psi'| < k_hi + y_hi = 12 (a bound, not attained)
    ks = np.linspace(1.5, 3.0, 7)
    ys = np.arange(2.0, 10.0)
    psi = (ks[None, :, None] * (mu - ys[None, None, :]) / (ks[None, :, None] + mu)).reshape(mu.shape[0], -1)
    spread = float((psi.max(axis=1) - psi.min(axis=1)).max())
    got = rule.diff_bound({"concentration": (1.5, 3.0)}, (2.0, 9.0))
    assert got == 12.0 and spread <= got
    assert _is_up(rule.diff_bound({"concentration": (0.3, 0.7)}, (0.0, 0.1)), Q(0.7) + Q(0.1))
    with pytest.raises(Unsupported) as e:
        rule.diff_bound({"concentration": (1.0, 1.0)}, (0.0, math.inf))
    assert str(e.value) == "its response has no declared upper bound"
    with pytest.raises(Unsupported) as e:
        rule.diff_bound({"concentration": (0.0, 1.0)}, (0.0, 3.0))
    assert str(e.value).startswith("its concentration lies in [0, 1] over the domain")


def _ordered_diff_bruteforce(c_first: float, c_last: float) -> float:
    """sup over eta of psi(y = 0) - psi(y' = K - 1) = 1 - F(c_first - eta) + F(c_last - eta), on a grid (F logistic)."""
    eta = np.concatenate([np.linspace(-40, 40, 80_001), [(c_first + c_last) / 2]])
    F_ = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    return float((1 - F_(c_first - eta) + F_(c_last - eta)).max())


def test_ordered_logistic_difference_over_per_record_cutpoint_boxes():
    import mpmath as mp

    rule = LIKELIHOOD_RULES[dist.OrderedLogistic]
    # two records, three cutpoints each, boxes increasing within each record; the sup takes the first cutpoint's
    # smallest lower end over the records (-1.5, record 2) and the last cutpoint's largest upper end (3.1, record 2):
    # D = 4.6, not the middle cutpoint's ends nor record 1's
    f = _cut([[-1.0, 0.5, 2.0], [-1.5, 0.2, 1.8]], [[-0.5, 1.0, 2.5], [-1.2, 0.4, 3.1]])
    got = rule.diff_bound(f, (0.0, 3.0))
    with mp.workdps(50):
        exact = 1 + mp.tanh((mp.mpf(3.1) - mp.mpf(-1.5)) / 4)
        assert mp.mpf(got) >= exact and mp.mpf(got) <= exact * (1 + mp.mpf("1e-14"))
    assert _ordered_diff_bruteforce(-1.5, 3.1) <= got
    # public cutpoints (lo = hi) given as one 1-d box: D = c_3 - c_1 = 3
    got = rule.diff_bound(_cut([-1.0, 0.5, 2.0], [-1.0, 0.5, 2.0]), (0.0, 3.0))
    with mp.workdps(50):
        exact = 1 + mp.tanh(mp.mpf(3) / 4)
        assert mp.mpf(got) >= exact and mp.mpf(got) <= exact * (1 + mp.mpf("1e-14"))
    assert _ordered_diff_bruteforce(-1.0, 2.0) >= float(exact) * (1 - 1e-9)    # attained
    # one public cutpoint (K = 2): D = 0, the difference is at most 1 (y = 0 against y' = 1)
    got = rule.diff_bound(_cut([[0.3]], [[0.3]]), (0.0, 1.0))
    assert 1.0 <= got <= 1.0 + 1e-15 and _ordered_diff_bruteforce(0.3, 0.3) <= got
    # three records: D = 1.02 - 0.0 (the third record's last upper end, the first and third records' first lower end)
    f = _cut([[0.0, 1.0], [0.01, 1.0], [0.0, 1.0]], [[0.0, 1.0], [0.01, 1.0], [0.0, 1.02]])
    got = rule.diff_bound(f, (0.0, 2.0))
    with mp.workdps(50):
        exact = 1 + mp.tanh((mp.mpf(1.02) - mp.mpf(0.0)) / 4)
        assert mp.mpf(got) >= exact and mp.mpf(got) <= exact * (1 + mp.mpf("1e-14"))
    with pytest.raises(Unsupported, match="not proven strictly increasing"):
        rule.diff_bound(_cut([[-1.0, 0.5]], [[0.5, 1.0]]), (0.0, 2.0))
