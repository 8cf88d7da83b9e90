"""Rules per distribution family: one registered rule per family, each a small proof.

Prior rules (latent sites, real support, constant parameters) split the site's
term of the potential ``-log prior`` into a part of K (strongly convex, smooth,
data-independent) and a part of V (bounded gradient).  Likelihood rules
(observed sites in the record plate) bound the *score* ``psi = d l / d eta`` of
``l = -log p(y | eta)`` with respect to the distribution's predictor ``eta``
(logits / loc) uniformly in eta and over the response domain, and the norm of
``d psi / d eta`` (the Hessian in eta); the generic affine machinery of
:mod:`bayesdp.analysis.analyze` turns them into per-record constants through
``grad_theta l = J^T psi`` and ``Hess_theta l = J^T (d psi/d eta) J`` with ``J``
the Jacobian of eta in theta.  Every derivation is written out in docs/analysis.md.

Add a family with :func:`prior_rule` / :func:`likelihood_rule`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import numpyro.distributions as dist

# ---------------------------------------------------------------------------
# prior rules


@dataclass(frozen=True)
class PriorFacts:
    rule: str
    k_strong_convexity: float | None   # mu of this site's K block (None: no K part)
    k_smoothness: float | None         # L of this site's K block
    v_grad_bound: float                # sup |grad V_site|
    v_smoothness: float | None         # Lipschitz constant of grad V_site (None: not smooth)
    v_convex: bool
    detail: str = ""


PRIOR_RULES: dict[type, Callable] = {}


def prior_rule(*families: type):
    def deco(fn):
        for f in families:
            PRIOR_RULES[f] = fn
        return fn
    return deco


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


@prior_rule(dist.Normal)
def normal_prior(d, size: int) -> PriorFacts:
    """Normal(m, s) on each coordinate: K = sum (theta_j - m_j)^2 / (2 s_j^2), Hessian diag(1/s_j^2):
    strong convexity min 1/s_j^2, smoothness max 1/s_j^2 (exact)."""
    s = np.broadcast_to(_arr(d.scale), (size,)) if size else _arr(d.scale)
    prec = 1.0 / (s * s)
    return PriorFacts("Normal prior -> quadratic K", float(prec.min()), float(prec.max()), 0.0, 0.0, True,
                      f"K = |theta - loc|^2/(2 scale^2), scale in [{s.min():.6g}, {s.max():.6g}]")


@prior_rule(dist.MultivariateNormal)
def mvn_prior(d, size: int) -> PriorFacts:
    """MultivariateNormal(m, Sigma): K = (theta - m)^T P (theta - m)/2, P = Sigma^-1;
    strong convexity lambda_min(P), smoothness lambda_max(P) (exact)."""
    P = _arr(d.precision_matrix)
    if P.ndim != 2:
        raise _Unsupported("a batch of MultivariateNormal priors is not covered")
    ev = np.linalg.eigvalsh(0.5 * (P + P.T))
    return PriorFacts("MultivariateNormal prior -> quadratic K", float(ev.min()), float(ev.max()), 0.0, 0.0,
                      True, "eigenvalues of the precision matrix")


@prior_rule(dist.Laplace)
def laplace_prior(d, size: int) -> PriorFacts:
    """Laplace(m, b) per coordinate: V = sum |theta_j - m_j| / b_j, convex, not smooth,
    |grad V| = |(sign(theta_j - m_j)/b_j)_j| <= sqrt(sum 1/b_j^2) (= sqrt(d)/b for equal scales)."""
    b = np.broadcast_to(_arr(d.scale), (size,)) if size else _arr(d.scale)
    g = float(math.sqrt(float(np.sum(1.0 / (b * b)))))
    return PriorFacts("Laplace prior -> bounded-gradient convex V", None, None, g, None, True,
                      "grad V = sign(theta - loc)/scale; not differentiable at loc (not smooth)")


@prior_rule(dist.StudentT, dist.Cauchy)
def studentt_prior(d, size: int) -> PriorFacts:
    """StudentT(nu, m, s) per coordinate: V_j = (nu+1)/2 log(1 + r^2/(nu s^2)), r = theta_j - m_j;
    |V_j'| <= (nu+1)/(2 s sqrt(nu)) (at r^2 = nu s^2), |V_j''| <= (nu+1)/(nu s^2) (at r = 0); not convex.
    Cauchy is nu = 1."""
    nu = _arr(d.df) if isinstance(d, dist.StudentT) else np.asarray(1.0)
    nu = np.broadcast_to(nu, (size,)) if size else nu
    s = np.broadcast_to(_arr(d.scale), (size,)) if size else _arr(d.scale)
    g = (nu + 1.0) / (2.0 * s * np.sqrt(nu))
    h = (nu + 1.0) / (nu * s * s)
    return PriorFacts("StudentT/Cauchy prior -> bounded-gradient smooth non-convex V", None, None,
                      float(math.sqrt(float(np.sum(g * g)))), float(h.max()), False,
                      "score (nu+1) r/(nu s^2 + r^2)")


class _Unsupported(Exception):
    pass


# ---------------------------------------------------------------------------
# likelihood rules


@dataclass(frozen=True)
class LikelihoodRule:
    """How one family's ``-log p(y | eta)`` depends on its predictor ``eta``.

    ``predictor``: attribute holding eta; ``event_ndim``: 1 if eta has a trailing class axis;
    ``fixed``: parameters that must not depend on theta nor vary across records;
    ``score_bound(d, resp_range)``: sup over eta and responses of |psi| for one unit;
    ``hessian_bound(d)``: sup of the operator norm of d psi / d eta for one unit;
    ``convex``: l convex in eta; ``support``: (lo, hi, integer) of the response, or None.
    ``refuse``: a reason the family has no bounded score (unbounded gradient).
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

    @property
    def rule(self) -> str:
        return f"{self.family} likelihood, {self.predictor} affine in theta"


