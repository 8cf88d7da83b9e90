"""Batched full-batch gradient for models whose likelihood is a Bernoulli GLM with an affine predictor.

When the only likelihood site of the model is ``Bernoulli(logits=eta)`` (NumPyro's exact class
``BernoulliLogits``: no mask, no wrapper, no ``scale`` handler) over the ``m`` records and its predictor
``eta(theta, data)`` is **affine in the unconstrained position** ``theta``, then

    grad_theta sum_i l_i(theta) = J^T (sigmoid(eta(theta)) - y),    J = d eta / d theta   (m, dim),

which is exactly the derivative the general path differentiates (``potential.bernoulli_logits_log_prob``
has the custom derivative ``y - sigmoid(eta)``, including ``1/2 - y`` at ``eta = 0``).  For K chains
this is two matrix products over the data instead of a ``vmap`` of the per-chain NumPyro gradient.
The products read the data in a layout allowed per backend (:func:`backend_forms`: on accelerators the
caller's row-major array only; on a CPU also a feature-major copy while it is small) and chosen among
those by a quick measurement (:func:`choose_form`); every product at ``Precision.HIGHEST``.

Affinity is **proved structurally, never assumed**: :func:`affine_in_first_argument` runs the analyzer's
affinity interpreter (:mod:`bayesdp.analysis.structure.affinity`) on the jaxpr of ``eta(theta, data)``
(traced with the model, at the data's shapes): every operation that touches ``theta`` must be linear in
it (sums, multiplication or division by a theta-free operand, a dot product with a theta-free operand,
reshapes, broadcasts, slices and gathers with theta-free indices, selects with a theta-free predicate,
...).  Such a program is affine in ``theta`` for every value of the data, so ``eta`` itself, its transpose
(``jax.vjp``), or ``J`` (computed once per dataset by ``jvp`` along the basis at ``theta = 0``) and
``c = eta(0)`` give ``eta(theta) = J theta + c`` exactly (up to float rounding).  Anything else (a transform such as ``exp`` of a positive site, a hierarchical scale
multiplying ``theta``, another observed site, a masked or scaled site) falls back to the general path.

The prior/Jacobian part ``K`` keeps NumPyro's gradient (per chain, traced with the same data as the
general path); only the likelihood part is replaced.  Used by full-batch ULA without clipping, on one
device or sharded (records split over devices: per-device partial sums, padded rows masked; chains split:
each device's chains), the clipped and minibatch estimators keep the general path.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..jax_cache import in_use
from ..analysis.structure import Affinity, Run, where
from ..analysis.structure.affinity import A, C, CONST, OTHER
from ..analysis.session import memo, program_key
from .potential import _trace

__all__ = ["NotAffine", "affine_in_first_argument", "BernoulliGLM", "detect", "arrays", "arrays_fn",
           "likelihood_gradient", "prior_gradient", "backend", "backend_forms", "choose_form",
           "ROWS", "FEATURES", "ROWS_FEATURES", "FEATURES_ROWS", "ROW_BLOCKS", "FEATURES_SUM", "ALL_FORMS",
           "ACCEL_FORMS_SINGLE", "ACCEL_FORMS_CHAINS", "MAX_COPY_BYTES", "LAST_TIMINGS"]


class NotAffine(Exception):
    """The predictor is not (provably) affine in theta (raised by :func:`affine_in_first_argument`).

    Examples:
        >>> import jax.numpy as jnp
        >>> try:
        ...     affine_in_first_argument(lambda th: jnp.exp(th), jnp.zeros(2))
        ... except NotAffine as exc:
        ...     print("not affine:", exc)
        not affine: `exp at ...` is not linear in theta
    """


def affine_in_first_argument(fn: Callable, theta, *args) -> list[bool]:
    """Prove that every output of ``fn(theta, *args)`` is affine in ``theta`` (for all values of ``args``).

    The proof is the analyzer's affinity interpreter (:mod:`bayesdp.analysis.structure.affinity`) run on
    the traced program.

    Args:
        fn: the function ``fn(theta, *args)``, traceable by JAX.
        theta: a value of ``theta`` (its shape and dtype are traced).
        *args: values of the other arguments (their shapes and dtypes are traced).

    Returns:
        per output of ``fn``, whether it depends on ``theta`` at all.

    Raises:
        NotAffine: an output is not proven affine (naming the operation and the line).

    Examples:
        >>> import jax.numpy as jnp
        >>> affine_in_first_argument(lambda th, x: (x @ th + 1.0, x.sum()), jnp.zeros(2), jnp.ones((3, 2)))
        [True, False]
    """

    closed = jax.make_jaxpr(fn)(theta, *args)
    n_theta = len(jax.tree_util.tree_leaves(theta))
    n_in = len(closed.jaxpr.invars)
    outs = Run(Affinity()).program(closed, [A] * n_theta + [C] * (n_in - n_theta))
    for o in outs:
        if o.kind == OTHER:
            raise NotAffine(f"`{where(o.why)}` is not linear in theta" if o.why is not None else "not affine")
    return [o.kind != CONST for o in outs]


# ---------------------------------------------------------------------------
# detection on a ModelPotential
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BernoulliGLM:
    """The structure found in a model: its single likelihood site and the functions of (theta, data).

    Attributes:
        site: the name of the likelihood site.
        predictor: ``(theta, data) -> eta``, the logits ``(m,)``.
        response: ``data -> y``, the observed values ``(m,)`` (theta-free).
        prior_part: ``(theta, data) -> log prior + log|det J|`` (the non-likelihood part).

    Examples:
        >>> import numpy as np, jax.numpy as jnp
        >>> from bayesdp.models import logistic
        >>> from bayesdp.samplers import ModelPotential
        >>> pot = ModelPotential(logistic, {"X": np.array([[0.6, 0.8], [1.0, 0.0]]), "y": np.array([1.0, 0.0])})
        >>> structure, _ = detect(pot)
        >>> eta = structure.predictor(jnp.array([1.0, 1.0]), pot.data)       # X w
        >>> structure.site, [round(v, 4) for v in eta.tolist()]
        ('obs', [1.4, 1.0])
    """

    site: str
    predictor: Callable       # (theta, data) -> eta (m,)
    response: Callable        # data -> y (m,), the observed values (theta-free)
    prior_part: Callable      # (theta, data) -> log prior + log|det J| (the general path's non-likelihood part)


def detect(potential) -> tuple[BernoulliGLM | None, str]:
    """The Bernoulli GLM structure of ``potential``'s model, or ``(None, reason)``.

    Traces the model (no compilation) and proves the predictor affine (:func:`affine_in_first_argument`).

    Args:
        potential: a :class:`~bayesdp.samplers.potential.ModelPotential`.

    Returns:
        ``(structure, why)``: the :class:`BernoulliGLM` and a description, or ``None`` and why the general
        path is used.

    Examples:
        >>> import numpy as np
        >>> from bayesdp.models import linear, logistic
        >>> from bayesdp.samplers import ModelPotential
        >>> data = {"X": np.array([[0.6, 0.8], [1.0, 0.0]]), "y": np.array([1.0, 0.0])}
        >>> detect(ModelPotential(logistic, data))[1]
        'Bernoulli GLM with a predictor affine in theta'
        >>> detect(ModelPotential(linear, data))
        (None, "likelihood site 'obs' is Normal, not BernoulliLogits")
    """
    # inside one public call (bayesdp.analysis.session) proven once per model, kwargs, data shapes and dtypes: the
    # proof reads nothing else (the closures take the data as an argument)
    x64 = bool(jax.config.read("jax_enable_x64"))
    key, keep = program_key(potential.model, {k: tuple(v.shape) for k, v in potential.data.items()},
                            {k: v.dtype for k, v in potential.data.items()}, potential.model_kwargs, None)
    return memo("bernoulli-glm", key + (x64,), lambda: _detect(potential), keep)


def _detect(potential) -> tuple[BernoulliGLM | None, str]:
    import numpyro.distributions as dist

    data = potential.data
    m = potential.data_size
    log_dets = {f"_{s.name}_log_det" for s in potential.sites}
    theta0 = jnp.zeros(potential.dim, jnp.float32 if not jax.config.read("jax_enable_x64") else jnp.float64)
    tr = _trace(potential.model, potential._template, potential.model_kwargs, params=potential._reparam(theta0),
                abstract=True)
    observed = [n for n, s in tr.items() if s["type"] == "sample" and s["is_observed"] and n not in log_dets]
    if len(observed) != 1:
        return None, f"{len(observed)} likelihood sites (the GLM path needs exactly one)"
    site = observed[0]
    s = tr[site]
    if type(s["fn"]) is not dist.BernoulliLogits:
        return None, f"likelihood site '{site}' is {type(s['fn']).__name__}, not BernoulliLogits"
    if s.get("scale") is not None:
        return None, f"likelihood site '{site}' is scaled"
    if tuple(s["fn"].event_shape) != ():
        return None, f"likelihood site '{site}' has event shape {s['fn'].event_shape}"

    def _site(theta, d):
        return _trace(potential.model, d, potential.model_kwargs, params=potential._reparam(theta))[site]

    def predictor(theta, d):
        fn = _site(theta, d)["fn"]
        return jnp.broadcast_to(fn.logits, fn.batch_shape)

    def response(d):
        site_ = _trace(potential.model, d, potential.model_kwargs, params=potential._reparam(
            jnp.zeros(potential.dim, theta0.dtype)))[site]
        return jnp.broadcast_to(jnp.asarray(site_["value"], site_["fn"].logits.dtype), site_["fn"].batch_shape)

    def prior_part(theta, d):
        return potential._log_parts(theta, d)[0]

    try:
        eta_shape = jax.eval_shape(predictor, theta0, data)
        if tuple(eta_shape.shape) != (m,):
            return None, f"predictor of '{site}' has shape {eta_shape.shape}, not one value per record ({m},)"
        _, dep_y = affine_in_first_argument(lambda th, d: (predictor(th, d), response(d)), theta0, data)
    except NotAffine as exc:
        return None, f"predictor of '{site}' is not provably affine in theta: {exc}"
    except Exception as exc:  # noqa: BLE001
        return None, f"predictor of '{site}' could not be analysed ({type(exc).__name__}: {exc})"
    if dep_y:
        return None, f"the observed value of '{site}' depends on theta"
    return BernoulliGLM(site, predictor, response, prior_part), "Bernoulli GLM with a predictor affine in theta"


# ---------------------------------------------------------------------------
# the arrays (once per dataset), the gradient layouts and the choice per backend
# ---------------------------------------------------------------------------

#: every product of the GLM path runs at full float32 precision on every backend (no TF32 on GPUs): the
#: path must equal the general one (NumPyro's gradient, also traced at HIGHEST, potential.py) and the
#: update the certificate describes; on a CPU HIGHEST is what XLA does anyway
HIGHEST = jax.lax.Precision.HIGHEST

#: the layouts.  "rows": the predictor evaluated on the caller's data (row-major, no copy) and its transpose
#: (``jax.vjp``) for J^T r; "features": a feature-major copy JT (dim, m) of the Jacobian for both products;
#: "rows_features" / "features_rows": one product each way (one copy)
#: "row_blocks": "rows" one block of rows at a time, both products on a block while it is in cache (the
#: data are read once per step instead of twice; no copy)
ROWS, FEATURES, ROWS_FEATURES, FEATURES_ROWS = "rows", "features", "rows_features", "features_rows"
ROW_BLOCKS = "row_blocks"
#: both products over the feature-major copy written as multiply-and-sum reductions (no dot): one fused
#: reduction kernel per product on an accelerator, exact float32 products (no TF32 question), for the skinny
#: (m x d) by (d x K) shapes of a few chains where a full-float32 matrix product falls to slow kernels
FEATURES_SUM = "features_sum"
FORMS_SINGLE = (ROWS, ROW_BLOCKS, FEATURES, ROWS_FEATURES)
FORMS_CHAINS = (ROWS, ROW_BLOCKS, FEATURES, ROWS_FEATURES, FEATURES_ROWS)
#: the candidates measured on an accelerator when the copy is allowed (``row_blocks`` is a CPU-cache layout)
ACCEL_FORMS_SINGLE = (ROWS, FEATURES, FEATURES_SUM)
ACCEL_FORMS_CHAINS = (ROWS, FEATURES, ROWS_FEATURES, FEATURES_SUM)
#: every layout :func:`likelihood_gradient` knows
ALL_FORMS = FORMS_CHAINS + (FEATURES_SUM,)
#: rows per block of the "row_blocks" layout (a few hundred KiB at d = 100: stays in a core's L2 cache)
BLOCK_ROWS = 512
NEEDS_COPY = {FEATURES, ROWS_FEATURES, FEATURES_ROWS, FEATURES_SUM}

#: largest feature-major copy JT (bytes per device) the CPU layouts may make.  Below it a copy costs
#: little memory and the feature-major products run about 1.7-3.8x faster on XLA:CPU (measured at
#: m = 10^5, d = 100 and m = 1,000, d = 10); above it the path works on the caller's array in place, so
#: ULA holds the data once (the memory target of issue #18: at most 2x the data).  Sampler(max_copy_bytes=...)
#: overrides it.
MAX_COPY_BYTES = 64 << 20
#: bytes of the feature blocks in which JT is computed (the only temporary of the copy)
BLOCK_BYTES = 16 << 20


def _sig(z):
    return jax.nn.sigmoid(z)


def _mm(a, b):
    return jnp.matmul(a, b, precision=HIGHEST)


def arrays(glm: BernoulliGLM, data, dim: int, dtype, cache_key=None, features: bool = True) -> dict[str, jax.Array]:
    """``y`` (the responses) and, with ``features``, the feature-major Jacobian ``JT`` (dim, m) and ``c = eta(0)``.
    See :func:`arrays_fn`.

    The compiled function is cached under ``cache_key`` (the model and the data shapes): a new dataset of
    the same shapes does not recompile it.

    The examples use ``bayesdp.models.logistic`` (prior N(0, I), predictor ``eta = X w``, so ``J = X`` and
    ``c = 0``) on three records; at ``w = 0`` the likelihood gradient is ``X^T (1/2 - y)``.

    Args:
        glm: the structure (:func:`detect`).
        data: the record arrays.
        dim: the length of theta.
        dtype: the floating dtype of the arrays.
        cache_key: the key of the compiled function's cache (``None``: not cached).
        features: return ``JT`` and ``c``.

    Returns:
        a dict with ``y`` and, as asked, ``JT`` and ``c``.

    Examples:
        >>> import numpy as np, jax.numpy as jnp
        >>> from bayesdp.models import logistic
        >>> from bayesdp.samplers import ModelPotential
        >>> X, y = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]), np.array([1.0, 0.0, 1.0])
        >>> pot = ModelPotential(logistic, {"X": X, "y": y})
        >>> structure, _ = detect(pot)
        >>> a = arrays(structure, pot.data, pot.dim, jnp.float32)
        >>> np.allclose(a["JT"], X.T), a["c"].tolist(), a["y"].tolist()
        (True, [0.0, 0.0, 0.0], [1.0, 0.0, 1.0])
    """
    m = int(jax.tree_util.tree_leaves(data)[0].shape[0])
    key = None if cache_key is None else (cache_key, dim, m, str(jnp.dtype(dtype)), features)
    fn = _ARRAYS_JIT.get(key) if key is not None else None
    if fn is None:
        fn = jax.jit(arrays_fn(glm, dim, dtype, features))
        if key is not None:
            _ARRAYS_JIT[key] = fn
    return jax.block_until_ready(fn(data))


_ARRAYS_JIT: dict[Any, Callable] = {}


def arrays_fn(glm: BernoulliGLM, dim: int, dtype, features: bool = True) -> Callable:
    """The traceable ``data -> arrays`` of :func:`arrays` (also run per device on sharded records).

    ``JT`` is computed in blocks of its rows: row k is ``d eta / d theta_k``, the predictor's ``jvp`` along
    the basis vector e_k at HIGHEST precision (exact: eta is affine, and a product with 0 or 1 rounds
    nothing), written into one buffer by a loop over blocks, so the only temporary is one block of
    :data:`BLOCK_BYTES` (no (m, dim) Jacobian next to its transpose, no float64 copy).

    Args:
        glm: the structure (:func:`detect`).
        dim: the length of theta.
        dtype: the floating dtype of the arrays.
        features: compute ``JT`` and ``c``.

    Returns:
        the function ``data -> dict`` of :func:`arrays`.

    Examples:
        >>> import numpy as np, jax.numpy as jnp
        >>> from bayesdp.models import logistic
        >>> from bayesdp.samplers import ModelPotential
        >>> X, y = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]), np.array([1.0, 0.0, 1.0])
        >>> pot = ModelPotential(logistic, {"X": X, "y": y})
        >>> structure, _ = detect(pot)
        >>> arrays_fn(structure, 2, jnp.float32, features=False)(pot.data)["y"].tolist()
        [1.0, 0.0, 1.0]
    """
    dtype = jnp.dtype(dtype)
    theta0 = jnp.zeros(dim, dtype)

    def fn(d):
        m = int(jax.tree_util.tree_leaves(d)[0].shape[0])
        out = {"y": glm.response(d).astype(dtype)}
        if not features:
            return out
        block = max(1, min(dim, BLOCK_BYTES // max(1, m * dtype.itemsize)))

        def fill(i, jt):
            k0 = jnp.minimum(i * block, dim - block)
            basis = (jnp.arange(block)[:, None] + k0 == jnp.arange(dim)[None, :]).astype(dtype)  # rows e_k
            with jax.default_matmul_precision("highest"):  # a TF32 product with e_k would round the features
                rows = jax.vmap(lambda e: jax.jvp(lambda th: glm.predictor(th, d), (theta0,), (e,))[1])(basis)
            return jax.lax.dynamic_update_slice(jt, rows.astype(dtype), (k0, jnp.zeros((), k0.dtype)))

        jt = jax.lax.fori_loop(0, -(-dim // block), fill, jnp.zeros((dim, m), dtype))
        with jax.default_matmul_precision("highest"):
            c = glm.predictor(theta0, d).astype(dtype)
        out.update({"JT": jt, "c": c})
        return out

    return fn


def likelihood_gradient(glm: BernoulliGLM, form: str, num_chains: int) -> Callable:
    """``lik(theta, data, a, valid=None) -> sum_i [valid_i] grad l_i(theta)`` for theta (dim,) or (num_chains, dim).

    ``sum_i grad l_i = J^T r`` with the residual ``r = sigmoid(eta) - y``, ``eta = J theta + c``; ``valid``
    (bool per row, records sharded with padding) replaces a padded row's residual by 0 before the product.
    Every form computes the same numbers up to float rounding; they differ in the layout they read.

    The examples use ``bayesdp.models.logistic`` (prior N(0, I), predictor ``eta = X w``, so ``J = X`` and
    ``c = 0``) on three records; at ``w = 0`` the likelihood gradient is ``X^T (1/2 - y)``.

    Args:
        glm: the structure (:func:`detect`).
        form: the layout, one of :data:`FORMS_CHAINS`.
        num_chains: the number of chains (theta ``(num_chains, dim)`` when > 1).

    Returns:
        the likelihood gradient ``lik(theta, data, arrays, valid=None)``.

    Raises:
        ValueError: an unknown layout.

    Examples:
        >>> import numpy as np, jax.numpy as jnp
        >>> from bayesdp.models import logistic
        >>> from bayesdp.samplers import ModelPotential
        >>> X, y = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]), np.array([1.0, 0.0, 1.0])
        >>> pot = ModelPotential(logistic, {"X": X, "y": y})
        >>> structure, _ = detect(pot)
        >>> a = arrays(structure, pot.data, pot.dim, jnp.float32)
        >>> for form in ("rows", "features"):           # X^T (1/2 - y) = (-0.5 - 0.3, 0.5 - 0.4)
        ...     g = likelihood_gradient(structure, form, 1)(jnp.zeros(2), pot.data, a)
        ...     print(form, [round(v, 4) for v in g.tolist()])
        rows [-0.8, 0.1]
        features [-0.8, 0.1]
    """
    if form not in ALL_FORMS:
        raise ValueError(f"unknown GLM layout {form!r}")
    chains = num_chains > 1

    def eta_rows(th, d):
        return jax.vmap(glm.predictor, in_axes=(0, None))(th, d) if chains else glm.predictor(th, d)

    def eta_features(th, a):
        if form == FEATURES_SUM:    # eta[k, i] = sum_j th[k, j] JT[j, i]: a reduction over j, no dot
            return jnp.sum(th[..., :, None] * a["JT"], axis=-2) + a["c"]
        return _mm(th, a["JT"]) + a["c"]

    def back_rows(th, d, r):
        return jax.vjp(lambda t: eta_rows(t, d), th)[1](r.astype(th.dtype))[0]

    def back_features(r, a):
        if form == FEATURES_SUM:    # g[k, j] = sum_i r[k, i] JT[j, i]: a reduction over the records, no dot
            return jnp.sum(r[..., None, :].astype(a["JT"].dtype) * a["JT"], axis=-1)
        if chains:
            return jnp.einsum("km,dm->kd", r, a["JT"], precision=HIGHEST)
        return _mm(a["JT"], r)

    def lik_record_major(th, d, a, valid=None):
        """Chains, ``rows_features``: (m, K) predictors X Theta^T and residuals, then JT R (dim, K).  The barrier
        keeps JT R a plain (dim, m) x (m, K) product: without it XLA folds the final transpose into the dot
        (R^T X, contracting dimension 0 of R), which XLA:CPU leaves to its slower generic dot instead of the
        YNNPACK fusion (measured 88 vs 131 steps/s at m = 10^5, d = 100, 8 chains)."""
        with jax.default_matmul_precision("highest"):
            eta = jax.vmap(glm.predictor, in_axes=(0, None), out_axes=1)(th, d)       # (m, K)
            r = _sig(eta) - a["y"][:, None]
            if valid is not None:
                r = jnp.where(valid[:, None], r, 0.0)
            return jnp.transpose(jax.lax.optimization_barrier(_mm(a["JT"], r)))

    if chains and form == ROWS_FEATURES:
        return lik_record_major
    if form == ROW_BLOCKS:
        return _row_blocks(glm, chains)

    def lik(th, d, a, valid=None):
        with jax.default_matmul_precision("highest"):
            eta = eta_rows(th, d) if form in (ROWS, ROWS_FEATURES) else eta_features(th, a)
            r = _sig(eta) - a["y"]
            if valid is not None:
                r = jnp.where(valid, r, 0.0)
            if form in (ROWS, FEATURES_ROWS):
                return back_rows(th, d, r)
            return back_features(r, a)

    return lik


def _row_blocks(glm: BernoulliGLM, chains: bool) -> Callable:
    """``rows`` computed over blocks of :data:`BLOCK_ROWS` rows: per block, the predictors, the residuals and
    the block's part of J^T r, while the block is in cache.  The last block is shifted back to end at the
    last row and its rows already summed are masked (a block never runs past the data, and nothing is
    copied).  The predictor is evaluated on a block of records: each record's predictor depends on its own
    record only (the per-record decomposition every sampler relies on, ``ModelPotential.check_decomposition``)."""

    def lik(th, d, a, valid=None):
        m = int(a["y"].shape[0])
        block = min(m, BLOCK_ROWS)

        def eta_of(t, db):
            return jax.vmap(glm.predictor, in_axes=(0, None))(t, db) if chains else glm.predictor(t, db)

        def body(i, acc):
            start = jnp.minimum(i * block, m - block)
            db = {k: jax.lax.dynamic_slice_in_dim(v, start, block, 0) for k, v in d.items()}
            keep = jnp.arange(block) + start >= i * block          # rows not summed by the previous block
            if valid is not None:
                keep = keep & jax.lax.dynamic_slice_in_dim(valid, start, block, 0)
            eta, back = jax.vjp(lambda t: eta_of(t, db), th)
            r = jnp.where(keep, _sig(eta) - jax.lax.dynamic_slice_in_dim(a["y"], start, block, 0), 0.0)
            return acc + back(r.astype(th.dtype))[0]

        with jax.default_matmul_precision("highest"):
            return jax.lax.fori_loop(0, -(-m // block), body, jnp.zeros_like(th))

    return lik


def prior_gradient(structure: BernoulliGLM, num_chains: int) -> Callable:
    """``(theta, data) -> grad K(theta)`` (NumPyro's gradient of the prior/Jacobian part, per chain).

    Args:
        structure: the structure (:func:`detect`).
        num_chains: the number of chains (theta ``(num_chains, dim)`` when > 1: vmapped).

    Returns:
        the prior gradient.

    Examples:
        The prior N(0, I) of ``bayesdp.models.logistic``: ``grad K(w) = w``.

        >>> import numpy as np, jax.numpy as jnp
        >>> from bayesdp.models import logistic
        >>> from bayesdp.samplers import ModelPotential
        >>> X, y = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]), np.array([1.0, 0.0, 1.0])
        >>> pot = ModelPotential(logistic, {"X": X, "y": y})
        >>> structure, _ = detect(pot)
        >>> prior_gradient(structure, 2)(jnp.array([[1.0, 2.0], [3.0, 4.0]]), pot.data).tolist()
        [[1.0, 2.0], [3.0, 4.0]]
    """
    grad_k = jax.grad(lambda th, d: -structure.prior_part(th, d))
    return jax.vmap(grad_k, in_axes=(0, None)) if num_chains > 1 else grad_k


#: the platform the layout is chosen for; None: ``jax.default_backend()``.  Tests set it to check the
#: choice another backend would make (every layout computes the same gradient on any backend).
FORCE_BACKEND: str | None = None


def backend() -> str:
    """``"cpu"``, ``"gpu"``, ``"tpu"``, ...: the platform whose layout rules apply (:func:`backend_forms`).

    Returns:
        ``FORCE_BACKEND`` when set, else ``jax.default_backend()``.

    Examples:
        >>> import jax
        >>> backend() == jax.default_backend()
        True
    """
    return FORCE_BACKEND or jax.default_backend()


def backend_forms(backend: str, num_chains: int, copy_bytes: int, max_copy_bytes: int | None = None
                  ) -> tuple[tuple[str, ...], str]:
    """The layouts allowed on ``backend`` and why.

    * GPU and other accelerators: when the feature-major copy is at most ``max_copy_bytes`` (64 MiB by
      default: little beside an accelerator's memory), ``rows``, ``features``, ``rows_features`` (chains) and
      ``features_sum``, measured on the spot (:func:`choose_form`); above it ``rows`` only, which reads the
      caller's row-major array (no copy; a row-major matrix-vector product reads rows of d contiguous floats,
      coalesced, at memory bandwidth in either direction).  Every product at HIGHEST precision (full float32,
      no TF32: see docs/samplers.md); for a few chains such a product falls to slow kernels on an NVIDIA GPU
      (0.72 of a TF32 hand-written loop at 8 chains on an H200), hence the candidate ``features_sum``, whose
      products are reductions, not dots (measured on an H100: it ties ``features`` for one chain and is slower
      for 8; docs/samplers.md).
    * CPU: every layout when the feature-major copy is at most ``max_copy_bytes`` (default
      :data:`MAX_COPY_BYTES`), measured on the spot (:func:`choose_form`); above it the layouts without a
      copy (``rows``, ``row_blocks``), measured likewise.

    Args:
        backend: the platform (:func:`backend`).
        num_chains: the number of chains.
        copy_bytes: the size of a feature-major copy of the data.
        max_copy_bytes: the largest copy allowed (default :data:`MAX_COPY_BYTES`).

    Returns:
        ``(forms, why)``: the allowed layouts and the rule that chose them.

    Examples:
        >>> backend_forms("gpu", 1, 10)[0]
        ('rows', 'features', 'features_sum')
        >>> backend_forms("gpu", 8, 2 ** 30)[0]        # 1 GiB copy > 64 MiB: no copy
        ('rows',)
        >>> backend_forms("cpu", 1, 10)[0]
        ('rows', 'row_blocks', 'features', 'rows_features')
        >>> backend_forms("cpu", 8, 2 ** 30)[0]        # 1 GiB copy > 64 MiB: no copy
        ('rows', 'row_blocks')
    """
    limit = MAX_COPY_BYTES if max_copy_bytes is None else max_copy_bytes
    if backend != "cpu":
        if copy_bytes > limit:
            return (ROWS,), (f"{backend}: a feature-major copy ({copy_bytes / 2**20:.0f} MiB) exceeds max_copy_bytes "
                             f"({limit / 2**20:.0f} MiB): row-major products on the caller's array (no copy)")
        return (ACCEL_FORMS_SINGLE if num_chains == 1 else ACCEL_FORMS_CHAINS), f"{backend}: fastest measured layout"
    if copy_bytes > limit:
        return (ROWS, ROW_BLOCKS), (f"cpu: a feature-major copy ({copy_bytes / 2**20:.0f} MiB) exceeds "
                                    f"max_copy_bytes ({limit / 2**20:.0f} MiB): row-major products on the "
                                    "caller's array (no copy), the faster of whole and blocked")
    forms = FORMS_SINGLE if num_chains == 1 else FORMS_CHAINS
    return forms, "cpu: fastest measured layout"


#: measured layout per (model and data shapes, chains, dtype, candidates): once per process and shape
_CHOICE: dict[Any, str] = {}


def choose_form(structure: BernoulliGLM, data, dim: int, num_chains: int, dtype, forms=None, cache_key=None,
                steps: int = 64, repeats: int = 7) -> str:
    """The fastest of ``forms`` for this model and shape, by a quick measurement: a ``lax.scan`` of up to
    ``steps`` gradient evaluations per layout (about 10 ms each), the minimum of ``repeats`` interleaved
    timings, on the data themselves (no proxy array: nothing of the data's size is allocated unless a
    layout with a copy is a candidate, which :func:`backend_forms` allows only for copies of at most
    ``max_copy_bytes``).  The choice only affects speed: every layout computes the same gradient up to
    float rounding, and the time of these affine float operations does not depend on the values.  Each
    measurement is saved in bayesdp's cache folder; once :data:`CONFIRMATIONS` processes in a row chose the same
    layout, later processes read it instead of measuring.

    Args:
        structure: the structure (:func:`detect`).
        data: the record arrays.
        dim: the length of theta.
        num_chains: the number of chains.
        dtype: the floating dtype.
        forms: the candidate layouts (default: every layout for this number of chains).
        cache_key: the key under which the choice is remembered in this process (``None``: not remembered).
        steps: gradient evaluations per timing.
        repeats: interleaved timings per layout.

    Returns:
        the fastest layout (the only candidate when there is one, without measuring).

    Examples:
        >>> import numpy as np, jax.numpy as jnp
        >>> from bayesdp.models import logistic
        >>> from bayesdp.samplers import ModelPotential
        >>> X, y = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]), np.array([1.0, 0.0, 1.0])
        >>> pot = ModelPotential(logistic, {"X": X, "y": y})
        >>> structure, _ = detect(pot)
        >>> choose_form(structure, pot.data, 2, 1, jnp.float32, forms=("rows",))
        'rows'
    """
    forms = tuple(forms or (FORMS_SINGLE if num_chains == 1 else FORMS_CHAINS))
    if len(forms) == 1:
        return forms[0]
    m = int(jax.tree_util.tree_leaves(data)[0].shape[0])
    key = None if cache_key is None else (cache_key, dim, num_chains, str(jnp.dtype(dtype)), forms)
    if key is not None and key in _CHOICE:
        return _CHOICE[key]
    fn = cache_key[0][0] if isinstance(cache_key, tuple) and cache_key and isinstance(cache_key[0], tuple) \
        and cache_key[0] else None
    model = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', '')}" if callable(fn) else ""
    disk_key = _disk_key(structure, model, m, dim, num_chains, dtype, forms)
    saved = _saved_choices().get(disk_key)
    saved_form, agreed = (saved.get("form"), saved.get("agree", 0)) if isinstance(saved, dict) else (saved, 1)
    agreed = agreed if type(agreed) is int and agreed >= 0 else 0       # a damaged file: counted from nothing
    if saved_form in forms and agreed >= CONFIRMATIONS:
        if key is not None:
            _CHOICE[key] = saved_form
        return saved_form
    a = arrays(structure, data, dim, dtype, features=any(f in NEEDS_COPY for f in forms))
    shape = (dim,) if num_chains == 1 else (num_chains, dim)
    if backend() == "cpu":      # about 1e7 multiply-adds per timing (~10 ms on a core)
        steps = max(2, min(steps, int(1e7 / max(1, m * dim * max(1, num_chains // 4)))))
    # on an accelerator every timing runs ``steps`` gradients: two steps (the CPU's count at m = 1e5, d = 100,
    # 8 chains) timed kernel launches, not layouts (0.19-0.23 ms for every layout on an H100)
    fns = []
    for form in forms:
        g = likelihood_gradient(structure, form, num_chains)

        def run(x0, d, a, g=g):
            return jax.lax.scan(lambda x, _: (x - 1e-4 * g(x, d, a), None), x0, None, length=steps)[0]

        f = jax.jit(run)
        x0 = jnp.zeros(shape, dtype)
        jax.block_until_ready(f(x0, data, a))
        fns.append(lambda f=f, x0=x0: jax.block_until_ready(f(x0, data, a)))
    ts = [[] for _ in fns]
    for _ in range(repeats):
        for i, f in enumerate(fns):
            t = time.perf_counter()
            f()
            ts[i].append(time.perf_counter() - t)
    best = forms[int(np.argmin([min(t) for t in ts]))]
    LAST_TIMINGS.clear()
    LAST_TIMINGS.update({f: min(t) / steps for f, t in zip(forms, ts)})
    if key is not None:
        _CHOICE[key] = best
    _save_choice(disk_key, {"form": best, "agree": agreed + 1 if best == saved_form else 1})
    return best


#: seconds per gradient of each layout in the last measurement of :func:`choose_form` (the benches report it)
LAST_TIMINGS: dict = {}


#: the file, in bayesdp's compilation cache folder, of the layouts measured by earlier processes
FORMS_FILE = "glm-forms.json"
_MAX_SAVED = 256
#: a saved layout is used without measuring once this many processes in a row measured it fastest: one timing
#: taken while the machine was busy (a test run beside it) chose a layout 0.69x as fast as the best at m = 1e5,
#: d = 100 and, saved, kept it for every later process
CONFIRMATIONS = 2


def _disk_key(structure, model: str, m: int, dim: int, num_chains: int, dtype, forms) -> str:
    """What a measured layout is remembered under across processes: the versions, the device, the model's function
    and likelihood site, the shapes (public inputs; the data's values never enter, as in the measurement itself)."""
    dev = jax.devices()[0]
    return "|".join(map(str, (jax.__version__, dev.platform, getattr(dev, "device_kind", ""), model, structure.site,
                              m, dim, num_chains, jnp.dtype(dtype).name, ",".join(forms))))


def _saved_choices() -> dict:
    """The layouts earlier processes measured ({} when bayesdp's compilation cache is off or the file is absent or
    unreadable: then the layout is measured again)."""
    folder = in_use()
    if folder is None:
        return {}
    try:
        with open(folder / FORMS_FILE, encoding="utf-8") as f:
            got = json.load(f)
    except (OSError, ValueError):
        return {}
    return got if isinstance(got, dict) else {}


def _save_choice(disk_key: str, form: dict) -> None:
    """Remember a measured layout in bayesdp's cache folder (written to a temporary file there, then renamed; mode
    0600 like the folder's 0700; at most :data:`_MAX_SAVED` entries; a failure to write only costs a later
    measurement)."""
    folder = in_use()
    if folder is None:
        return
    saved = _saved_choices()
    saved.pop(disk_key, None)
    saved[disk_key] = form
    saved = dict(list(saved.items())[-_MAX_SAVED:])
    tmp = folder / f"{FORMS_FILE}.tmp-{os.getpid()}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(saved, f)
        os.replace(tmp, folder / FORMS_FILE)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
