"""Potential of a NumPyro model in the unconstrained space, split into prior and per-record parts.

Definitions (issue #4, and the analyzer's): with ``T`` the bijection from the unconstrained
space to the support of the latent sites,

    U_D(theta) = K(theta) + sum_i l_i(theta)
    K(theta)   = -log prior(T(theta)) - log|det J_T(theta)|       (data independent)
    l_i(theta) = -log p(d_i | T(theta))                           (record i's likelihood, negated)

The target is ``exp(-beta U_D)``.  The position ``theta`` is one flat float vector (all latent
sites concatenated, in trace order); :meth:`ModelPotential.unflatten` maps it back to the
constrained values of each site.

Data are a dict of record arrays that share their leading dimension ``m`` (the records); the
model is called as ``model(**data, **model_kwargs)``.  A minibatch is obtained by indexing every
data array with the same indices, so the model must treat the leading axis of each data array as
the record axis (a ``numpyro.plate`` over records, no global observed site).  Both are checked:
the per-record log-likelihoods must sum to the full-data one at a test point.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import AssumptionError, DomainError, ModelError
from ..analysis.loading import ALIGNMENT, aligned_empty
from ..analysis.records import traced_abstractly, validate_records
from ..analysis.session import memo, program_key

__all__ = ["validate_data", "ALIGNMENT", "aligned_empty", "ModelPotential"]


def _to_aligned(arr: np.ndarray, dtype) -> np.ndarray:
    """``arr`` cast to ``dtype`` in a 64-byte-aligned buffer (used in place by the samplers: one copy, not two)."""
    out = aligned_empty(arr.shape, dtype)
    out[...] = arr
    return out


def validate_data(data: Mapping[str, Any], model: Callable | None = None,
                  model_kwargs: Mapping[str, Any] | None = None) -> tuple[dict[str, np.ndarray], int]:
    """Check the data dict and return NumPy arrays and the record count ``m``.

    The shared record validation (:func:`bayesdp.analysis.records.validate_records`: shape, dtype,
    finiteness and, given the model, integer labels within the support of discrete observed sites), then
    the samplers' dtypes: floating arrays are kept in float32 unless JAX runs in 64-bit mode (the
    analyzer's certificate covers that cast: :mod:`bayesdp.analysis.domain`), integers in int32.
    Raised before any compilation.

    Args:
        data: record arrays by name, sharing their leading (record) dimension.
        model: the NumPyro model (``None``: no check against its observed sites).
        model_kwargs: the model's other keyword arguments.

    Returns:
        ``(arrays, m)``: the data as NumPy arrays in the samplers' dtypes, and the number of records.

    Raises:
        AssumptionError: not a non-empty dict of numeric arrays with a leading record axis of one length.
        DomainError: non-finite values, labels outside a discrete site's support, or integers beyond int32
            (without 64-bit mode).

    Examples:
        >>> import numpy as np
        >>> arrays, m = validate_data({"X": np.ones((3, 2)), "y": np.array([0, 1, 1])})
        >>> m, arrays["X"].dtype, arrays["y"].dtype
        (3, dtype('float32'), dtype('int32'))
        >>> validate_data({"y": np.array([1.0, np.nan])})
        Traceback (most recent call last):
        ...
        bayesdp.errors.DomainError: ...
    """

    host, m = validate_records(data, model, model_kwargs)
    out: dict[str, np.ndarray] = {}
    x64 = bool(jax.config.read("jax_enable_x64"))
    for name, arr in host.items():
        if not arr.dtype.isnative:                  # e.g. a big-endian NPZ member: JAX takes native order only
            arr = _to_aligned(arr, arr.dtype.newbyteorder("="))
        if np.issubdtype(arr.dtype, np.floating):
            if not x64 and arr.dtype == np.float64:
                arr = _to_aligned(arr, np.float32)
        elif np.issubdtype(arr.dtype, np.integer) and not x64 and arr.dtype.itemsize > 4:
            info = np.iinfo(np.int32)
            if arr.size and (arr.min() < info.min or arr.max() > info.max):
                raise DomainError(f"data['{name}'] has integers beyond the int32 range the samplers use "
                                  f"(max |value| {max(abs(int(arr.min())), abs(int(arr.max())))}); rescale "
                                  "them or enable JAX's 64-bit mode")
            arr = _to_aligned(arr, np.int32)
        out[name] = arr
    return out, int(m)


@jax.custom_jvp
def bernoulli_logits_log_prob(logits, value):
    """log Bernoulli(value | sigmoid(logits)) = value * logits - log(1 + e^logits), with the exact derivative
    ``value - sigmoid(logits)`` in ``logits`` everywhere.

    NumPyro's own ``BernoulliLogits.log_prob`` (``-(clip(z, 0) + log1p(e^-|z|) - z y)``) has autodiff
    derivative ``-y`` instead of ``1/2 - y`` at z = 0 exactly (the kink of clip and abs), i.e. at the
    default initialisation of a logistic regression; and it is about 1.5-2x slower in ULA at m = 1,000.
    """
    return value * logits - jnp.logaddexp(0.0, logits)


@bernoulli_logits_log_prob.defjvp
def _bernoulli_logits_log_prob_jvp(primals, tangents):
    logits, value = primals
    d_logits, d_value = tangents
    out = bernoulli_logits_log_prob(logits, value)
    return out, (value - jax.nn.sigmoid(logits)) * d_logits + logits * d_value


def _fast_log_probs():
    """Observed-site log-densities with exact, fused derivatives, keyed by the exact distribution class
    (wrapped distributions -- masked, expanded, ... -- use NumPyro's log_prob).  Each entry is checked
    against NumPyro's log_prob and against finite differences in tests/samplers/test_potential.py."""
    import numpyro.distributions as dist

    return {dist.BernoulliLogits: lambda fn, value: bernoulli_logits_log_prob(
        fn.logits, jnp.asarray(value, jnp.result_type(fn.logits)))}


@dataclass(frozen=True)
class _Site:
    name: str
    shape: tuple[int, ...]           # constrained shape
    unconstrained_shape: tuple[int, ...]
    size: int                        # number of unconstrained coordinates
    offset: int


def _trace(model, data, model_kwargs, params=None, key=0, abstract=False):
    """NumPyro's trace of ``model`` on ``data``.  ``abstract``: traced by ``jax.make_jaxpr`` (nothing evaluated,
    nothing compiled: run eagerly, each operation on a concrete array is a small program to lower and fetch from
    the compilation cache, 10 ms each in a fresh process); the sites' values are then abstract (their shapes and
    the distributions' types and supports are what the caller may read).  A model that needs concrete values
    (Python control flow on the data) is traced eagerly instead."""
    from numpyro import handlers

    fn = handlers.seed(model, rng_seed=key)
    if params is not None:
        fn = handlers.substitute(fn, substitute_fn=params)
    if abstract:
        def trace():
            return traced_abstractly(lambda d: handlers.trace(fn).get_trace(**d, **model_kwargs), data)
        with contextlib.suppress(Exception):   # traced eagerly below, where the model's own error (if any) is raised
            if params is not None:
                return trace()
            # inside one public call (bayesdp.analysis.session) the abstract trace of the same model, kwargs, shapes
            # and dtypes is made once: it reads nothing but those (no params substituted; the seed is in the key)
            k, keep = program_key(model, {a: np.shape(v) for a, v in data.items()},
                                  {a: v.dtype if hasattr(v, "dtype") else np.asarray(v).dtype
                                   for a, v in data.items()}, model_kwargs, None)
            return memo("abstract-trace", k + (key,), trace, keep)
    return handlers.trace(fn).get_trace(**data, **model_kwargs)


class ModelPotential:
    """The potential of ``model`` with data ``data`` (dict of record arrays), split as above.

    Construction traces the model twice in Python (no compilation) to find the latent sites and
    to check that their shapes do not depend on the number of records.

    Args:
        model: the NumPyro model, called as ``model(**data, **model_kwargs)``.
        data: record arrays by name, sharing their leading (record) dimension (see :func:`validate_data`).
        model_kwargs: the model's other keyword arguments (not data).
        on_device: put the data on the default device (``False``: keep NumPy arrays, for records that
            will be split over several devices).

    Attributes:
        dim: the length of the flat unconstrained position.
        data_size: the number of records ``m``.
        data: the validated data (device arrays, or NumPy arrays with ``on_device=False``).

    Raises:
        ModelError: a discrete latent site, a ``param`` site, a latent site inside the record plate, no
            latent or no observed site, or a model that fails when traced with one record.
        AssumptionError: malformed data (see :func:`validate_data`).
        DomainError: invalid data values (see :func:`validate_data`).

    Examples:
        The mean of a Normal with unit variance and a N(0, 1) prior: ``K(mu) = mu^2/2 + log(2 pi)/2``,
        ``l_i(mu) = (y_i - mu)^2/2 + log(2 pi)/2``.

        >>> import numpy as np, jax.numpy as jnp
        >>> import numpyro, numpyro.distributions as dist
        >>> def normal_mean(y):
        ...     mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
        ...     with numpyro.plate("records", y.shape[0]):
        ...         numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)
        >>> pot = ModelPotential(normal_mean, {"y": np.array([1.0, 2.0, 3.0])})
        >>> pot.dim, pot.data_size
        (1, 3)
        >>> round(float(pot.potential(jnp.zeros(1))), 4)       # 4 log(2 pi)/2 + (1 + 4 + 9)/2
        10.6758
    """

    def __init__(self, model: Callable, data: Mapping[str, Any], model_kwargs: Mapping[str, Any] | None = None,
                 on_device: bool = True):
        from numpyro.distributions.transforms import biject_to

        self.model = model
        self._fast = _fast_log_probs()
        self.model_kwargs = dict(model_kwargs or {})
        host, self.data_size = validate_data(data, model, self.model_kwargs)
        one = {k: v[:1] for k, v in host.items()}
        two = {k: v[np.arange(2) % self.data_size] for k, v in host.items()}
        # device arrays; a 64-byte-aligned host array is used in place (no copy: may_alias), otherwise copied
        # once.  Do not modify the data arrays after building a sampler: they may be shared with the device.
        # on_device=False keeps NumPy arrays (records that will be split over several devices).
        self.data = {k: jax.device_put(v, may_alias=True) for k, v in host.items()} if on_device else host
        del host
        try:
            tr1 = _trace(model, one, self.model_kwargs, abstract=True)
            tr2 = _trace(model, two, self.model_kwargs, abstract=True)
        except AssumptionError:
            raise
        except Exception as exc:  # noqa: BLE001 - report the model's own error in one line
            raise ModelError(f"model {getattr(model, '__name__', model)!r} failed when traced with one record "
                             f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); check its "
                             f"signature model(**data, **model_kwargs)") from None
        sites = []
        offset = 0
        num_observed = 0
        for name, site in tr1.items():
            if site["type"] == "param":
                raise ModelError(f"site '{name}' is a numpyro.param; the samplers need every unknown to be a "
                                 f"numpyro.sample site with a prior")
            if site["type"] != "sample":
                continue
            if site["is_observed"]:
                num_observed += 1
                continue
            fn = site["fn"]
            if getattr(fn.support, "is_discrete", False):
                raise ModelError(f"latent site '{name}' is discrete (support {fn.support}); ULA/SGLD need "
                                 f"continuous latent sites: marginalise it out or make it observed")
            shape = tuple(jnp.shape(site["value"]))
            other = tr2.get(name)
            if other is None or tuple(jnp.shape(other["value"])) != shape:
                raise ModelError(f"latent site '{name}' has a shape that depends on the number of records "
                                 f"({shape} with 1 record); per-record latent variables are not supported by ULA/SGLD")
            t = biject_to(fn.support)
            ushape = tuple(t.inverse_shape(shape))
            size = int(np.prod(ushape, dtype=int)) if ushape else 1
            sites.append(_Site(name, shape, ushape, size, offset))
            offset += size
        if not sites:
            raise ModelError("the model has no latent sample site; there is nothing to sample")
        if num_observed == 0:
            raise ModelError("the model has no observed site (obs=...); the data do not enter the likelihood")
        self.sites: tuple[_Site, ...] = tuple(sites)
        self.dim = offset
        # NumPy zeros: a template for tracing (jnp.zeros would be one small program per array to compile)
        self._template = {k: np.zeros((1,) + v.shape[1:], v.dtype) for k, v in self.data.items()}

    # -- flat position <-> site values ----------------------------------------
    def _split(self, theta):
        return {s.name: jnp.reshape(theta[s.offset:s.offset + s.size], s.unconstrained_shape) for s in self.sites}

    def _reparam(self, theta):
        """substitute_fn: constrained value of each latent site, and log|det J| factors."""
        from numpyro.distributions.transforms import biject_to
        from numpyro.distributions.util import sum_rightmost
        import numpyro

        params = self._split(theta)

        def fn(site):
            name = site["name"]
            if name not in params or site["type"] != "sample" or site["is_observed"]:
                return None
            u = params[name]
            t = biject_to(site["fn"].support)
            value = t(u)
            log_det = t.log_abs_det_jacobian(u, value)
            log_det = sum_rightmost(log_det, jnp.ndim(log_det) - jnp.ndim(value) + len(site["fn"].event_shape))
            numpyro.factor(f"_{name}_log_det", log_det)
            return value

        return fn

    def unflatten(self, theta) -> dict[str, jax.Array]:
        """Constrained site values of a flat position (works on ``(..., dim)`` arrays).

        Args:
            theta: flat unconstrained positions, of shape ``(..., dim)``.

        Returns:
            a dict of site name to constrained values of shape ``(...) + site shape``.
        """
        from numpyro.distributions.transforms import biject_to

        theta = jnp.asarray(theta)
        lead = theta.shape[:-1]
        out = {}
        flat = theta.reshape((-1, self.dim))

        def one(th):
            tr = _trace(self.model, self._template, self.model_kwargs, params=self._reparam(th))
            return {s.name: tr[s.name]["value"] for s in self.sites}

        if getattr(self, "_unflatten_jit", None) is None:
            self._unflatten_jit = jax.jit(jax.vmap(one))
        vals = self._unflatten_jit(flat)
        for s in self.sites:
            out[s.name] = vals[s.name].reshape(lead + s.shape)
        del biject_to
        return out

    # -- potentials -------------------------------------------------------------
    def _log_parts(self, theta, data):
        """(log prior + log|det J|, sum of observed log-likelihoods) at ``theta`` with ``data``.

        The model is traced at HIGHEST matmul precision: every product in the potential and its
        gradient is a full float32 product on every backend (JAX's GPU default is TF32, whose 10-bit
        mantissa made gradient checks and the GLM/general agreement depend on the device)."""
        with jax.default_matmul_precision("highest"):
            tr = _trace(self.model, data, self.model_kwargs, params=self._reparam(theta))
            log_dets = {f"_{s.name}_log_det" for s in self.sites}
            prior = 0.0
            lik = 0.0
            for name, site in tr.items():
                if site["type"] != "sample":
                    continue
                fast = self._fast.get(type(site["fn"])) if site["is_observed"] else None
                lp = fast(site["fn"], site["value"]) if fast is not None else site["fn"].log_prob(site["value"])
                if site.get("scale") is not None:
                    lp = site["scale"] * lp
                if site["is_observed"] and name not in log_dets:
                    lik = lik + jnp.sum(lp)
                else:  # latent sites and the log-det factors (observed "_x_log_det" factor sites)
                    prior = prior + jnp.sum(lp)
        return prior, lik

    def prior_potential(self, theta):
        """``K(theta) = -log prior(T theta) - log|det J_T(theta)|`` (data independent: uses a zero template record).

        Args:
            theta: a flat unconstrained position ``(dim,)``.

        Returns:
            the scalar ``K(theta)``.
        """
        prior, _ = self._log_parts(theta, self._template)
        return -prior

    def potential(self, theta, data=None, likelihood_scale=1.0):
        """``K(theta) + likelihood_scale * sum_{records in data} l_i(theta)``; the full data by default.

        Args:
            theta: a flat unconstrained position ``(dim,)``.
            data: record arrays (a batch of records); ``None``: the potential's own data.
            likelihood_scale: the factor of the likelihood part (``m / s`` for a minibatch of ``s`` records).

        Returns:
            the scalar potential.
        """
        prior, lik = self._log_parts(theta, self.data if data is None else data)
        return -prior - likelihood_scale * lik

    def record_loss(self, theta, record):
        """``l_i(theta) = -log p(d_i | T theta)`` for one record.

        Args:
            theta: a flat unconstrained position ``(dim,)``.
            record: one record: a dict of arrays without the record axis.

        Returns:
            the scalar loss of the record.
        """
        batch = {k: jnp.asarray(v)[None] for k, v in record.items()}
        _, lik = self._log_parts(theta, batch)
        return -lik

    def init_prior(self, key) -> jax.Array:
        """A flat unconstrained draw from the prior (data independent).

        Args:
            key: a JAX PRNG key (or an int seed), independent of any sampling key.

        Returns:
            a ``(dim,)`` position.
        """
        from numpyro.distributions.transforms import biject_to

        tr = _trace(self.model, self._template, self.model_kwargs, key=key)
        parts = []
        for s in self.sites:
            site = tr[s.name]
            u = biject_to(site["fn"].support).inv(site["value"])
            parts.append(jnp.reshape(u, (-1,)))
        return jnp.concatenate(parts)

    def check_decomposition(self, theta=None, rtol: float = 1e-3) -> None:
        """Check that ``sum_i l_i`` equals the full-data likelihood on the first and the last (up to) 64 records.

        Checked at theta = 0 and at two fixed pseudo-random thetas: at theta = 0 a GLM's logits vanish
        and a coupling between records (e.g. features centred with the data's mean) would go unseen.

        Args:
            theta: check at this position only (``None``: the three positions above).
            rtol: relative tolerance of the comparison.

        Raises:
            ModelError: the likelihood is not the sum of the per-record likelihoods.
        """
        k = min(self.data_size, 64)
        # NumPy thetas and the slices taken inside the one program (eager jnp operations would each be a small
        # program to compile)
        thetas = [np.zeros(self.dim, jax.dtypes.canonicalize_dtype(np.float64))] if theta is None else \
            [np.asarray(theta)]
        if theta is None:
            rs = np.random.default_rng(12345)
            thetas += [rs.standard_normal(self.dim).astype(np.float32) for _ in range(2)]
        starts = [0] + ([self.data_size - k] if self.data_size > k else [])

        check, holder = _decomposition_program(self, k)
        on_host = any(not isinstance(v, jax.Array) for v in self.data.values())   # records to be split later
        holder["potential"] = self          # read while the program is traced (the first call for these shapes)
        try:
            sums = []
            for start in starts:
                # host arrays are sliced here (not the whole data set sent to the device for 64 records)
                data = {n: np.asarray(v[start:start + k]) for n, v in self.data.items()} if on_host else self.data
                for th in thetas:
                    sums.append(tuple(float(x) for x in check(th, data, np.int32(0 if on_host else start))))
        finally:
            holder.pop("potential", None)
        for full, total in sums:
            if not math.isfinite(full) or abs(full - total) > rtol * (1.0 + abs(full)):
                raise ModelError(f"the model's likelihood on {k} records ({full:.6g}) is not the sum of its "
                                 f"per-record likelihoods ({total:.6g}); put every observed site in a plate over "
                                 "the leading axis of the data arrays, and let each record's term depend on its "
                                 "own record only")