LIKELIHOOD_RULES: dict[type, LikelihoodRule] = {}


def likelihood_rule(rule: LikelihoodRule, *families: type) -> LikelihoodRule:
    for f in families:
        LIKELIHOOD_RULES[f] = rule
    return rule


def _bern_score(d, rng):
    # psi = sigmoid(eta) - y, y in [lo, hi] subset [0, 1]: sup |psi| = max(hi, 1 - lo)
    lo, hi = rng
    return max(hi, 1.0 - lo)


likelihood_rule(LikelihoodRule(
    "Bernoulli(logits)", "logits", 0, (), _bern_score, lambda d: 0.25, True,
    lambda d: (0.0, 1.0, True)), dist.BernoulliLogits)


def _binom_n(d) -> float:
    n = np.unique(_arr(d.total_count))
    if n.size != 1:
        raise _Unsupported("total_count varies across records")
    return float(n[0])


def _binom_score(d, rng):
    # psi = n sigmoid(eta) - y, y in [lo, hi] subset [0, n]: sup |psi| = max(hi, n - lo)
    n = _binom_n(d)
    lo, hi = rng
    return max(hi, n - lo)


likelihood_rule(LikelihoodRule(
    "Binomial(logits)", "logits", 0, ("total_count",), _binom_score, lambda d: _binom_n(d) / 4.0, True,
    lambda d: (0.0, _binom_n(d), True)), dist.BinomialLogits)

likelihood_rule(LikelihoodRule(
    # psi = softmax(eta) - e_y: |psi|^2 = (1-p_y)^2 + sum_{c != y} p_c^2 <= 2 (1-p_y)^2 <= 2, sup sqrt(2);
    # d psi/d eta = diag(p) - p p^T, Gershgorin row sum 2 p_i (1 - p_i) <= 1/2.
    "Categorical(logits)", "logits", 1, (), lambda d, rng: math.sqrt(2.0), lambda d: 0.5, True,
    lambda d: (0.0, float(np.shape(d.logits)[-1] - 1), True)), dist.CategoricalLogits)


def _t_consts(d) -> tuple[float, float]:
    nu = np.unique(_arr(d.df)) if isinstance(d, dist.StudentT) else np.asarray([1.0])
    s = np.unique(_arr(d.scale))
    if nu.size != 1 or s.size != 1:
        raise _Unsupported("df and scale must be the same for every record")
    return float(nu[0]), float(s[0])


def _t_score(d, rng):
    # l = (nu+1)/2 log(1 + r^2/(nu s^2)), r = y - loc; |dl/dloc| = (nu+1)|r|/(nu s^2 + r^2) <= (nu+1)/(2 s sqrt(nu))
    nu, s = _t_consts(d)
    return (nu + 1.0) / (2.0 * s * math.sqrt(nu))


def _t_hess(d):
    # d^2 l/dloc^2 = (nu+1)(nu s^2 - r^2)/(nu s^2 + r^2)^2 in [-(nu+1)/(8 nu s^2), (nu+1)/(nu s^2)]
    nu, s = _t_consts(d)
    return (nu + 1.0) / (nu * s * s)


likelihood_rule(LikelihoodRule("StudentT(loc)", "loc", 0, ("df", "scale"), _t_score, _t_hess, False, None),
                dist.StudentT)
likelihood_rule(LikelihoodRule("Cauchy(loc)", "loc", 0, ("scale",), _t_score, _t_hess, False, None),
                dist.Cauchy)

likelihood_rule(LikelihoodRule(
    "Normal", None, refuse="the Normal log-likelihood has gradient (loc - y)/scale^2 * d loc/d theta, unbounded "
    "in theta"), dist.Normal)
likelihood_rule(LikelihoodRule(
    "Poisson", None, refuse="the Poisson log-likelihood has gradient (rate - y) d log rate/d theta, unbounded "
    "in theta"), dist.Poisson)
