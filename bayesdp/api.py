"""The public Python API, in the words of NumPyro (kernels, an MCMC driver) and dp-accounting (events, an
accountant).  Everything a script needs is importable from :mod:`bayesdp` itself::

    import bayesdp
    domain = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
    report = bayesdp.certify(model, domain=domain, shapes=bayesdp.Shapes(n, {"X": (3,), "y": ()}),
                             kernel=bayesdp.ULA(step_size=1e-3), num_steps=2000)
    print(report)                          # a short table; report.table(full=True) for every constant
    plan = bayesdp.calibrate(model, domain=domain, data=bayesdp.Shapes(n), epsilon=1.0, delta=1e-5)
    mcmc = bayesdp.PrivateMCMC(plan)
    mcmc.run(X=X, y=y)                     # chain keys from the OS CSPRNG unless rng_key is given explicitly
    mcmc.print_summary()
    acct = bayesdp.PrivacyAccountant(budget=3.0, budget_delta=1e-5)
    result = bayesdp.release(mcmc, statistic="mean", sites=["w"], epsilon=1.0, accountant=acct)

A :class:`Plan` is one immutable, JSON-serialisable object holding the model reference, the domain, the
sampler configuration and its certificate; :func:`certify`, :func:`calibrate`, :class:`PrivateMCMC`,
:func:`release` and the command line (``--plan plan.json``) all take it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from .errors import AssumptionError
from .publish.engine import execute, open_accountant
from .publish.methods.base import ChainSource
from .publish.spec import ReleaseSpec
from .plan import ULA, Plan, _domain
from . import _arviz
from .analysis import Domain
from .analysis.inputs import counts_from_domain
from .analysis.records import validate_records
from .analysis.session import one_analysis
from .calibration import CalibrationOptions, calibrate
from .curves import ApproxDP
from .errors import BudgetError
from .errors import clip_advice
from .samplers import Sampler
from .samplers.keys import REPRODUCIBLE
from html import escape
import inspect
import warnings


__all__ = ["PrivateMCMC", "ChainCertificate", "release", "release_spec", "chain_settings", "chain_inference_data"]


# ---------------------------------------------------------------------------
# the MCMC driver


class PrivateMCMC:
    """Run a certified ULA/SGLD chain, NumPyro's ``MCMC`` style: ``PrivateMCMC(plan).run(X=X, y=y)``.

    Args:
        source: a :class:`Plan` (everything comes from it), or a kernel (:class:`ULA`/:class:`SGLD` with the
            model and the domain).
        num_steps: the number of steps (with a kernel).
        num_chains: the number of chains (with a kernel; default 1).
        release: ``final`` (one draw per chain, default) or ``path`` (with a kernel).
        delta: the delta of the certificate (with a kernel).
        init: the initial point: ``zeros`` (default) or an array in the unconstrained space (data independent).

    The chain keys come from the OS CSPRNG unless ``run`` is given ``rng_key`` explicitly (the outputs then say
    "reproducible seed: not private", ``mcmc.private`` is False).  ``print(mcmc)`` shows the certificate and
    the summary table, ``to_dataframe()`` returns it.  With a plan, the run's own certificate (computed with the
    data) must not exceed the plan's.

    Examples:
        >>> import bayesdp, numpy as np
        >>> from bayesdp.models import logistic
        >>> rng = np.random.default_rng(0)
        >>> X = rng.standard_normal((200, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> y = (rng.random(200) < 0.5).astype(float)
        >>> dom = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
        >>> mcmc = bayesdp.PrivateMCMC(bayesdp.ULA(logistic, domain=dom, step_size=1e-3), num_steps=200)
        >>> _ = mcmc.run(None, X, y)                  # NumPyro's run(rng_key, *args): keys from the OS CSPRNG
        >>> mcmc.get_samples()["w"].shape, mcmc.certificate["certified"], mcmc.private
        ((1, 3), True, True)
        >>> acct = bayesdp.PrivacyAccountant(budget=10.0, budget_delta=1e-5)
        >>> _ = acct.spend(mcmc.certificate)          # charged through the certificate's to_dp_event()
        >>> idata = mcmc.to_inference_data()          # instead of az.from_numpyro: the draws and the settings
    """

    def __init__(self, source: Plan | ULA, *, num_steps: int | None = None, num_chains: int | None = None,
                 release: str | None = None, delta: float | None = None, init: Any = "zeros",
                 progress_bar: bool = False):
        if isinstance(source, Plan):
            if source.sampler is None:
                raise AssumptionError(f"plan mechanism {source.mechanism!r} releases no chain; a PrivateMCMC needs a "
                                      "ula-* or sgld-* plan")
            self.plan = source
            self.kernel = source.kernel()
            self.num_steps = source.num_steps if num_steps is None else num_steps
            self.num_chains = source.num_chains if num_chains is None else num_chains
            self.release_kind = source.release if release is None else release
            self.delta = source.delta if delta is None else delta
        elif isinstance(source, ULA):
            self.plan = None
            self.kernel = source
            if num_steps is None:
                raise AssumptionError("num_steps = None: pass the number of steps with a kernel")
            self.num_steps, self.num_chains = num_steps, 1 if num_chains is None else num_chains
            self.release_kind = "final" if release is None else release
            self.delta = 1e-5 if delta is None else delta
        else:
            raise AssumptionError(f"PrivateMCMC needs a Plan or a kernel (ULA/SGLD), not {type(source).__name__}")
        if self.kernel.model is None or self.kernel.domain is None:
            raise AssumptionError("the kernel needs the model and the domain: ULA(model, domain=..., step_size=...)")
        if self.kernel.step_size is None:
            raise AssumptionError("step_size = None: give the kernel a step size, or use bayesdp.calibrate")
        self.init = init
        self.progress_bar = progress_bar
        self._sampler = None

    def run(self, rng_key=None, *args: Any, clip_to_domain: bool = False, **kwargs: Any) -> "PrivateMCMC":
        """Run on the data, NumPyro's ``MCMC.run(rng_key, *args, **kwargs)``: positional arguments are the
        model's arguments in order (``mcmc.run(None, X, y)``), keywords by name (``mcmc.run(X=X, y=y)``).

        Args:
            rng_key: ``None`` (default: chain keys from the OS CSPRNG, the run is private), or a JAX PRNG key
                or int seed: the draws are then reproducible by anyone who knows it, the run is marked not
                private (``mcmc.private`` is False; a persistent ledger refuses to charge it).
            *args: the model's data arguments, in the order of its signature.
            clip_to_domain: clip the records into the domain first (:meth:`Domain.clip`) instead of refusing
                records outside it.
            **kwargs: the model's data arguments by name.

        Returns:
            the driver itself (``get_samples()``, ``certificate``, ``print(mcmc)``).

        Raises:
            AssumptionError: no data, an argument given twice or not the model's, records outside the
                domain (without ``clip_to_domain``), or a run certified above the plan's epsilon.
        """

        k = self.kernel
        data = self._data_arguments(args, kwargs)
        dom = _domain(k.domain)
        if clip_to_domain:
            data = dom.clip({n: np.asarray(v) for n, v in data.items()})
        kw = counts_from_domain(k.model, dom if isinstance(dom, Domain) else None, dict(k.model_kwargs or {}))
        with clip_advice(", or clip to the domain: mcmc.run(..., clip_to_domain=True) or Domain.clip(data)"):
            smp = Sampler(k.model, data, sampler=k.sampler, step_size=k.step_size, num_steps=self.num_steps,
                          inverse_temperature=k.inverse_temperature, batch_size=k.batch_size, clip_norm=k.clip_norm,
                          num_chains=self.num_chains, release=self.release_kind, init=self.init, domain=dom,
                          delta=self.delta, model_kwargs=kw, progress_bar=self.progress_bar)
        if self.plan is not None:
            eps = smp.certificate.get("epsilon")
            if smp.potential.data_size != self.plan.data_size:
                raise AssumptionError(f"the data have {smp.potential.data_size} records but the plan was certified "
                                      f"for {self.plan.data_size}; calibrate a plan for this data size")
            if eps is None or eps > self.plan.epsilon * (1 + 1e-9):
                raise AssumptionError(f"this run's certificate (epsilon = {eps}) exceeds the plan's "
                                      f"({self.plan.epsilon:.6g}); the data or the domain differ from the plan's")
        smp.run(rng_key)
        self._sampler = smp
        return self

    def _data_arguments(self, args: tuple, kwargs: dict) -> dict:
        """``{name: array}`` from NumPyro-style positional and keyword data arguments."""

        model = self.kernel.model
        data = dict(kwargs)
        if args:
            fixed = set(self.kernel.model_kwargs or {})
            try:
                params = [p.name for p in inspect.signature(model).parameters.values()
                          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in fixed]
            except (TypeError, ValueError):
                params = []
            if len(args) > len(params):
                raise AssumptionError(f"run got {len(args)} positional data argument(s) but the model takes "
                                      f"{len(params)} ({', '.join(params) or 'none by position'}); pass them by "
                                      "name, e.g. mcmc.run(X=X, y=y)")
            for name, value in zip(params, args):
                if name in data:
                    raise AssumptionError(f"run got the model argument {name!r} twice (by position and by name); "
                                          "pass it once")
                data[name] = value
        if not data:
            raise AssumptionError("no data: pass the model's data arguments, e.g. mcmc.run(None, X, y) or "
                                  "mcmc.run(X=X, y=y)")
        return data

    def _require(self):
        if self._sampler is None:
            raise AssumptionError("the chain has not run: call .run(rng_key, *data) first")
        return self._sampler

    @property
    def certificate(self) -> "ChainCertificate":
        """The run's certificate (epsilon at delta, the route, the composition over chains): a read-only
        mapping that an accountant charges (``accountant.spend(mcmc.certificate)``)."""
        smp = self._require()
        return ChainCertificate(smp.certificate, private=self.private)

    @property
    def private(self) -> bool:
        """Whether the released draws are private: the chain keys came from the OS CSPRNG (False after
        ``run`` with an explicit ``rng_key``: anyone who knows the key can reproduce the draws)."""

        return self._require().key_source != REPRODUCIBLE

    def to_dp_event(self):
        """The privacy cost of publishing the draws, for an accountant (see :meth:`ChainCertificate.to_dp_event`).

        Returns:
            a dp-accounting ``GaussianDpEvent`` (GDP certificate) or a :class:`bayesdp.ApproxDP`.

        Raises:
            BudgetError: the run is not certified.
        """
        return self.certificate.to_dp_event()

    @property
    def dp_event(self) -> dict:
        """The certificate's event as the accountant's dict (:attr:`ChainCertificate.dp_event`):
        ``accountant.spend(mcmc)`` charges the published draws."""
        return self.certificate.dp_event

    @property
    def sampler(self):
        """The underlying :class:`bayesdp.samplers.Sampler` (after :meth:`run`)."""
        return self._require()

    def get_samples(self, group_by_chain: bool = False) -> dict:
        """The released draws per site, in the constrained space (NumPyro's ``MCMC.get_samples``).

        Args:
            group_by_chain: keep the chain axis.

        Returns:
            ``{site: array}``.
        """
        return self._require().get_samples(group_by_chain=group_by_chain)

    def print_summary(self, prob: float = 0.9) -> str:
        """ArviZ summary of the released draws with the certificate; printed and returned.

        Args:
            prob: the probability mass of the HDI.

        Returns:
            the printed text.
        """
        return self._require().print_summary(prob)

    def settings(self) -> dict:
        """The chain's public settings: sampler, step size, steps, chains, inverse temperature, batch size,
        clipping, release, the number of records the certificate is for, and the certificate's epsilon and delta.

        Returns:
            a JSON-ready dict.
        """
        return chain_settings(self._require())

    def to_inference_data(self):
        """ArviZ data of what the certificate covers: the released draws (group ``posterior``), with the
        settings and the certificate in its attributes; never the data, per-record log-likelihoods or
        potential energies.  The one-line conversion (``az.from_numpyro`` does not apply: this is not a
        NumPyro ``MCMC``)::

            idata = mcmc.to_inference_data()

        Returns:
            ``InferenceData`` (ArviZ 0.x) or ``DataTree`` (1.x); ``posterior.attrs`` holds
            ``bayesdp_certificate`` (JSON), ``bayesdp_settings`` (JSON) and ``bayesdp_private``.
        """
        return chain_inference_data(self._require())

    def to_dataframe(self, prob: float = 0.9):
        """The ArviZ summary of the released draws (mean, sd, HDI, ESS, R-hat) as a pandas DataFrame.

        Args:
            prob: the probability mass of the HDI.

        Returns:
            the DataFrame, one row per coordinate.
        """
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")    # ESS and R-hat of a single draw per chain
            return _arviz.summary(self.to_inference_data(), prob)

    def _head(self) -> str:
        k = self.kernel
        head = (f"PrivateMCMC: {k.sampler.upper()} {self.release_kind} release, {self.num_chains} chain(s) x "
                f"{self.num_steps} steps, step size {k.step_size:g}")
        if self._sampler is None:
            return head + " (not run: call .run(rng_key, *data))"
        cert = self._sampler.certificate
        if cert.get("certified"):
            head += (f"\ncertified: epsilon = {cert['epsilon']:.6g} at delta = {cert['delta']:g} "
                     f"({', '.join(cert['sources'])})")
        else:
            head += "\nNOT CERTIFIED: " + str(cert.get("reason"))
        if not self.private:
            head += "\nchain keys: reproducible seed: not private (omit rng_key for OS CSPRNG keys)"
        return head

    def __str__(self) -> str:
        if self._sampler is None:
            return self._head()
        return self._head() + "\n" + self.to_dataframe().to_string()

    def _repr_html_(self) -> str:
        head = "".join(f"<p>{escape(line)}</p>" for line in self._head().splitlines())
        return head + ("" if self._sampler is None else self.to_dataframe().to_html())


def chain_settings(sampler) -> dict:
    """The public settings of a run :class:`bayesdp.samplers.Sampler` (what :meth:`PrivateMCMC.settings` and
    ``bayesdp sample --out`` record): sampler, step size, steps, chains, inverse temperature, batch size,
    clipping, release, the number of records, the certificate's mechanism, epsilon and delta, and whether the
    chain keys were private.

    Args:
        sampler: a sampler that has run.

    Returns:
        a JSON-ready dict.

    Examples:
        >>> import bayesdp, numpy as np
        >>> X = np.eye(3)[[0, 1, 2, 0]] * 0.9; y = np.array([1.0, 0.0, 1.0, 0.0])
        >>> dom = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
        >>> mcmc = bayesdp.PrivateMCMC(bayesdp.ULA("logistic", domain=dom, step_size=1e-3), num_steps=20).run(0, X, y)
        >>> s = chain_settings(mcmc.sampler); s["num_steps"], s["data_size"], s["private"]
        (20, 4, False)
    """

    c = sampler.config
    cert = sampler.certificate
    return {"sampler": c.sampler, "step_size": c.step_size, "num_steps": c.num_steps, "num_chains": c.num_chains,
            "inverse_temperature": c.inverse_temperature, "batch_size": c.batch_size, "clip_norm": c.clip_norm,
            "release": c.release, "thinning": c.thinning, "data_size": c.data_size,
            "mechanism": cert.get("mechanism"), "epsilon": cert.get("epsilon"), "delta": cert.get("delta"),
            "private": sampler.key_source != REPRODUCIBLE}


def chain_inference_data(sampler):
    """ArviZ data of a run sampler: the released draws only (group ``posterior``), the certificate and the
    settings (:func:`chain_settings`) in ``posterior.attrs``; what ``PrivateMCMC.to_inference_data()`` and
    ``bayesdp sample --out`` write.

    Args:
        sampler: a sampler that has run.

    Returns:
        ``InferenceData`` (ArviZ 0.x) or ``DataTree`` (1.x).

    Examples:
        >>> import bayesdp, json, numpy as np
        >>> X = np.eye(3)[[0, 1, 2, 0]] * 0.9; y = np.array([1.0, 0.0, 1.0, 0.0])
        >>> dom = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
        >>> mcmc = bayesdp.PrivateMCMC(bayesdp.ULA("logistic", domain=dom, step_size=1e-3), num_steps=20)
        >>> idata = chain_inference_data(mcmc.run(None, X, y).sampler)
        >>> json.loads(idata["posterior"].attrs["bayesdp_settings"])["step_size"]
        0.001
    """
    settings = chain_settings(sampler)
    attrs = {"bayesdp_certificate": sampler.certificate_json(), "bayesdp_certified": int(sampler.certified),
             "bayesdp_release": sampler.config.release, "bayesdp_sampler": sampler.config.sampler,
             "bayesdp_chain_keys": sampler.key_source, "bayesdp_private": int(settings["private"]),
             "bayesdp_settings": json.dumps(settings, allow_nan=False, default=str)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _arviz.from_dict({"posterior": sampler.get_samples(group_by_chain=True)}, attrs={"posterior": attrs})


class ChainCertificate(Mapping):
    """A run's certificate: the read-only mapping of :class:`bayesdp.samplers.Sampler`'s certificate
    (``certified``, ``epsilon``, ``delta``, ``gdp_mu``, ``sources``, ...) that accountants charge
    through :meth:`to_dp_event`; ``private`` says whether the chain keys came from the OS CSPRNG.

    Args:
        certificate: the certificate dict.
        private: False when the run had an explicit key.

    Examples:
        >>> cert = ChainCertificate({"certified": True, "epsilon": 1.2, "delta": 1e-5, "gdp_mu": 0.25},
        ...                         private=True)
        >>> cert["epsilon"], type(cert.to_dp_event()).__name__, cert.to_dp_event().noise_multiplier
        (1.2, 'GaussianDpEvent', 4.0)
    """

    def __init__(self, certificate: Mapping[str, Any], private: bool = True):
        self._cert = dict(certificate)
        self.private = bool(private)

    def __getitem__(self, key):
        return self._cert[key]

    def __iter__(self):
        return iter(self._cert)

    def __len__(self) -> int:
        return len(self._cert)

    def __repr__(self) -> str:
        return f"ChainCertificate({self._cert!r}, private={self.private})"

    def to_dict(self) -> dict:
        """The certificate as a JSON-ready dict (a copy).

        Returns:
            the dict.
        """
        return dict(self._cert)

    def to_dp_event(self):
        """The event an accountant charges: a GDP certificate (``gdp_mu``) is dp-accounting's
        ``GaussianDpEvent(noise_multiplier = 1 / mu)`` (the mu-GDP trade-off curve is that of the Gaussian
        mechanism of sensitivity 1 and noise 1/mu: Dong-Roth-Su 2022, Def. 2.6), priced exactly by its PLD;
        otherwise the (epsilon, delta) pair the certificate states, :class:`bayesdp.ApproxDP`.

        Returns:
            the event.

        Raises:
            BudgetError: the run is not certified (nothing can be charged for it).
        """

        if not self._cert.get("certified") or self._cert.get("epsilon") is None:
            raise BudgetError("the run is not certified (" + str(self._cert.get("reason") or "no epsilon") + "); an "
                              "accountant cannot charge it: run a certified configuration")
        mu = self._cert.get("gdp_mu")
        if mu is not None and mu > 0:
            from dp_accounting import dp_event

            return dp_event.GaussianDpEvent(noise_multiplier=1.0 / float(mu))

        return ApproxDP(float(self._cert["epsilon"]), float(self._cert["delta"]))

    @property
    def dp_event(self) -> dict:
        """The event as the accountant's dict (``{"type": "gdp", "mu": ...}`` or ``{"type": "epsilon_delta",
        ...}``), for accountants that read ``dp_event``."""
        ev = self.to_dp_event()
        if hasattr(ev, "noise_multiplier"):
            return {"type": "gdp", "mu": float(self._cert["gdp_mu"])}
        return {"type": "epsilon_delta", "epsilon": repr(float(ev.eps0)), "delta": repr(float(ev.delta0))}


# ---------------------------------------------------------------------------
# release


def _chain_source(source: Any, data: Mapping[str, Any] | None):
    """The engine's :class:`~bayesdp.publish.methods.base.ChainSource` from what the user passed: a kernel, a
    plan, a driver that has not run (their settings honoured), or a driver that ran (its draws as they are)."""

    ran = isinstance(source, PrivateMCMC) and getattr(source, "_sampler", None) is not None
    if ran:
        smp = source._sampler
        c = smp.config
        kernel = source.kernel
        kern = {"sampler": c.sampler, "step_size": c.step_size, "inverse_temperature": c.inverse_temperature,
                "batch_size": c.batch_size, "clip_norm": c.clip_norm}
        dom = _domain(kernel.domain)
        draws = np.asarray(smp.get_unconstrained_samples(group_by_chain=True))
        return ChainSource(model=kernel.model, data={k: np.asarray(v) for k, v in smp.potential.data.items()},
                           domain=dom, model_kwargs=dict(smp.potential.model_kwargs or {}), kernel=kern, given="chain",
                           num_steps=c.num_steps, num_chains=c.num_chains, draws=draws,
                           run_kind=source.release_kind, thinning=c.thinning, key_label=smp.key_source)
    if isinstance(source, Plan):
        kernel, given, n, nc, plan = source.kernel(), "plan", source.num_steps, source.num_chains, source
    elif isinstance(source, PrivateMCMC):
        kernel, given, n, nc, plan = source.kernel, "driver", source.num_steps, source.num_chains, source.plan
    elif isinstance(source, ULA):
        kernel, given, n, nc, plan = source, "kernel", None, None, None
    else:
        raise AssumptionError(f"release needs a kernel (ULA/SGLD with the model and the domain), a Plan or a "
                              f"PrivateMCMC, not {type(source).__name__}")
    if kernel.model is None or kernel.domain is None:
        raise AssumptionError("the kernel needs the model and the domain: ULA(model, domain=..., step_size=...)")
    if data is None:
        raise AssumptionError(f"release({type(source).__name__}, ...) runs its chain(s) on the records: pass "
                              "data={...} (the model's data arguments by name)")
    dom = _domain(kernel.domain)
    kw = counts_from_domain(kernel.model, dom if isinstance(dom, Domain) else None, dict(kernel.model_kwargs or {}))
    data, m = validate_records(data, kernel.model, kw)
    if isinstance(source, Plan) and m != source.data_size:
        raise AssumptionError(f"the data have {m} records but the plan was made for {source.data_size}; calibrate a "
                              "plan for this data size")
    kern = {"sampler": kernel.sampler, "step_size": kernel.step_size,
            "inverse_temperature": kernel.inverse_temperature, "batch_size": kernel.batch_size,
            "clip_norm": kernel.clip_norm}

    def plan_final(epsilon: float, delta: float, max_steps: int):
        # public quantities only: the record count and shapes, the domain (never the data's values)
        return calibrate(kernel.model, domain=dom, epsilon=epsilon, delta=delta, mechanism="ula-final", data=data,
                         kernel=ULA(model_kwargs=kw), options=CalibrationOptions(max_steps=max_steps))

    return ChainSource(model=kernel.model, data=data, domain=dom, model_kwargs=kw, kernel=kern, given=given,
                       num_steps=n, num_chains=nc, plan=plan, plan_final=plan_final)


def release_spec(statistic: Any = "mean", *, epsilon: float | None = None, delta: float = 0.0,
                 method: str = "auto"):
    """The :class:`~bayesdp.publish.spec.ReleaseSpec` :func:`release` builds: ``statistic`` itself when it is a
    spec (then ``epsilon``, ``delta`` and ``method`` must be left to it), else a spec of these.

    Args:
        statistic: a statistic (:func:`~bayesdp.publish.spec.as_statistic`) or a ``ReleaseSpec``.
        epsilon: the release's epsilon (required unless ``statistic`` is a spec).
        delta: its delta.
        method: the method.

    Returns:
        The checked spec.

    Raises:
        AssumptionError: a bad parameter (one line), or options given twice.

    Examples:
        >>> release_spec("mean", epsilon=1.0, delta=1e-6).method
        'auto'
    """
    if isinstance(statistic, ReleaseSpec):
        if epsilon is not None or delta != 0.0 or method != "auto":
            raise AssumptionError("epsilon, delta and method are given by the ReleaseSpec: pass them there only")
        return statistic.check()
    if epsilon is None:
        raise AssumptionError("epsilon = None: pass the release's epsilon, e.g. epsilon=1.0")
    return ReleaseSpec(statistic, epsilon=epsilon, delta=delta, method=method).check()


def release(source: Any, statistic: Any = "mean", *, epsilon: float | None = None, delta: float = 0.0,
            data: Mapping[str, Any] | None = None, accountant: Any = None, method: str = "auto", rng_key=None):
    """Release a private posterior summary, charged to an accountant before its randomness is drawn.

    One engine (:mod:`bayesdp.publish.engine`) serves this function and ``bayesdp release``: the spec is checked
    first (nothing is charged on a bad parameter), the model analysed once, the method chosen by its predicted
    error from public inputs only, the budget reserved, the values drawn, the spend committed.

    Args:
        source: a kernel (:class:`ULA` with the model and the domain: the chains are run here with ``data``), a
            :class:`Plan` or a :class:`PrivateMCMC` that has not run (with ``data``; their settings are used as
            given), or a :class:`PrivateMCMC` that ran (its draws are released as they are, by the coupling
            method).
        statistic: ``"mean"``, ``"median"``, a statistic object (``Mean(sites=...)``, ``Quantiles(q, sites=...)``,
            ``Probability(threshold, width)``, ``Function(fn, lipschitz=...)``: each carries its options), a
            callable over one draw's samples dict, or a :class:`~bayesdp.publish.spec.ReleaseSpec` with every other
            option (noise, level, burn-in, steps, chains, chunks, ``allow_uninformative``).
        epsilon: the release's epsilon.
        delta: its delta (0: pure epsilon-DP with Laplace noise; > 0 allows Gaussian noise and the path and
            last-draw releases).
        data: the records (the model's data arguments by name), for a source whose chains run here.
        accountant: a :class:`PrivacyAccountant`, a :class:`Ledger` or the path of an existing ledger.
        method: ``"auto"`` (the smallest predicted error among the methods that apply to the source),
            ``"coupling"`` (an unpublished chain's estimate plus noise, 004 Proposition 3.7), ``"path"`` (a chain
            whose whole path is private, docs/release.md §8), ``"final"`` (a statistic of a private chain's final
            draw, §10) or ``"sample-aggregate"`` (§7; needs a range).
        rng_key: an explicit seed of the chains run here: reproducible; a path or last-draw release is then NOT
            private (its chain's steps are the noise) and says so (``result.private``); added noise always comes
            from the OS CSPRNG.  Default: OS CSPRNG keys.

    Before anything is charged the release is refused when its predicted error is no better than the prior's own
    spread, or (a chain, plan or driver given as is) 10x worse than a fresh release from the kernel
    (docs/release.md §12); ``ReleaseSpec(..., allow_uninformative=True)`` releases it anyway, with a warning in
    ``result.extra["warnings"]``.

    Returns:
        the :class:`~bayesdp.publish.result.ReleaseResult` (``print(result)``, ``result.to_dataframe()``,
        ``result.to_dict()``; each value with its predicted error).

    Raises:
        UninformativeError: predicted worse than the prior, or than a fresh release (nothing charged).
        BayesDPError: invalid input, no method applies, or over budget (nothing drawn, nothing charged).

    Examples:
        >>> import bayesdp, numpy as np
        >>> from bayesdp.publish.spec import Mean
        >>> rng = np.random.default_rng(1)
        >>> X = rng.standard_normal((300, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
        >>> y = (rng.random(300) < 0.5).astype(float)
        >>> dom = bayesdp.Domain(X=bayesdp.norm_bound(1.0), y=bayesdp.values(0, 1))
        >>> mcmc = bayesdp.PrivateMCMC(bayesdp.ULA("logistic", domain=dom, step_size=1e-3), num_steps=300)
        >>> _ = mcmc.run(X=X, y=y)
        >>> acct = bayesdp.PrivacyAccountant(budget=2.0)
        >>> bayesdp.release(mcmc, Mean(sites=["w"]), epsilon=1.0, accountant=acct)     # 300 records: noise >> prior
        Traceback (most recent call last):
        ...
        bayesdp.publish.prior.UninformativeError: the coupling release is predicted worse than knowing nothing: ...
        >>> spec = bayesdp.ReleaseSpec(Mean(sites=["w"]), epsilon=1.0, allow_uninformative=True)
        >>> res = bayesdp.release(mcmc, spec, accountant=acct)
        >>> res.names, acct.remaining()["epsilon"], res.extra["method"]["method"], len(res.extra["warnings"])
        (('w[0]', 'w[1]', 'w[2]'), 1.0, 'coupling', 1)

        (A median or other quantile needs many kept draws: this run keeps its last draw only.)
    """
    spec = release_spec(statistic, epsilon=epsilon, delta=delta, method=method)
    acct = open_accountant(accountant)
    with one_analysis():     # the source's validation shares the release's traces (analysis/session.py)
        return execute(_chain_source(source, data), spec, acct, rng_key)