#: the decomposition checks compiled in this process, by model, keyword arguments, data shapes and records checked
_CHECKS: dict = {}
_CHECKS_MAX = 32


def _decomposition_program(potential: ModelPotential, k: int):
    """``(jitted parts(theta, data, start), holder)`` of :meth:`ModelPotential.check_decomposition`, one per model,
    keyword arguments (by identity, kept alive by the entry), data shapes and ``k``: a release builds a new potential
    and would otherwise compile the same check again (0.3 s).  The program reads the potential from ``holder``
    while it is traced, never the data (they are its argument), and the entry keeps no potential: only the model
    and its keyword arguments."""
    kwargs = potential.model_kwargs
    key = (id(potential.model), tuple(sorted((n, id(v)) for n, v in kwargs.items())),
           tuple(sorted((n, tuple(v.shape), str(v.dtype)) for n, v in potential.data.items())), int(k))
    entry = _CHECKS.get(key)
    if entry is None:
        holder: dict = {}

        def parts(th, data, start):
            pot = holder["potential"]
            d = {n: jax.lax.dynamic_slice_in_dim(v, start, k) for n, v in data.items()}
            return (pot.potential(th, d) - pot.prior_potential(th),
                    jnp.sum(jax.vmap(lambda r: pot.record_loss(th, r))(d)))
        entry = (jax.jit(parts), holder, (potential.model, tuple(kwargs.values())))
        if len(_CHECKS) >= _CHECKS_MAX:
            _CHECKS.pop(next(iter(_CHECKS)))
        _CHECKS[key] = entry
    return entry[0], entry[1]
