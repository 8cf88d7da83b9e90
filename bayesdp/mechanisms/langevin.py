"""Mechanisms of 004: ULA/SGLD final draw and path, Girsanov diffusions, MC estimates.

Option names are fixed (issue #2): ``--strong-convexity`` (mu of K), ``--smoothness``
(L of K), ``--grad-bound`` (c = sup |grad V_D|), ``--grad-diff`` (Delta = sup
|grad U_D - grad U_D'|), ``--step-size``, ``--num-steps``, ``--inverse-temperature``,
``--batch-size``, ``--data-size``, ``--linear-v``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from ..certificate import Certificate

from ..errors import AssumptionError, check_finite, nonnegative, positive, positive_int
from ..exact import exact as exact_q, up
from ..theorems import girsanov as G
from ..theorems import tight as TT
from ..theorems import transfer as T
from .registry import Mechanism, Option, Route, need, register
from dataclasses import replace

__all__: list[str] = []   # registers its mechanisms with bayesdp.bound; nothing to call here

# -- shared options -----------------------------------------------------------

MU = Option("--strong-convexity", "mu: strong convexity of the data-independent part K (004 Assumption 5.1)")
L_K = Option("--smoothness", "L: Lipschitz constant of grad K (004 Assumption 5.1)")
C_BOUND = Option("--grad-bound", "c: sup_x |grad V_D(x)| for every dataset (004 Assumptions 5.1/5.5)")
DELTA_G = Option("--grad-diff", "Delta: sup_x |grad U_D(x) - grad U_D'(x)| over neighbours "
                 "(004 Assumption 5.3; per record for SGLD, 004 (36))")
STEP = Option("--step-size", "gamma: step size of the chain")
STEPS = Option("--num-steps", "n: number of steps", type=int)
BETA = Option("--inverse-temperature", "beta: inverse temperature, noise sqrt(2 gamma/beta) (default 1)",
              default=1.0)
BATCH = Option("--batch-size", "s: minibatch size (uniform without replacement)", type=int)
DATA = Option("--data-size", "m: number of records", type=int)
LINEAR_V = Option("--linear-v", "declare that grad_x v(x, d) does not depend on x (004 Theorem 5.7 setting); "
                  "an unchecked declaration here: `bayesdp certify` derives it from the model", is_flag=True)
TIME = Option("--time", "T: horizon of the diffusion (default step-size * num-steps)")
V_SMOOTH = Option("--v-smoothness", "L_V: grad V is L_V-Lipschitz (0 for linear V); with K's constants gives the "
                  "total potential's (per record v(., d) for SGLD)")
V_CONVEX = Option("--v-convex", "V is convex (then U = K + V is mu-strongly convex)", is_flag=True)


def _check_declared(p: Mapping[str, Any]) -> None:
    """Contradictory declarations are errors naming both values (not invalid routes)."""
    mu, L = p.get("strong_convexity"), p.get("smoothness")
    if mu is not None and L is not None:
        mu, L = check_finite("strong_convexity", mu), check_finite("smoothness", L)
        if L < mu:
            raise AssumptionError(f"smoothness = {L:.6g} < strong_convexity = {mu:.6g}: an L-smooth mu-strongly "
                                  "convex K needs mu <= L; check both constants")
    lv = p.get("v_smoothness")
    if lv is not None:
        lv = check_finite("v_smoothness", lv)
        if lv < 0 and p.get("v_convex"):
            raise AssumptionError(f"--v-convex contradicts v_smoothness = {lv:.6g} < 0: L_V bounds the norm of "
                                  "V's Hessian and must be >= 0; declare L_V >= 0")
        if lv < 0:
            raise AssumptionError(f"v_smoothness = {lv:.6g} must be >= 0 (a Lipschitz constant); declare L_V >= 0")


def _total(p: Mapping[str, Any]) -> tuple[float, float | None, str]:
    """(m, L_total, how) of U = K + V; raises when U is not shown strongly convex."""
    if p.get("v_smoothness") is None and not p.get("v_convex"):
        raise AssumptionError("total potential not shown strongly convex: declare --v-convex and/or "
                              "--v-smoothness L_V (0 for linear V)")
    m, Lt, how = TT.total_potential_constants(need(p, "strong_convexity"), need(p, "smoothness"),
                                              p.get("v_smoothness"), bool(p.get("v_convex")))
    if m is None:
        raise AssumptionError(f"total potential not shown strongly convex ({how})")
    return m, Lt, how


def _grad_diff_total(p: Mapping[str, Any]) -> tuple[float, str]:
    return _path_delta(p)


def _path_delta(p: Mapping[str, Any]) -> tuple[float, str]:
    """Delta for a path bound: --grad-diff, else 2 * --grad-bound (Assumption 5.1 => 5.3 with 2c)."""
    gd, gb = p.get("grad_diff"), p.get("grad_bound")
    if gd is None and gb is None:
        need(p, "grad_diff", "declare Delta = sup |grad U_D - grad U_D'| (or --grad-bound c, giving 2c)")
    if gb is None:
        return nonnegative("grad_diff", gd), "grad_diff"
    c = nonnegative("grad_bound", gb)
    return G.path_c_from_grad_bound(c, None if gd is None else nonnegative("grad_diff", gd))


def _with_note(cert, note: str):
    return replace(cert, notes=(cert.notes + "; " if cert.notes else "") + note)


# -- ULA ------------------------------------------------------------------------


def _ula_final_routes(p: Mapping[str, Any]) -> list[Route]:
    _check_declared(p)
    def thm52():
        return G.theorem_5_2(need(p, "strong_convexity"), need(p, "smoothness"), need(p, "grad_bound"),
                             need(p, "step_size"), need(p, "num_steps"), p["inverse_temperature"],
                             mechanism="ula-final")

    def path():
        d, how = _path_delta(p)
        cert = G.theorem_5_4(d, need(p, "step_size"), need(p, "num_steps"), p["inverse_temperature"],
                             mechanism="ula-final")
        return _with_note(cert, f"final draw is a function of the path (data processing, SEEDS §4.16(k)); "
                                f"Delta = {how}")

    def limit():
        return G.posterior_limit_estimate(need(p, "strong_convexity"), need(p, "smoothness"),
                                          need(p, "grad_bound"), p["inverse_temperature"], mechanism="ula-final")

    def exact():
        return TT.theorem_5_2_exact_contraction(need(p, "strong_convexity"), need(p, "smoothness"),
                                                need(p, "grad_bound"), need(p, "step_size"), need(p, "num_steps"),
                                                p["inverse_temperature"], mechanism="ula-final")

    def window():
        return _window(p, "ula-final", offset=2.0 * nonnegative("grad_bound", need(p, "grad_bound")))

    def last_draw():
        m, Lt, how = _total(p)
        if Lt is None:
            raise AssumptionError("the last-draw route needs the total smoothness: declare --v-smoothness L_V")
        d, dhow = _grad_diff_total(p)
        cert = TT.last_draw_gdp(m, Lt, d, need(p, "step_size"), need(p, "num_steps"), p["inverse_temperature"],
                                mechanism="ula-final")
        return _with_note(cert, f"{how}; Delta = {dhow}")

    def path_gdp():
        d, how = _path_delta(p)
        cert = TT.path_gdp(d, need(p, "step_size"), need(p, "num_steps"), p["inverse_temperature"],
                           mechanism="ula-final")
        return _with_note(cert, f"final draw is a function of the path (data processing); Delta = {how}")

    return [Route(TT.EXACT_CONTRACTION_SOURCE, exact), Route("004 Theorem 5.2", thm52),
            Route(TT.WINDOW_SOURCE, window), Route(TT.LAST_DRAW_SOURCE, last_draw),
            Route("004 Theorem 5.4", path, primary=False), Route(TT.PATH_GDP_SOURCE, path_gdp, primary=False),
            Route("004 posterior limit (C4, estimate)", limit, primary=False, certified=False)]


def _window(p: Mapping[str, Any], mechanism: str, offset: float) -> "Certificate":
    """Optimised-window GDP route with the best valid coupling bound (exact or 004's factor)."""
    mu, L = need(p, "strong_convexity"), need(p, "smoothness")
    gamma = need(p, "step_size")
    bounds = []
    for exact in (True, False):
        try:
            bounds.append(TT.kv_coupling_bound(mu, L, offset, gamma, exact=exact))
        except AssumptionError as exc:
            err = exc
    if not bounds:
        raise err
    return TT.window_gdp(L, offset, min(bounds), gamma, need(p, "num_steps"), p["inverse_temperature"],
                         mechanism=mechanism)


def _ula_path_routes(p: Mapping[str, Any]) -> list[Route]:
    def thm54():
        d, how = _path_delta(p)
        cert = G.theorem_5_4(d, need(p, "step_size"), need(p, "num_steps"), p["inverse_temperature"],
                             mechanism="ula-path")
        return cert if how == "grad_diff" else _with_note(cert, f"Delta = {how}")

    def gdp():
        d, how = _path_delta(p)
        cert = TT.path_gdp(d, need(p, "step_size"), need(p, "num_steps"), p["inverse_temperature"],
                           mechanism="ula-path")
        return cert if how == "grad_diff" else _with_note(cert, f"Delta = {how}")

    return [Route("004 Theorem 5.4", thm54), Route(TT.PATH_GDP_SOURCE, gdp)]


# -- SGLD -----------------------------------------------------------------------


def _sgld_final_routes(p: Mapping[str, Any]) -> list[Route]:
    _check_declared(p)
    if p.get("batch_size") is not None and p.get("data_size") is not None:
        G.check_batch(p["batch_size"], p["data_size"])  # every route assumes batches without replacement
    src = "004 Theorem 5.7" if p.get("linear_v") else "004 Theorem 5.6"

    def final():
        return G.theorem_5_6(need(p, "strong_convexity"), need(p, "smoothness"), need(p, "grad_bound"),
                             need(p, "step_size"), need(p, "num_steps"), need(p, "batch_size"),
                             need(p, "data_size"), p["inverse_temperature"], linear_v=bool(p.get("linear_v")),
                             mechanism="sgld-final")

    def path():
        d, how = _path_delta(p)
        cert = G.theorem_5_8(d, need(p, "step_size"), need(p, "num_steps"), need(p, "batch_size"),
                             need(p, "data_size"), p["inverse_temperature"], mechanism="sgld-final")
        return _with_note(cert, f"final draw is a function of the path (data processing, SEEDS §4.16(k)); "
                                f"Delta = {how}")

    def exact():
        return TT.theorem_5_2_exact_contraction(
            need(p, "strong_convexity"), need(p, "smoothness"), need(p, "grad_bound"), need(p, "step_size"),
            need(p, "num_steps"), p["inverse_temperature"], batch_size=need(p, "batch_size"),
            linear_v=bool(p.get("linear_v")), mechanism="sgld-final")

    def window():
        s_ = positive_int("batch_size", need(p, "batch_size"))
        positive_int("data_size", need(p, "data_size"))
        c = nonnegative("grad_bound", need(p, "grad_bound"))
        offset = up(2 * exact_q(c) / s_) if p.get("linear_v") else 2.0 * c
        cert = _window(p, "sgld-final", offset)
        return _with_note(cert, "conditionally on the (data-independent) minibatch sequence; GDP is preserved "
                                "by the mixture over minibatches")

    def path_gdp():
        return _with_note(_sgld_path_gdp(p, "sgld-final"), "final draw is a function of the path")

    return [Route(TT.EXACT_CONTRACTION_SOURCE, exact), Route(src, final), Route(TT.WINDOW_SOURCE, window),
            Route("004 Theorem 5.8", path, primary=False), Route(TT.PATH_GDP_SOURCE, path_gdp, primary=False)]


def _sgld_path_routes(p: Mapping[str, Any]) -> list[Route]:
    def thm58():
        d, how = _path_delta(p)
        cert = G.theorem_5_8(d, need(p, "step_size"), need(p, "num_steps"), need(p, "batch_size"),
                             need(p, "data_size"), p["inverse_temperature"], mechanism="sgld-path")
        return cert if how == "grad_diff" else _with_note(cert, f"Delta = {how}")

    return [Route("004 Theorem 5.8", thm58), Route(TT.PATH_GDP_SOURCE, lambda: _sgld_path_gdp(p, "sgld-path"))]


def _sgld_path_gdp(p: Mapping[str, Any], mechanism: str):
    """GDP composition of the SGLD path: per-step drift difference Delta/s (only the replaced record
    can be in the batch, 004 (36))."""
    d, how = _path_delta(p)
    s_ = positive_int("batch_size", need(p, "batch_size"))
    m_ = positive_int("data_size", need(p, "data_size"))
    if s_ > m_:
        raise AssumptionError(f"batch_size = {s_} must be <= data_size = {m_}")
    cert = TT.path_gdp(up(exact_q(d) / s_), need(p, "step_size"), need(p, "num_steps"), p["inverse_temperature"],
                       mechanism=mechanism)
    return _with_note(cert, f"per-step drift difference Delta/s (only the replaced record differs); Delta = {how}")


def _posterior_routes(p: Mapping[str, Any]) -> list[Route]:
    _check_declared(p)
    def gopi():
        m, _, how = _total(p)
        d, dhow = _grad_diff_total(p)
        return _with_note(TT.posterior_gdp(m, d, p["inverse_temperature"]), f"{how}; Delta = {dhow}")

    def limit():
        return G.posterior_limit_estimate(need(p, "strong_convexity"), need(p, "smoothness"),
                                          need(p, "grad_bound"), p["inverse_temperature"], mechanism="posterior")

    return [Route(TT.POSTERIOR_SOURCE, gopi),
            Route("004 posterior limit (C4, estimate)", limit, primary=False, certified=False)]


# -- Girsanov diffusions ----------------------------------------------------------


def _horizon(p: Mapping[str, Any]) -> float:
    if p.get("time") is not None:
        return positive("time", p["time"])
    if p.get("step_size") is None or p.get("num_steps") is None:
        need(p, "time", "the horizon T (or --step-size and --num-steps, T = step-size * num-steps)")
    return up(exact_q(positive("step_size", p["step_size"])) * positive_int("num_steps", p["num_steps"]))


def _girsanov_path_routes(p: Mapping[str, Any]) -> list[Route]:
    def prop45():
        return G.proposition_4_5(need(p, "grad_diff", "c of 004 (18): sup |f_D - f_D'|"),
                                 p["inverse_temperature"], _horizon(p), mechanism="girsanov-path")

    return [Route("004 Proposition 4.5", prop45)]


def _girsanov_final_routes(p: Mapping[str, Any]) -> list[Route]:
    def prop46():
        return G.proposition_4_6(need(p, "smoothness", "L of 004 (20): Lipschitz constant of the drift"),
                                 need(p, "grad_diff", "c of 004 (20): additive offset of the drift difference"),
                                 need(p, "coupling_bound", "C of 004 (21): sup_t |X_t^D - X_t^D'|"),
                                 p["inverse_temperature"], _horizon(p), mechanism="girsanov-final")

    def path():
        cert = G.proposition_4_5(need(p, "grad_diff"), p["inverse_temperature"], _horizon(p),
                                 mechanism="girsanov-final")
        return _with_note(cert, "final value is a function of the path (data processing); (20) at x = y gives (18)")

    return [Route("004 Proposition 4.6", prop46), Route("004 Proposition 4.5", path, primary=False)]


# -- Monte Carlo estimate and TV transfer -------------------------------------------


def _mc_routes(p: Mapping[str, Any]) -> list[Route]:
    routes = []
    has_310 = any(p.get(k) is not None for k in ("concentration", "concentration_delta", "posterior_sensitivity"))
    has_37 = any(p.get(k) is not None for k in ("coupling_window", "coupling_delta"))
    eps_cal = p.get("epsilon") if p.get("noise_scale") is None else None

    def r310():
        return T.proposition_3_10(need(p, "concentration", "C of 004 Assumption 3.8"),
                                  need(p, "concentration_delta", "delta~ of 004 Assumption 3.8"),
                                  need(p, "posterior_sensitivity", "gamma_f of 004 Assumption 3.9"),
                                  epsilon=eps_cal, noise_scale=p.get("noise_scale"))

    def r37():
        return T.proposition_3_7(need(p, "coupling_window", "eta of 004 Assumption 3.6"),
                                 need(p, "coupling_delta", "delta~ of 004 Assumption 3.6"),
                                 epsilon=eps_cal, noise_scale=p.get("noise_scale"))

    if has_310 or not has_37:
        routes.append(Route("004 Proposition 3.10", r310))
    if has_37:
        routes.append(Route("004 Proposition 3.7", r37))
    return routes


def _tv_routes(p: Mapping[str, Any]) -> list[Route]:
    def a2():
        return T.proposition_a_2(need(p, "epsilon_in", "eps of the (eps, delta)-DP family mu_D"),
                                 need(p, "delta_in", "delta of the family mu_D"),
                                 need(p, "tv_bound", "b with TV(mu_D, nu_D) <= b for every D"))

    return [Route("004 Proposition A.2", a2)]


register(Mechanism("ula-final", "ULA final draw (004 Theorem 5.2, exact contraction, optimised window, "
                   "Bok-Su-Altschuler; path bounds by data processing)",
                   (MU, L_K, C_BOUND, DELTA_G, STEP, STEPS, BETA, V_SMOOTH, V_CONVEX), _ula_final_routes))
register(Mechanism("posterior", "one exact posterior draw (Gopi-Lee-Liu 2022; 004's C4 as an estimate)",
                   (MU, L_K, C_BOUND, DELTA_G, BETA, V_SMOOTH, V_CONVEX), _posterior_routes))
register(Mechanism("ula-path", "ULA whole path (004 Theorem 5.4)",
                   (C_BOUND, DELTA_G, STEP, STEPS, BETA), _ula_path_routes))
register(Mechanism("sgld-final", "SGLD final draw (004 Theorems 5.6 / 5.7)",
                   (MU, L_K, C_BOUND, DELTA_G, STEP, STEPS, BETA, BATCH, DATA, LINEAR_V, V_SMOOTH, V_CONVEX),
                   _sgld_final_routes))
register(Mechanism("sgld-path", "SGLD whole path (004 Theorem 5.8)",
                   (C_BOUND, DELTA_G, STEP, STEPS, BETA, BATCH, DATA), _sgld_path_routes))
register(Mechanism("girsanov-path", "path of a diffusion with bounded drift difference (004 Proposition 4.5)",
                   (Option("--grad-diff", "c of 004 (18): sup |f_D(x) - f_D'(x)|"), TIME, STEP, STEPS, BETA),
                   _girsanov_path_routes))
register(Mechanism("girsanov-final", "final value of such a diffusion (004 Proposition 4.6)",
                   (Option("--smoothness", "L of 004 (20): Lipschitz constant of the drift"),
                    Option("--grad-diff", "c of 004 (20): |f_D(x) - f_D'(y)| <= L|x-y| + c"),
                    Option("--coupling-bound", "C of 004 (21): sup_t |X_t^D - X_t^D'| under the synchronous coupling"),
                    TIME, STEP, STEPS, BETA), _girsanov_final_routes))
register(Mechanism("mc-estimate", "Laplace-noised Monte Carlo estimate (004 Propositions 3.10 / 3.7)",
                   (Option("--concentration", "C of 004 Assumption 3.8"),
                    Option("--concentration-delta", "delta~ of 004 Assumption 3.8"),
                    Option("--posterior-sensitivity", "gamma_f of 004 Assumption 3.9"),
                    Option("--coupling-window", "eta of 004 Assumption 3.6 (Proposition 3.7)"),
                    Option("--coupling-delta", "delta~ of 004 Assumption 3.6 (Proposition 3.7)"),
                    Option("--noise-scale", "Laplace scale b (default: calibrated to --epsilon)")),
                   _mc_routes,
                   extra={"epsilon_calibrates_noise": True}))
register(Mechanism("tv-transfer", "DP transferred through a TV bound (004 Proposition A.2 / 3.2)",
                   (Option("--epsilon-in", "eps of the (eps, delta)-DP family mu_D"),
                    Option("--delta-in", "delta of the family mu_D"),
                    Option("--tv-bound", "b: TV(mu_D, nu_D) <= b for every dataset")), _tv_routes))
