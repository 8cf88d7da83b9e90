"""Mechanisms of the seed papers 002/000, 003 and 001 (issue #7).

``mixing`` (002 Theorem 1), ``ou`` (002 Corollary 7 with 002 eq. (4)/Theorem 8 MSE),
``pnsgd`` (003 Theorems 3/4/5, 003 Proposition 1, 002 Theorem 5, 001 Theorem 3.4 via
SEEDS §5), ``pabi`` (001 Theorem 3.4 / Table 1), ``noisy-sgd`` (001 Theorems 5.2/5.4),
and the building blocks ``iterated-gaussian`` (002 Examples 1/3), ``iterated-laplace``
(002 Example 2 / Lemma 3) and ``projected-kernels`` (002 Theorem 4(3)).

Option names of the first five are fixed by issue #7.  The infeasible parameters of
003 Figure 3 (rho > beta) are never accepted here (``allow_infeasible`` is a Python-only
argument of the theorem functions, used by the figure script and its tests).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import AssumptionError
from ..theorems import hockey_stick as H
from ..theorems import mixing as X
from ..theorems import pabi as P
from .registry import Mechanism, Option, Route, need, register
from ..certificate import Certificate
from ..curves import RDP
from dataclasses import replace

__all__: list[str] = []   # registers its mechanisms with bayesdp.bound; nothing to call here

# -- mixing (002 Theorem 1) -------------------------------------------------------------


def _mixing_routes(p: Mapping[str, Any]) -> list[Route]:
    cond = need(p, "condition", "one of " + ", ".join(X.CONDITIONS))
    routes = []
    for c in X.implied_conditions(cond):   # the declared condition and the ones it implies (000 Lemma 9, corrected)
        if c == "dobrushin-eps" and cond != "dobrushin-eps":
            continue   # same (eps, gamma*delta) as Theorem 1(1)

        def build(c=c):
            cert = X.theorem_1(need(p, "epsilon_in", "eps of the (eps, delta)-DP mechanism M"),
                               need(p, "delta_in", "delta of M"),
                               need(p, "gamma", "the mixing coefficient of the kernel K"), c)
            if c != cond:
                cert = replace(cert, notes=(cert.notes + "; " if cert.notes else "")
                               + f"a gamma-{cond} kernel is gamma-{c} (002 Fig. 1, 000 Lemma 9)")
            return cert

        routes.append(Route(X._SOURCES[c], build))
    return routes


register(Mechanism(
    "mixing", "post-processing an (eps, delta)-DP mechanism by a mixing kernel (002 Theorem 1)",
    (Option("--epsilon-in", "eps of the (eps, delta)-DP mechanism M"),
     Option("--delta-in", "delta of M"),
     Option("--condition", "mixing condition of the kernel K (002 Definition 1)", type=str, choices=X.CONDITIONS),
     Option("--gamma", "mixing coefficient gamma in [0, 1] of K")),
    _mixing_routes,
    description="The certificate is the single point (eps', delta'); a --delta query below delta' has no "
                "finite epsilon, a --epsilon query below eps' returns the delta implied by that point "
                "(docs/seed_systems.md).",
))

# -- ou (002 Corollary 7, eq. (4), Theorem 8) -----------------------------------------------


def _ou_routes(p: Mapping[str, Any]) -> list[Route]:
    def cor7():
        return X.corollary_7(need(p, "theta", "OU mean-reversion rate"), need(p, "rho", "OU diffusion coefficient"),
                             need(p, "time", "diffusion time t"),
                             need(p, "sensitivity", "L2-sensitivity Delta of f"),
                             dimension=p.get("dimension"), f_norm=p.get("f_norm"), radius=p.get("radius"))

    return [Route("002 Corollary 7", cor7)]


register(Mechanism(
    "ou", "Ornstein-Uhlenbeck diffusion mechanism (002 Corollary 7; MSE of 002 eq. (4) and Theorem 8)",
    (Option("--theta", "theta > 0: mean-reversion rate"),
     Option("--rho", "rho > 0: diffusion coefficient (P_t(x) = N(e^{-theta t} x, rho^2/theta (1 - e^{-2 theta t}) I))"),
     Option("--time", "t > 0: diffusion time"),
     Option("--sensitivity", "Delta: L2-sensitivity of f"),
     Option("--dimension", "d: output dimension (for the MSE)", type=int),
     Option("--radius", "R >= sup_D ||f(D)|| (worst-case MSE and Theorem 8's hypothesis)"),
     Option("--f-norm", "||f(D)|| (MSE at this value)")),
    _ou_routes,
))

# -- pnsgd (003, 002 Theorem 5, 001 via SEEDS §5) ------------------------------------------


def _pnsgd_common(p):
    return (need(p, "lipschitz", "L, the Lipschitz constant of the loss in the parameter"),
            need(p, "smoothness", "beta, the smoothness of the loss"),
            need(p, "strong_convexity", "rho >= 0, the strong convexity of the loss (0 if merely convex)"),
            need(p, "step_size", "eta"),
            need(p, "noise_scale", "sigma (or v): the added noise has scale step-size * noise-scale"))


def _pnsgd_routes(p: Mapping[str, Any]) -> list[Route]:
    noise = p.get("noise") or "gaussian"
    idx = p.get("index")
    if noise == "laplace":
        if p.get("random_stop"):
            raise AssumptionError("--random-stop is covered only for --noise gaussian (003 Theorem 5)")
        dim = p.get("dimension")
        if dim is None:
            raise AssumptionError("--dimension is required with --noise laplace: 003 Theorem 3 (Lemma 1) holds "
                                  "in one dimension only; pass --dimension 1")
        if int(dim) != 1:
            raise AssumptionError(f"dimension = {dim} is not covered with --noise laplace: 003 Theorem 3 (Lemma 1) "
                                  "holds in one dimension only; use --noise gaussian (003 Theorem 4)")

        def thm3():
            L, beta, rho, eta, v = _pnsgd_common(p)
            return H.theorem_3(L, beta, rho, eta, v, need(p, "diameter", "b - a of K = [a, b]"),
                               need(p, "data_size", "n, the number of records (= steps)"), idx)

        return [Route("003 Theorem 3", thm3)]
    if p.get("random_stop"):
        if idx is not None:
            raise AssumptionError("--index does not apply with --random-stop (003 Theorem 5 covers every index)")

        def thm5():
            L, beta, rho, eta, s = _pnsgd_common(p)
            return H.theorem_5(L, beta, rho, eta, s, need(p, "diameter", "D_K, the diameter of K"),
                               need(p, "data_size", "n"))

        return [Route("003 Theorem 5", thm5)]

    def thm4():
        L, beta, rho, eta, s = _pnsgd_common(p)
        return H.theorem_4(L, beta, rho, eta, s, need(p, "diameter", "D_K, the diameter of K"),
                           need(p, "data_size", "n"), idx)

    def prop1():
        L, beta, rho, eta, s = _pnsgd_common(p)
        return H.proposition_1(L, beta, rho, eta, s, need(p, "data_size", "n"), idx)

    def bbgg5():
        L, beta, rho, eta, s = _pnsgd_common(p)
        return X.theorem_5(L, beta, rho, eta, s, need(p, "data_size", "n"), idx)

    def pabi001():
        L, beta, rho, eta, s = _pnsgd_common(p)
        return P.pnsgd_pabi(L, beta, rho, eta, s, need(p, "data_size", "n"), idx, p.get("diameter"))

    return [Route("003 Theorem 4", thm4), Route("003 Proposition 1", prop1), Route("002 Theorem 5", bbgg5),
            Route("001 Theorem 3.4 via SEEDS §5", pabi001)]


register(Mechanism(
    "pnsgd", "one-pass projected noisy SGD, last iterate, per-index privacy (003, 002 Theorem 5, 001)",
    (Option("--noise", "noise law of Z (default gaussian); laplace only in 1-D (003 Theorem 3)", type=str,
            choices=("gaussian", "laplace"), default="gaussian"),
     Option("--noise-scale", "sigma of Z ~ N(0, sigma^2 I) (or Laplace scale v); added noise = step-size * Z"),
     Option("--lipschitz", "L: Lipschitz constant of the loss in the parameter, for every record"),
     Option("--smoothness", "beta: smoothness of the loss"),
     Option("--strong-convexity", "rho: strong convexity of the loss (0 <= rho <= beta)"),
     Option("--step-size", "eta: step size; needs eta < 2/(beta + rho) (SEEDS §6 row 20)"),
     Option("--diameter", "D_K: diameter of the convex compact set K (b - a in 1-D)"),
     Option("--data-size", "n: number of records = number of steps", type=int),
     Option("--index", "i: position of the differing record (default: every index, worst i = n)", type=int),
     Option("--random-stop", "release Y_T at T ~ Unif{1..n} (003 Theorem 5)", is_flag=True),
     Option("--dimension", "d: dimension of the parameter (required with --noise laplace, which needs d = 1)",
            type=int)),
    _pnsgd_routes,
))

# -- pabi (001 Theorem 3.4, Table 1) --------------------------------------------------------


def _pabi_routes(p: Mapping[str, Any]) -> list[Route]:
    def thm34():
        return P.pabi(need(p, "case", "one of " + ", ".join(P.CASES)),
                      need(p, "noise_scale", "per-coordinate standard deviation of the Gaussian noise"),
                      need(p, "diameter", "diameter D of the domain X"), need(p, "num_steps", "T"),
                      need(p, "step_size", "eta"), p.get("lipschitz"), p.get("smoothness"),
                      p.get("strong_convexity"), p.get("holder_exponent"), p.get("holder_constant"),
                      p.get("dissipativity"))

    return [Route("001 Theorem 3.4", thm34)]


register(Mechanism(
    "pabi", "projected noisy gradient iteration from different initial points (001 Theorem 3.4, Table 1)",
    (Option("--case", "hypotheses on f (001 Table 1)", type=str, choices=P.CASES),
     Option("--noise-scale", "sigma: per-coordinate standard deviation of the Gaussian noise"),
     Option("--diameter", "D: diameter of the convex compact domain X"),
     Option("--num-steps", "T: number of steps", type=int),
     Option("--step-size", "eta: step size"),
     Option("--lipschitz", "L (convex-lipschitz)"),
     Option("--smoothness", "beta (smooth cases)"),
     Option("--strong-convexity", "kappa (strongly-convex-smooth, strongly-dissipative)"),
     Option("--holder-exponent", "p in [0, 1) (convex-weakly-smooth)"),
     Option("--holder-constant", "M (convex-weakly-smooth)"),
     Option("--dissipativity", "lambda >= 0 (strongly-dissipative)")),
    _pabi_routes,
))

# -- noisy-sgd (001 Theorems 5.2 / 5.4) -------------------------------------------------------


def _noisy_sgd_routes(p: Mapping[str, Any]) -> list[Route]:
    has_52 = p.get("holder_exponent") is not None or p.get("holder_constant") is not None
    has_54 = p.get("smoothness") is not None
    if not (has_52 or has_54):
        raise AssumptionError("--holder-exponent/--holder-constant (convex weakly smooth loss, 001 Theorem 5.2) "
                              "or --smoothness (nonconvex smooth loss, 001 Theorem 5.4) is required")
    batching = p.get("batching") or "fixed"
    routes = []

    def common():
        return (need(p, "lipschitz", "L"), need(p, "diameter", "D"), need(p, "step_size", "eta"),
                need(p, "noise_scale", "sigma (noise std = step-size * sigma)"), need(p, "data_size", "n"),
                need(p, "batch_size", "b"), need(p, "num_steps", "T"))

    if has_52:
        def t52():
            L, D, eta, s, n, b, T = common()
            return P.theorem_5_2(L, need(p, "holder_exponent", "p in [0, 1)"), need(p, "holder_constant", "M"),
                                 D, eta, s, n, b, T, batching=batching, max_batch=p.get("max_batch"))

        routes.append(Route("001 Theorem 5.2", t52))
    if has_54:
        def t54():
            if batching != "fixed":
                raise AssumptionError(f"batching = {batching!r}: 001 Theorem 5.4 needs fixed-size batches "
                                      "sampled without replacement (--batching fixed)")
            L, D, eta, s, n, b, T = common()
            return P.theorem_5_4(L, p["smoothness"], D, eta, s, n, b, T)

        routes.append(Route("001 Theorem 5.4", t54))
    return routes


register(Mechanism(
    "noisy-sgd", "last iterate of projected noisy minibatch SGD (001 Theorems 5.2 / 5.4)",
    (Option("--lipschitz", "L: per-record gradient bound"),
     Option("--holder-exponent", "p in [0, 1): weak smoothness exponent (convex loss, Theorem 5.2)"),
     Option("--holder-constant", "M: weak smoothness constant (Theorem 5.2)"),
     Option("--smoothness", "beta: smoothness (nonconvex loss, Theorem 5.4)"),
     Option("--diameter", "D: diameter of the domain"),
     Option("--step-size", "eta"),
     Option("--noise-scale", "sigma: added noise N(0, eta^2 sigma^2 I)"),
     Option("--data-size", "n", type=int),
     Option("--batch-size", "b: batch size (expected size for Poisson batches)", type=int),
     Option("--num-steps", "T", type=int),
     Option("--batching", "fixed (size b, without replacement; default) or poisson", type=str,
            choices=("fixed", "poisson"), default="fixed"),
     Option("--max-batch", "largest Poisson batch allowed (default n, the worst case; SEEDS §6 row 14)", type=int)),
    _noisy_sgd_routes,
))

# -- building blocks of 002 ------------------------------------------------------------------


def _iter_gauss_routes(p):
    def build():
        d, s1, s2 = need(p, "sensitivity", "L2-sensitivity"), need(p, "s1", "std of M"), need(p, "s2", "std of K")
        if p.get("lipschitz") is not None:
            return X.example_3(d, s1, s2, p["lipschitz"], mechanism="iterated-gaussian")
        return X.example_1(d, s1, s2)

    src = "002 Example 3" if p.get("lipschitz") is not None else "002 Example 1"
    return [Route(src, build)]


def _iter_laplace_routes(p):
    def certs():
        return X.example_2(need(p, "sensitivity", "L1-sensitivity"), need(p, "lam1", "Laplace scale of M"),
                           need(p, "lam2", "Laplace scale of K"))

    return [Route("002 Example 2", lambda: certs()[0]), Route("002 Lemma 3", lambda: certs()[1])]


def _proj_kernels_routes(p):
    def build():
        kappa = X.pabi_contractive_rdp(1.0, need(p, "w_inf", "W_inf(mu, nu)"),
                                       need(p, "lipschitz", "L <= 1 of each psi_i"),
                                       need(p, "num_kernels", "r"), need(p, "noise_std", "sigma"))
        return Certificate(mechanism="projected-kernels", source="002 Theorem 4", curve=RDP.linear(kappa),
                           assumptions={k: p.get(k) for k in ("w_inf", "lipschitz", "num_kernels", "noise_std")},
                           constants={"kappa": kappa}, notes="Theorem 4 (3)")

    return [Route("002 Theorem 4", build)]


register(Mechanism("iterated-gaussian", "Gaussian mechanism followed by a (Lipschitz) Gaussian kernel "
                   "(002 Examples 1, 3)",
                   (Option("--sensitivity", "Delta: L2-sensitivity of f"), Option("--s1", "std of M"),
                    Option("--s2", "std of the kernel K"),
                    Option("--lipschitz", "L of psi in K(x) = N(psi(x), s2^2 I) (Example 3)")),
                   _iter_gauss_routes))
register(Mechanism("iterated-laplace", "Laplace mechanism followed by a Laplace kernel (002 Example 2, Lemma 3)",
                   (Option("--sensitivity", "Delta: L1-sensitivity of f"), Option("--lam1", "Laplace scale of M"),
                    Option("--lam2", "Laplace scale of K")), _iter_laplace_routes))
register(Mechanism("projected-kernels", "r projected L-Lipschitz Gaussian kernels, L <= 1 (002 Theorem 4(3))",
                   (Option("--w-inf", "Delta = W_inf(mu, nu) of the inputs"), Option("--lipschitz", "L <= 1"),
                    Option("--num-kernels", "r", type=int), Option("--noise-std", "sigma")),
                   _proj_kernels_routes))
