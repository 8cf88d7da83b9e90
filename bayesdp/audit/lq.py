"""The built-in linear–quadratic benchmark for audits.

K(x) = mu |x|^2/2 (so L = mu), data records d_i in R^dim with |d_i| <= c, V_D(x) = -<sum_i d_i, x>
for ULA (the benchmark of issue #6 has one record, b_D = d_1), and for SGLD the 004 loss
l~(x, d) = K(x) - m <d, x> so that (1/m) sum_i l~(x, d_i) = U_D(x).  Worst-case neighbours from the
declared domain: d_1 = c e_1 on D and d_1 = -c e_1 on D' (the extreme gradient), all other records 0.

Scores are likelihood-ratio projections: the final draw's first coordinate (the two final laws are
Gaussians with equal covariance and means apart along e_1), and for paths the sum of the first
coordinates of the innovations x_k - (1 - gamma mu) x_{k-1} (sufficient for the path's Gaussian
likelihood ratio under ULA).  The chains run in JAX, vmapped over runs ([`bayesdp.audit.chains`][bayesdp.audit.chains]).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import AssumptionError, nonnegative, positive, positive_int, require
from ..publish.noise import laplace_release
from ..resources import require_memory
from ..publish.sensitivity import coupling_strongly_convex
from .chains import lq_chain_scores

__all__ = ["MECHANISMS", "LQConfig", "bound_options", "exact_mu", "release_sensitivity", "exact_release_epsilon",
           "runs_memory_bytes", "check_runs_memory", "run_scores"]

#: the mechanisms with a built-in benchmark
MECHANISMS = ("posterior", "ula-final", "ula-path", "sgld-final", "sgld-path", "release")


@dataclass(frozen=True)
class LQConfig:
    """The linear-quadratic benchmark: potential ``U_D(x) = mu |x|^2 / 2 - <d, x>`` with the
    differing record ``d = +-grad_bound e_1``, where every output is Gaussian (exact mu known).

    Attributes:
        strong_convexity: mu (also the smoothness).
        grad_bound: c.
        step_size: gamma (samplers).
        num_steps: chain length (samplers).
        inverse_temperature: beta.
        batch_size: SGLD batch size.
        data_size: SGLD number of records.
        dim: dimension.
        epsilon: ``release``: the Laplace noise's epsilon.
        burn_in: ``release``: steps discarded before averaging.

    Examples:
        >>> exact_mu("posterior", LQConfig(strong_convexity=4.0, grad_bound=1.0))   # 2 c sqrt(beta / mu)
        1.0
    """
    strong_convexity: float
    grad_bound: float
    step_size: float | None = None
    num_steps: int | None = None
    inverse_temperature: float = 1.0
    batch_size: int | None = None
    data_size: int | None = None
    dim: int = 1
    epsilon: float | None = None       # release: the Laplace noise's epsilon
    burn_in: int = 0                   # release: steps discarded before averaging

    def validated(self, mechanism: str) -> "LQConfig":
        """``self`` after checking the constants ``mechanism`` needs.

        Args:
            mechanism: one of [`MECHANISMS`][bayesdp.audit.lq.MECHANISMS].

        Returns:
            ``self``.

        Raises:
            AssumptionError: unknown mechanism or a missing / invalid constant.

        Examples:
            >>> LQConfig(strong_convexity=1.0, grad_bound=0.5).validated("ula-final")
            Traceback (most recent call last):
            ...
            bayesdp.errors.AssumptionError: --step-size and --num-steps are required for ula-final
        """
        if mechanism not in MECHANISMS:
            raise AssumptionError(f"mechanism {mechanism!r} has no built-in benchmark; choose one of "
                                  f"{', '.join(MECHANISMS)}")
        positive("strong_convexity", self.strong_convexity)
        nonnegative("grad_bound", self.grad_bound)
        positive("inverse_temperature", self.inverse_temperature)
        positive_int("dim", self.dim)
        if mechanism != "posterior":
            if self.step_size is None or self.num_steps is None:
                raise AssumptionError(f"--step-size and --num-steps are required for {mechanism}")
            positive("step_size", self.step_size)
            positive_int("num_steps", self.num_steps)
            g, mu = self.step_size, self.strong_convexity
            require(g < 2.0 / mu, "step_size", g, f"must be < 2/L = {2.0 / mu:.6g}: the benchmark chain diverges",
                    "choose a smaller step size")
        if mechanism == "release":
            if self.epsilon is None:
                raise AssumptionError("--epsilon is required for release (the epsilon of the Laplace noise)")
            positive("epsilon", self.epsilon)
            require(0 <= int(self.burn_in) < int(self.num_steps), "burn_in", self.burn_in,
                    f"must be in [0, num_steps) = [0, {self.num_steps})")
        if mechanism.startswith("sgld"):
            if self.batch_size is None or self.data_size is None:
                raise AssumptionError(f"--batch-size and --data-size are required for {mechanism}")
            s, m = positive_int("batch_size", self.batch_size), positive_int("data_size", self.data_size)
            require(s <= m, "batch_size", s, f"must be <= data_size = {m}")
        return self


def bound_options(mechanism: str, cfg: LQConfig) -> dict:
    """The constants the certificate core needs for this benchmark (all proven by construction).

    Args:
        mechanism: one of [`MECHANISMS`][bayesdp.audit.lq.MECHANISMS].
        cfg: the benchmark.

    Returns:
        keyword constants for [`bayesdp.bound`][bayesdp.mechanisms.registry.bound].

    Examples:
        >>> bound_options("ula-path", LQConfig(strong_convexity=1.0, grad_bound=0.5, step_size=0.01, num_steps=100))
        {'inverse_temperature': 1.0, 'step_size': 0.01, 'num_steps': 100, 'grad_diff': 1.0}
    """
    base = dict(inverse_temperature=cfg.inverse_temperature)
    if mechanism == "posterior":
        return dict(base, strong_convexity=cfg.strong_convexity, smoothness=cfg.strong_convexity,
                    grad_bound=cfg.grad_bound, v_smoothness=0.0)
    if mechanism.startswith("ula"):
        common = dict(base, step_size=cfg.step_size, num_steps=cfg.num_steps)
        if mechanism == "ula-path":
            return dict(common, grad_diff=2 * cfg.grad_bound)
        return dict(common, strong_convexity=cfg.strong_convexity, smoothness=cfg.strong_convexity,
                    grad_bound=cfg.grad_bound, v_smoothness=0.0)
    m = cfg.data_size
    common = dict(base, step_size=cfg.step_size, num_steps=cfg.num_steps, batch_size=cfg.batch_size, data_size=m)
    if mechanism == "sgld-path":
        return dict(common, grad_diff=2 * m * cfg.grad_bound)
    # v(x, d) = -m <d, x>: |grad v| <= m c, linear in x (004 Theorem 5.7 setting holds structurally)
    return dict(common, strong_convexity=cfg.strong_convexity, smoothness=cfg.strong_convexity,
                grad_bound=m * cfg.grad_bound, v_smoothness=0.0, linear_v=True)


def exact_mu(mechanism: str, cfg: LQConfig) -> float | None:
    """Exact GDP parameter where the output is a Gaussian mechanism (None for SGLD).

    Args:
        mechanism: one of [`MECHANISMS`][bayesdp.audit.lq.MECHANISMS].
        cfg: the benchmark.

    Returns:
        mu, or ``None`` where the output is not Gaussian (SGLD).

    Examples:
        >>> exact_mu("ula-path", LQConfig(1.0, 0.5, step_size=0.02, num_steps=100))   # 2c sqrt(beta n gamma / 2)
        1.0
    """
    mu, c, beta = cfg.strong_convexity, cfg.grad_bound, cfg.inverse_temperature
    if mechanism == "posterior":
        return 2 * c * math.sqrt(beta / mu)
    if mechanism.startswith("sgld"):
        return None
    g, n = cfg.step_size, cfg.num_steps
    if mechanism == "ula-path":
        return 2 * c * math.sqrt(beta * n * g / 2)
    rho = 1 - g * mu
    var = (2 * g / beta) * (1 - rho ** (2 * n)) / (1 - rho ** 2)
    return 2 * c * (1 - rho ** n) / mu / math.sqrt(var)


def release_sensitivity(cfg: LQConfig):
    """Coupling sensitivity of the ULA average of x[0] (L_f = 1): the benchmark's U_D is mu-strongly
    convex and mu-smooth with |grad U_D - grad U_D'| <= 2c (LITERATURE §7.1, bayesdp.release).

    Args:
        cfg: the benchmark (step_size required).

    Returns:
        the ``CouplingBound``.

    Examples:
        >>> round(release_sensitivity(LQConfig(1.0, 0.5, step_size=0.1, num_steps=200)).distance, 6)   # 2c / mu
        1.0
    """

    return coupling_strongly_convex(cfg.step_size, cfg.strong_convexity, cfg.strong_convexity, 2 * cfg.grad_bound)


def exact_release_epsilon(cfg: LQConfig) -> float:
    """Exact epsilon of the benchmark's release: the averages on D and D' differ by a deterministic
    shift (the chain is linear), so the Laplace mechanism's privacy loss is epsilon * shift / C.

    Args:
        cfg: the benchmark (step_size, num_steps, epsilon and burn_in set).

    Returns:
        the exact epsilon (at most ``cfg.epsilon``).

    Examples:
        >>> cfg = LQConfig(1.0, 0.5, step_size=0.1, num_steps=200, epsilon=1.0, burn_in=50)
        >>> round(float(exact_release_epsilon(cfg)), 6)        # mean of 1 - 0.9^k over k = 51..200
        0.999691
    """
    mu, g, n, b = cfg.strong_convexity, cfg.step_size, cfg.num_steps, cfg.burn_in
    rho = 1 - g * mu
    ks = np.arange(b + 1, n + 1)
    shift = np.mean(2 * cfg.grad_bound * (1 - rho ** ks) / mu)
    return cfg.epsilon * shift / release_sensitivity(cfg).distance


def runs_memory_bytes(mechanism: str, cfg: LQConfig, runs: int) -> float:
    """An estimate (from below) of the memory of [`run_scores`][bayesdp.audit.lq.run_scores]: per run the per-step
    keys of the vmapped scan (``num_steps`` keys of 8 bytes), the state and the minibatch, and the scores.

    Args:
        mechanism: one of [`MECHANISMS`][bayesdp.audit.lq.MECHANISMS].
        cfg: the benchmark.
        runs: runs per dataset.

    Returns:
        bytes.

    Examples:
        >>> runs_memory_bytes("ula-final", LQConfig(1.0, 0.5, step_size=0.1, num_steps=100), runs=1000)
        848000.0
    """
    n = 0 if mechanism == "posterior" else int(cfg.num_steps or 0)
    per_run = 8.0 * n + 4.0 * 8 * int(cfg.dim) + 4.0 * int(cfg.batch_size or 0) + 16.0
    return float(runs) * per_run


def check_runs_memory(mechanism: str, cfg: LQConfig, runs: int) -> None:
    """Refuse in one line, before anything runs, more runs than the memory holds.

    Args:
        mechanism: one of [`MECHANISMS`][bayesdp.audit.lq.MECHANISMS].
        cfg: the benchmark.
        runs: runs per dataset.

    Raises:
        AssumptionError: [`runs_memory_bytes`][bayesdp.audit.lq.runs_memory_bytes] exceeds the available memory
            ([`bayesdp.resources.available_memory_bytes`][bayesdp.resources.available_memory_bytes]; no check where
            it is unknown).

    Examples:
        >>> check_runs_memory("ula-final", LQConfig(1.0, 0.5, step_size=0.1, num_steps=100), runs=1000)  # < 1 MB
    """

    require_memory(runs_memory_bytes(mechanism, cfg, runs), f"--runs {runs} of the {mechanism} benchmark",
                   "use fewer runs")


def run_scores(mechanism: str, cfg: LQConfig, runs: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Scores of `runs` independent outputs on D and on D' (vmapped; one XLA program per dataset).

    Args:
        mechanism: one of [`MECHANISMS`][bayesdp.audit.lq.MECHANISMS].
        cfg: the benchmark.
        runs: runs per dataset.
        seed: of the benchmark chains.

    Returns:
        ``(scores on D, scores on D')``, each of length ``runs``.

    Raises:
        AssumptionError: invalid configuration or runs.

    Examples:
        The exact posterior draws are N(+-c/mu, 1/mu): the two samples are centred at +-0.5.

        >>> s1, s0 = run_scores("posterior", LQConfig(strong_convexity=1.0, grad_bound=0.5), runs=1000)
        >>> s1.shape, bool(s1.mean() > 0.3 > -0.3 > s0.mean())
        ((1000,), True)
    """
    import jax
    import jax.numpy as jnp

    cfg = cfg.validated(mechanism)
    runs = positive_int("runs", runs)
    check_runs_memory(mechanism, cfg, runs)
    key = jax.random.PRNGKey(seed)
    k1, k0 = jax.random.split(key)
    out = []
    for sign, k in ((1.0, k1), (-1.0, k0)):
        record = jnp.zeros(cfg.dim).at[0].set(sign * cfg.grad_bound)
        out.append(np.asarray(lq_chain_scores(mechanism, cfg, record, runs, k), dtype=np.float64))
    if mechanism == "release":

        sens = release_sensitivity(cfg).distance
        out = [np.array([laplace_release([v], sens, cfg.epsilon).values[0] for v in arr]) for arr in out]
    return out[0], out[1]
