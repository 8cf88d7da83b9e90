"""Family rules: one registered rule per distribution family, each a small proof (docs/analysis.md).

Prior rules (latent sites with real support, parameters proven constant) split the site's term of
the potential ``-log prior`` into a part of K (strongly convex, smooth, data-independent) and a
part of V (bounded gradient).  They receive the parameters as float64 arrays broadcast to the
site's shape.

Likelihood rules (observed sites in the record plate) bound the *score* ``psi = d l / d eta`` of
``l = -log p(y | eta)`` in its predictor ``eta`` (logits / loc), uniformly in eta and over the
response range, and the norm of ``d psi / d eta``.  The parameters a rule treats as fixed
(Student-t df and scale, Binomial total_count) arrive as intervals ``(inf, sup)`` over the
declared domain (proven theta-free by the analysis), the response as its interval.
``grad_theta l = J^T psi`` and ``Hess_theta l = J^T (d psi/d eta) J`` for an affine predictor
with Jacobian ``J`` turn them into per-record constants (:mod:`bayesdp.analysis.constants`).
Add a family with :func:`prior_rule` / :func:`likelihood_rule`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np
import numpyro.distributions as dist

from . import rounding as r
from .spectrum import Enclosed, eig_bounds

__all__ = ["GaussianTerm", "LIKELIHOOD_RULES", "LikelihoodRule", "PRIOR_RULES", "PriorFacts", "Unsupported",
           "likelihood_rule", "prior_rule"]


class Unsupported(Exception):
    """A rule's hypothesis does not hold: the message says which.

    The analysis turns it into an entry of ``Analysis.unproven`` (or a one-line
    :class:`~bayesdp.errors.BayesDPError` naming the site); it is not raised to the user as such.

    Examples:
        >>> import numpy as np
        >>> import numpyro.distributions as dist
        >>> from bayesdp.analysis.families import PRIOR_RULES, Unsupported
        >>> try:
        ...     PRIOR_RULES[(dist.Normal, "IdentityTransform")]({"scale": np.array([0.0])})
        ... except Unsupported as exc:
        ...     print(exc)
        its scale = 0 must be finite and > 0
    """


# ---------------------------------------------------------------------------
# prior rules
#
# A prior rule sees the site's parameters (float64, broadcast to the site's shape) and knows the transform
# T = biject_to(support) of the site: the potential it describes is the site's term in the UNCONSTRAINED
# space, -log p(T(u)) - log|det J_T(u)|.  Two kinds:
#   * Gaussian rules: the term is exactly (u - loc)^T P (u - loc)/2 + const, with `loc` possibly affine in
#     other latent sites (a hierarchical Gaussian); these terms are assembled into ONE quadratic K over
#     every coordinate (bayesdp.analysis.constants);
#   * V rules: a bounded-gradient term (no K part).


@dataclass(frozen=True)
class PriorFacts:
    """What a prior rule proved about one latent site's term of the potential: a K block and/or a V part.

    Args:
        rule: the rule's name (provenance).
        k_strong_convexity: mu of this site's K block (None: no K part).
        k_smoothness: L of this site's K block.
        v_grad_bound: sup |grad V_site| (rounded up).
        v_smoothness: Lipschitz constant of grad V_site (None: not smooth).
        v_convex: whether V_site is convex.
        detail: how (for the provenance).

    Examples:
        A Laplace(0, 1) prior on two coordinates: V = |theta_1| + |theta_2|, |grad V| <= sqrt(2):

        >>> import numpy as np
        >>> import numpyro.distributions as dist
        >>> from bayesdp.analysis.families import PRIOR_RULES
        >>> facts = PRIOR_RULES[(dist.Laplace, "IdentityTransform")]({"scale": np.array([1.0, 1.0])})
        >>> round(facts.v_grad_bound, 6), facts.v_smoothness, facts.v_convex
        (1.414214, None, True)
    """

    rule: str
    k_strong_convexity: float | None   # mu of this site's K block (None: no K part)
    k_smoothness: float | None         # L of this site's K block
    v_grad_bound: float                # sup |grad V_site|
    v_smoothness: float | None         # Lipschitz constant of grad V_site (None: not smooth)
    v_convex: bool
    detail: str = ""


@dataclass(frozen=True)
class GaussianTerm:
    """-log p = (u - loc)^T precision (u - loc)/2 + const in the site's unconstrained coordinates u.
    ``diagonal``: the precision is diagonal (then ``precision`` holds the diagonal); ``exact``: its entries
    are the exact float values (1/scale^2 rounded both ways in ``bounds``).

    Args:
        rule: the rule's name (provenance).
        precision: the precision matrix (or its diagonal when ``diagonal``).
        diagonal: whether the precision is diagonal.
        bounds: (min, max) eigenvalue bounds of the precision alone (rounded outward).
        detail: how (for the provenance).
        scale_tril: for a full precision, the float64 factor L with precision exactly (L L^T)^-1.

    Examples:
        A Normal prior with scales 0.5 and 2: precision diag(4, 1/4):

        >>> import numpy as np
        >>> import numpyro.distributions as dist
        >>> from bayesdp.analysis.families import PRIOR_RULES
        >>> term = PRIOR_RULES[(dist.Normal, "IdentityTransform")]({"scale": np.array([0.5, 2.0])})
        >>> term.precision.tolist(), term.bounds, term.diagonal
        ([4.0, 0.25], (0.25, 4.0), True)
    """

    rule: str
    precision: np.ndarray
    diagonal: bool
    bounds: tuple          # (min, max) eigenvalue bounds of the precision alone (rounded outward)
    detail: str = ""
    scale_tril: np.ndarray | None = None   # a full precision is exactly (L L^T)^-1 (``precision`` is its float estimate)


PRIOR_RULES: dict[tuple, Callable] = {}
IDENTITY, EXP = "IdentityTransform", "ExpTransform"


def prior_rule(*keys):
    """Register a prior rule for (family, transform name) keys (a bare family means the identity).

    A prior rule takes the site's parameters (name -> float64 array broadcast to the site's shape, proven
    constant) and returns a :class:`GaussianTerm` or :class:`PriorFacts` for the site's term of the potential in
    the unconstrained space, or raises :class:`Unsupported`.  It is stored in ``PRIOR_RULES``.

    Args:
        *keys: distribution classes, or ``(class, transform name)`` pairs (e.g. ``"ExpTransform"`` for a
            positive parameter sampled in log-space).

    Returns:
        A decorator registering the function under every key and returning it unchanged.

    Examples:
        A subclass of Normal with the same density gets the Normal rule:

        >>> import numpyro.distributions as dist
        >>> from bayesdp.analysis.families import PRIOR_RULES, prior_rule
        >>> class MyNormal(dist.Normal):
        ...     pass
        >>> normal = PRIOR_RULES[(dist.Normal, "IdentityTransform")]
        >>> prior_rule(MyNormal)(normal) is normal
        True
        >>> PRIOR_RULES.pop((MyNormal, "IdentityTransform")) is normal
        True
    """
    def deco(fn):
        for k in keys:
            PRIOR_RULES[k if isinstance(k, tuple) else (k, IDENTITY)] = fn
        return fn
    return deco


def _positive(name: str, a: np.ndarray, site_hint: str = "") -> np.ndarray:
    if not (np.all(np.isfinite(a)) and np.all(a > 0)):
        bad = a.reshape(-1)[np.argmax(~(np.isfinite(a.reshape(-1)) & (a.reshape(-1) > 0)))]
        raise Unsupported(f"its {name} = {bad:g} must be finite and > 0{site_hint}")
    return a


def _diag_term(rule: str, scale: np.ndarray, detail: str) -> GaussianTerm:
    s = _positive("scale", scale).reshape(-1)
    smin, smax = float(s.min()), float(s.max())
    with np.errstate(divide="ignore", over="ignore"):    # a scale below 1e-154: the float precision is inf (the
        prec = 1.0 / (s * s)                            # proven bounds are the exact fractions beside it)
    return GaussianTerm(rule, prec, True, (r.div_down(1, Fraction(smax) ** 2), r.div_up(1, Fraction(smin) ** 2)),
                        f"{detail}, scale in [{smin:.6g}, {smax:.6g}]")


@prior_rule(dist.Normal)
def normal_prior(p: dict) -> GaussianTerm:
    """Normal(m, s) per coordinate: (theta_j - m_j)^2 / (2 s_j^2): precision diag(1/s_j^2) (exact)."""
    return _diag_term("Normal prior -> quadratic K", p["scale"], "K = |theta - loc|^2/(2 scale^2)")


@prior_rule((dist.LogNormal, EXP))
def lognormal_prior(p: dict) -> GaussianTerm:
    """LogNormal(m, s) of a positive parameter sigma, in u = log sigma (the samplers' coordinate):
    -log p(e^u) - u = (u - m)^2/(2 s^2) + const (the Jacobian term u cancels the -log sigma of the
    density): a Gaussian in u, precision diag(1/s^2) (docs/analysis.md)."""
    return _diag_term("LogNormal prior -> quadratic K in log-space", p["scale"],
                      "K = |log sigma - loc|^2/(2 scale^2) (Jacobian included)")


@prior_rule(dist.MultivariateNormal)
def mvn_prior(p: dict) -> GaussianTerm:
    """MultivariateNormal(m, Sigma): (theta - m)^T Sigma^-1 (theta - m)/2 with Sigma = L L^T exactly, L the
    float64 Cholesky factor the program uses; eigenvalues of Sigma^-1 are 1/eigenvalues of Sigma, proven by
    :func:`~bayesdp.analysis.spectrum.eig_bounds` on the enclosed product L L^T (docs/analysis.md, "Eigenvalues")."""
    L = np.asarray(p["scale_tril"], dtype=np.float64)
    if L.ndim != 2:
        raise Unsupported("a batch of MultivariateNormal priors is not covered")
    if not np.isfinite(L).all():
        raise Unsupported("its scale_tril has an entry that is not finite")
    enclosed = Enclosed.exact(L) @ Enclosed.exact(L.T)
    lo, hi = eig_bounds(enclosed)
    if not lo > 0 or not math.isfinite(hi):
        raise Unsupported("its covariance matrix is not (provably) positive definite")
    sigma = enclosed.symmetric().val
    precision = np.linalg.inv(sigma)
    return GaussianTerm("MultivariateNormal prior -> quadratic K", 0.5 * (precision + precision.T), False,
                        (r.div_down(1, hi), r.div_up(1, lo)),
                        "eigenvalues of the covariance L L^T (proven: enclosed product, verified Cholesky)", L)


@prior_rule(dist.Laplace)
def laplace_prior(p: dict) -> PriorFacts:
    """Laplace(m, b) per coordinate: V = sum |theta_j - m_j| / b_j, convex, not smooth,
    |grad V| = |(sign(theta_j - m_j)/b_j)_j| <= sqrt(sum 1/b_j^2) (= sqrt(d)/b for equal scales)."""
    b = _positive("scale", p["scale"])
    g = r.sqrt_up(sum((1 / Fraction(float(x)) ** 2 for x in np.asarray(b).reshape(-1)), Fraction(0)))
    return PriorFacts("Laplace prior -> bounded-gradient convex V", None, None, g, None, True,
                      "grad V = sign(theta - loc)/scale; not differentiable at loc (not smooth)")


@prior_rule(dist.StudentT, dist.Cauchy)
def studentt_prior(p: dict) -> PriorFacts:
    """StudentT(nu, m, s) per coordinate: V_j = (nu+1)/2 log(1 + r^2/(nu s^2)), r = theta_j - m_j;
    |V_j'| <= (nu+1)/(2 s sqrt(nu)) (at r^2 = nu s^2), |V_j''| <= (nu+1)/(nu s^2) (at r = 0); not convex.
    Cauchy is nu = 1."""
    s = _positive("scale", p["scale"])
    nu = _positive("df", p["df"]) if "df" in p else np.ones_like(s)
    s, nu = np.broadcast_arrays(np.asarray(s, np.float64), np.asarray(nu, np.float64))
    g2 = sum((student_score_sq(float(n), float(sc)) for n, sc in zip(nu.reshape(-1), s.reshape(-1))), Fraction(0))
    h = max(r.up((Fraction(float(n)) + 1) / (Fraction(float(n)) * Fraction(float(sc)) ** 2))
            for n, sc in zip(nu.reshape(-1), s.reshape(-1)))
    return PriorFacts("StudentT/Cauchy prior -> bounded-gradient smooth non-convex V", None, None,
                      r.sqrt_up(g2), h, False, "score (nu+1) r/(nu s^2 + r^2)")


@prior_rule((dist.HalfCauchy, EXP))
def halfcauchy_prior(p: dict) -> PriorFacts:
    """HalfCauchy(s) of a positive parameter sigma, in u = log sigma: V(u) = log(1 + e^{2u}/s^2) - u + const
    (Jacobian included).  V'(u) = 2e^{2u}/(s^2 + e^{2u}) - 1 lies in (-1, 1); V''(u) = 4 s^2 e^{2u}/(s^2 +
    e^{2u})^2 lies in (0, 1] (maximum 1 at e^{2u} = s^2): per coordinate |grad| <= 1, smoothness 1, convex,
    whatever the scale (docs/analysis.md)."""
    s = _positive("scale", p["scale"])
    n = int(np.asarray(s).size)
    return PriorFacts("HalfCauchy prior -> bounded-gradient smooth convex V in log-space", None, None,
                      r.sqrt_up(n), 1.0, True, "V(u) = log(1 + e^(2u)/s^2) - u, u = log sigma")


@prior_rule((dist.Beta, "SigmoidTransform"))
def beta_prior(p: dict) -> PriorFacts:
    """Beta(a, b) of a unit-interval parameter g, in u = logit g (the samplers' coordinate; NumPyro's value is
    g = clip(sigmoid(u), tiny, 1 - eps) and its Jacobian term -softplus(u) - softplus(-u) is not clipped).  Where
    the clip is inactive, V(u) = a softplus(-u) + b softplus(u) + const (Jacobian included): V'(u) = b g - a (1 - g)
    in (-a, b), V''(u) = (a + b) g (1 - g) in (0, (a + b)/4].  Where it is active, g is a constant and V(u) =
    softplus(u) + softplus(-u) + const: V' = 2 sigmoid(u) - 1 in (-1, 1).  So per coordinate |V'| <= max(a, b, 1).
    At the clip points V' jumps from about b to 1 (and from -1 to -a): V is smooth (L = 1/2) only for a = b = 1
    (V' = 2 sigmoid(u) - 1 everywhere), and convex when a <= 1 and b <= 1 (V'' >= 0 and every jump upward)
    (docs/analysis.md)."""
    a = _positive("concentration1", p["concentration1"])
    b = _positive("concentration0", p["concentration0"])
    a, b = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    g2 = sum((Fraction(max(float(x), float(y), 1.0)) ** 2 for x, y in zip(a.reshape(-1), b.reshape(-1))), Fraction(0))
    uniform = bool(np.all(a == 1.0) and np.all(b == 1.0))
    convex = bool(np.all(a <= 1.0) and np.all(b <= 1.0))
    return PriorFacts("Beta prior -> bounded-gradient V in logit-space" + (", smooth convex" if uniform else ""),
                      None, None, r.sqrt_up(g2), 0.5 if uniform else None, convex,
                      "V(u) = a softplus(-u) + b softplus(u), u = logit g; |V'| <= max(a, b, 1) with NumPyro's clipped "
                      "sigmoid" + ("" if uniform else "; V' jumps where the clip starts: not smooth"))


def student_score_sq(nu: float, s: float) -> Fraction:
    """((nu+1)/(2 s sqrt(nu)))^2 = (nu+1)^2/(4 s^2 nu), exact."""
    nu_q, s_q = Fraction(nu), Fraction(s)
    return (nu_q + 1) ** 2 / (4 * s_q * s_q * nu_q)


GAUSSIAN_RULES = {k: v for k, v in PRIOR_RULES.items() if v in (normal_prior, lognormal_prior, mvn_prior)}

#: positive-support priors whose unconstrained potential has an unbounded gradient (refused, with a fix)
UNBOUNDED_POSITIVE = {
    "HalfNormal": "e^(2u)/(2 s^2) - u", "Exponential": "rate e^u - u", "Gamma": "rate e^u - concentration u",
    "InverseGamma": "rate e^-u + concentration u", "Weibull": "(e^u/scale)^k - k u",
    "Chi2": "e^u/2 - (df/2) u", "HalfNormalLogits": "",
}


# ---------------------------------------------------------------------------
# likelihood rules


@dataclass(frozen=True)
class LikelihoodRule:
    """How one family's ``-log p(y | eta)`` depends on its predictor ``eta``.

    ``predictor``: parameter holding eta; ``event_ndim``: 1 if eta has a trailing class axis;
    ``fixed``: parameters that must be theta-free (their intervals over the domain are passed);
    ``score_bound(fixed, y)``: sup over eta and responses of |psi| for one unit;
    ``hessian_bound(fixed)``: sup of the operator norm of d psi / d eta for one unit;
    ``convex``: l convex in eta; ``support(fixed, eta_shape)``: (lo, hi, integer) of the response;
    ``refuse``: why the family has no bounded score (unbounded gradient).

    Args:
        family: the family's name (provenance).
        predictor: the parameter holding eta (None for a refused family).
        event_ndim: 1 if eta has a trailing class axis, else 0.
        fixed: parameters that must be theta-free.
        score_bound: ``(fixed, y) -> float``, sup over eta and the responses of |psi| for one unit.
        hessian_bound: ``fixed -> float``, sup of the operator norm of d psi / d eta for one unit.
        convex: whether l is convex in eta.
        support: ``(fixed, eta_shape) -> (lo, hi, integer)`` of the response.
        refuse: why the family has no bounded score, or None.
        diff_bound: ``(fixed, y) -> float``, sup over the responses of two records and one shared eta of
            ``|psi(y, eta) - psi(y', eta)|`` (used when the predictor reads no data: both records see the same eta).

    Examples:
        Bernoulli with logits: psi = sigmoid(eta) - y, |psi| <= 1 and |d psi / d eta| <= 1/4:

        >>> import numpyro.distributions as dist
        >>> from bayesdp.analysis.families import LIKELIHOOD_RULES
        >>> rule = LIKELIHOOD_RULES[dist.BernoulliLogits]
        >>> rule.score_bound({}, (0.0, 1.0)), rule.hessian_bound({}), rule.convex
        (1.0, 0.25, True)
    """

    family: str
    predictor: str | None
    event_ndim: int = 0
    fixed: tuple[str, ...] = ()
    score_bound: Callable | None = None
    hessian_bound: Callable | None = None
    convex: bool = False
    support: Callable | None = None
    refuse: str | None = None
    diff_bound: Callable | None = None      # (fixed, y) -> sup |psi(y, eta) - psi(y', eta)| at one shared eta

    @property
    def rule(self) -> str:
        """The rule's name for the provenance: ``FAMILY likelihood, PREDICTOR affine in theta``."""
        return f"{self.family} likelihood, {self.predictor} affine in theta"


LIKELIHOOD_RULES: dict[type, LikelihoodRule] = {}


def likelihood_rule(rule: LikelihoodRule, *families: type) -> LikelihoodRule:
    """Register a likelihood rule for distribution classes (stored in ``LIKELIHOOD_RULES``).

    Args:
        rule: the :class:`LikelihoodRule`.
        *families: the distribution classes it covers.

    Returns:
        ``rule``.

    Examples:
        >>> import numpyro.distributions as dist
        >>> from bayesdp.analysis.families import LIKELIHOOD_RULES, likelihood_rule
        >>> class MyBernoulli(dist.BernoulliLogits):
        ...     pass
        >>> bernoulli = LIKELIHOOD_RULES[dist.BernoulliLogits]
        >>> likelihood_rule(bernoulli, MyBernoulli).rule
        'Bernoulli(logits) likelihood, logits affine in theta'
        >>> LIKELIHOOD_RULES.pop(MyBernoulli) is bernoulli
        True
    """
    for f in families:
        LIKELIHOOD_RULES[f] = rule
    return rule


def _bern_score(fixed, y):
    # psi = sigmoid(eta) - y, y in [lo, hi] in [0, 1]: sup |psi| = max(hi, 1 - lo)
    lo, hi = y
    return max(hi, r.up(1 - Fraction(lo)))


likelihood_rule(LikelihoodRule(
    # shared eta: psi - psi' = y' - y, so |.| <= hi - lo
    "Bernoulli(logits)", "logits", 0, (), _bern_score, lambda f: 0.25, True,
    lambda f, shape: (0.0, 1.0, True), diff_bound=lambda f, y: r.up(Fraction(y[1]) - Fraction(y[0]))),
    dist.BernoulliLogits)


def _n(fixed) -> tuple[float, float]:
    lo, hi = fixed["total_count"]
    if not (math.isfinite(hi) and lo >= 0):
        raise Unsupported(f"its total_count lies in [{lo:g}, {hi:g}] over the domain; it must be bounded and >= 0")
    return lo, hi


def _binom_diff(fixed, y):
    # shared s = sigmoid(eta) in (0, 1): psi - psi' = (n - n') s - (y - y') is affine in s, so its sup is at an end:
    # s = 0: |y' - y| <= y_hi - y_lo; s = 1: |(n - y) - (n' - y')| <= (n - y)_hi - (n - y)_lo with n - y in
    # [max(0, n_lo - y_hi), n_hi - y_lo] (y <= n per record)
    n_lo, n_hi = _n(fixed)
    lo, hi = y
    a = Fraction(hi) - Fraction(lo)
    b = Fraction(n_hi) - Fraction(lo) - max(Fraction(0), Fraction(n_lo) - Fraction(hi))
    return r.up(max(a, b))


def _binom_score(fixed, y):
    # psi = n sigmoid(eta) - y in (-y, n - y): sup |psi| = max(y_hi, n_hi - y_lo)
    _, n_hi = _n(fixed)
    lo, hi = y
    return max(hi, r.up(Fraction(n_hi) - Fraction(lo)))


likelihood_rule(LikelihoodRule(
    # support: 0 <= y <= n for each record; with a per-record n in [n_lo, n_hi] the response range is [0, n_hi]
    # (y <= n itself is checked record by record on the data: bayesdp.analysis.records), and the score bound
    # max(y_hi, n_hi - y_lo) holds for every pair y <= n in the box
    "Binomial(logits)", "logits", 0, ("total_count",), _binom_score, lambda f: r.div_up(_n(f)[1], 4), True,
    lambda f, shape: (0.0, _n(f)[1], True), diff_bound=lambda f, y: _binom_diff(f, y)), dist.BinomialLogits)

likelihood_rule(LikelihoodRule(
    # psi = softmax(eta) - e_y: |psi|^2 = (1-p_y)^2 + sum_{c != y} p_c^2 <= 2 (1-p_y)^2 <= 2, sup sqrt(2);
    # d psi/d eta = diag(p) - p p^T, Gershgorin row sum 2 p_i (1 - p_i) <= 1/2.
    "Categorical(logits)", "logits", 1, (), lambda f, y: r.sqrt_up(2), lambda f: 0.5, True,
    lambda f, shape: (0.0, float(shape[-1] - 1), True)), dist.CategoricalLogits)


def _nb_k(fixed) -> tuple[float, float]:
    lo, hi = fixed["concentration"]
    if not (lo > 0 and math.isfinite(hi)):
        raise Unsupported(f"its concentration lies in [{lo:g}, {hi:g}] over the domain; it must be fixed, finite and "
                          "> 0 (a model argument)")
    return lo, hi


def _nb_score(fixed, y):
    # eta = log mean, mu = e^eta, k the concentration: l = -log NB(y | mu, k), psi = dl/deta = k (mu - y)/(k + mu).
    # mu >= y: 0 <= psi < k;  mu < y: 0 < -psi = k (y - mu)/(k + mu) < y.  sup |psi| = max(k_hi, y_hi) (the limits
    # mu -> inf at y = 0 and mu -> 0 at y = y_hi attain it)
    _, k_hi = _nb_k(fixed)
    if not math.isfinite(y[1]):
        raise Unsupported("its response has no declared upper bound; the score k (mu - y)/(k + mu) reaches y: "
                          "declare the counts' range (e.g. --domain y.max=B)")
    return max(k_hi, y[1])


def _nb_hess(fixed, y=None):
    # d psi/d eta = mu k (k + y)/(k + mu)^2 >= 0 (convex in eta); mu k/(k + mu)^2 <= 1/4 (AM-GM): <= (k + y)/4
    _, k_hi = _nb_k(fixed)
    return math.inf if y is None else r.div_up(r.add_up(k_hi, y[1]), 4)


def _nb_diff(fixed, y):
    # shared eta (mu = e^eta): psi(y) - psi(y') = k (y' - y)/(k + mu) for one k: |.| < y_hi - y_lo (mu -> 0), the
    # sup; with a per-record k in [k_lo, k_hi] psi lies in (-y_hi, k_hi): |psi - psi'| < k_hi + y_hi
    k_lo, k_hi = _nb_k(fixed)
    if not math.isfinite(y[1]):
        raise Unsupported("its response has no declared upper bound")
    if k_lo == k_hi:
        return r.up(Fraction(y[1]) - Fraction(y[0]))
    return r.up(Fraction(k_hi) + Fraction(y[1]))


likelihood_rule(LikelihoodRule(
    # the predictor is eta = log(mean) (NegativeBinomial2(mean=jnp.exp(eta), concentration=k)) or -log(rate) up to
    # a theta-free constant (GammaPoisson(k, rate=c / jnp.exp(eta))): found from the program (log_link_input)
    "NegativeBinomial2/GammaPoisson(log mean)", "log mean", 0, ("concentration",), _nb_score, _nb_hess, True,
    lambda f, shape: (0.0, math.inf, True), diff_bound=_nb_diff), dist.GammaPoisson, dist.NegativeBinomial2)


def _ordered_k(fixed) -> int:
    """The number of classes K of an OrderedLogistic whose cutpoints are proven strictly increasing over the
    domain (box of cutpoint j below box of cutpoint j + 1 on every record), else Unsupported."""
    lo, hi = fixed["_box:cutpoints"]
    lo, hi = lo.reshape(-1, lo.shape[-1]), hi.reshape(-1, hi.shape[-1])
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise Unsupported("its cutpoints are not bounded over the domain; fix them (public constants)")
    if lo.shape[-1] > 1 and not np.all(hi[:, :-1] < lo[:, 1:]):
        raise Unsupported("its cutpoints are not proven strictly increasing over the domain; fix them as increasing "
                          "public constants")
    return lo.shape[-1] + 1


def _ordered_score(fixed, y):
    # l = -log(F(c_{y+1} - eta) - F(c_y - eta)), F = logistic, F(c_0 - eta) = 0, F(c_K - eta) = 1;
    # with u = F(c_y - eta) <= v = F(c_{y+1} - eta): F' = F(1 - F), v(1-v) - u(1-u) = (v - u)(1 - u - v), so
    # psi = dl/deta = 1 - u - v in (-1, 1); sup |psi| = 1 (y = 0, eta -> inf; y = K-1, eta -> -inf)
    _ordered_k(fixed)
    return 1.0


def _ordered_hess(fixed):
    # d psi/d eta = u(1 - u) + v(1 - v) in [0, 1/2]: convex in eta, smoothness 1/2
    _ordered_k(fixed)
    return 0.5


def _ordered_diff(fixed, y):
    # shared eta, classes y < y' (cutpoints c, c' of the two records in the boxes, increasing): psi(y) - psi(y') =
    # (u' + v') - (u + v) with u = F(c_y - eta), v = F(c_{y+1} - eta); u' + v' <= 1 + F(c'_{K-1} - eta) (y' >= 1) and
    # u + v >= F(c_1 - eta) (y <= K - 2), so the difference is at most 1 + F(c_{K-1,hi} - eta) - F(c_{1,lo} - eta)
    # <= 1 + tanh(D/4), D = max(0, c_{K-1,hi} - c_{1,lo}) (sup_t F(t + D) - F(t) = tanh(D/4), at t = -D/2); y' = 0 or
    # y = K - 1 give at most 1 and 1 + tanh((c_{K-1,hi} - c_{K-1,lo})/4).  Attained for public cutpoints (y = 0,
    # y' = K - 1, eta = (c_1 + c_{K-1})/2): the exact sup.
    k = _ordered_k(fixed)
    lo, hi = fixed["_box:cutpoints"]
    lo, hi = lo.reshape(-1, k - 1), hi.reshape(-1, k - 1)
    d = max(Fraction(0), Fraction(float(np.max(hi[:, -1]))) - Fraction(float(np.min(lo[:, 0]))))
    t = math.tanh(r.up(d) / 4)
    return r.up(1 + Fraction(r.libm_out(t, up=True, extra=1)))   # tanh (libm) of a quotient rounded once


likelihood_rule(LikelihoodRule(
    "OrderedLogistic(predictor), fixed increasing cutpoints", "predictor", 0, ("cutpoints",), _ordered_score,
    _ordered_hess, True, lambda f, shape: (0.0, float(_ordered_k(f) - 1), True), diff_bound=_ordered_diff),
    dist.OrderedLogistic)


def _t_consts(fixed, cauchy: bool) -> tuple[float, float, float]:
    """(nu_lo, nu_hi, s_lo) over the domain."""
    s_lo, s_hi = fixed["scale"]
    if not s_lo > 0:
        raise Unsupported(f"its scale can be {s_lo:g} over the declared domain; it must be bounded below by a "
                          "positive number (declare the data it is computed from, or fix it)")
    if cauchy:
        return 1.0, 1.0, s_lo
    nu_lo, nu_hi = fixed["df"]
    if not (nu_lo > 0 and math.isfinite(nu_hi)):
        raise Unsupported(f"its df lies in [{nu_lo:g}, {nu_hi:g}] over the declared domain; it must be finite and > 0")
    return nu_lo, nu_hi, s_lo


def _t_score(cauchy):
    def score(fixed, y):
        # |dl/dloc| = (nu+1)|r|/(nu s^2 + r^2) <= (nu+1)/(2 s sqrt(nu)); decreasing in s, and in nu its max
        # over an interval is at an end ((nu+1)/sqrt(nu) decreases on (0, 1], increases on [1, inf))
        nu_lo, nu_hi, s = _t_consts(fixed, cauchy)
        return r.sqrt_up(max(student_score_sq(nu_lo, s), student_score_sq(nu_hi, s)))
    return score


def _t_hess(cauchy):
    def hess(fixed):
        # d^2 l/dloc^2 = (nu+1)(nu s^2 - r^2)/(nu s^2 + r^2)^2 in [-(nu+1)/(8 nu s^2), (nu+1)/(nu s^2)];
        # (1 + 1/nu)/s^2 decreases in nu and s
        nu_lo, _, s = _t_consts(fixed, cauchy)
        return r.up((Fraction(nu_lo) + 1) / (Fraction(nu_lo) * Fraction(s) ** 2))
    return hess


likelihood_rule(LikelihoodRule("StudentT(loc)", "loc", 0, ("df", "scale"), _t_score(False), _t_hess(False), False,
                               None), dist.StudentT)
likelihood_rule(LikelihoodRule("Cauchy(loc)", "loc", 0, ("scale",), _t_score(True), _t_hess(True), False, None),
                dist.Cauchy)

likelihood_rule(LikelihoodRule(
    "Normal", None, refuse="the Normal log-likelihood has gradient (loc - y)/scale^2 * d loc/d theta, unbounded "
    "in theta"), dist.Normal)
likelihood_rule(LikelihoodRule(
    "Poisson", None, refuse="the Poisson log-likelihood has gradient (rate - y) d log rate/d theta, unbounded "
    "in theta"), dist.Poisson)

