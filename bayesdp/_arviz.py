"""The ArviZ calls bayesdp makes, working with ArviZ 0.x (``InferenceData``) and 1.x (``xarray.DataTree``).

ArviZ 1.0 changed three signatures bayesdp uses (the rest, ``from_netcdf``, ``data[group].attrs``,
``data.posterior[var]``, is common to both; ``groups`` is a method of ``InferenceData`` but a property
of ``DataTree`` holding paths, hence :func:`group_names`):

* ``from_dict``: 0.x takes one keyword per group (``from_dict(posterior=...)``), 1.x one dict of groups
  (``from_dict({"posterior": ...})``);
* ``summary``: 0.x ``hdi_prob=``, 1.x ``ci_prob=`` with ``ci_kind="hdi"`` (the default interval of 1.x is
  the equal-tailed one; the columns are named ``hdi_5%``/``hdi_95%`` in 0.x, ``hdi90_lb``/``hdi90_ub`` in 1.x);
* NetCDF: 1.x no longer depends on a NetCDF library: bayesdp depends on ``h5netcdf`` and names it
  as the engine in both.
"""

from __future__ import annotations

from typing import Any, Mapping

NETCDF_ENGINE = "h5netcdf"


def major_version() -> int:
    """The installed ArviZ's major version (0 or 1)."""
    import arviz

    return int(str(arviz.__version__).split(".")[0])


def from_dict(groups: Mapping[str, Mapping[str, Any]], attrs: Mapping[str, Mapping[str, Any]] | None = None):
    """ArviZ data (``InferenceData`` or ``DataTree``) from ``{group: {variable: array (chain, draw, ...)}}``.

    Args:
        groups: e.g. ``{"posterior": {"w": draws}}``.
        attrs: per group, attributes to set, e.g. ``{"posterior": {"bayesdp_certified": 1}}``.

    Returns:
        what ``arviz.from_dict`` returns in the installed version, with ``attrs`` set.
    """
    import arviz as az

    groups = {g: dict(v) for g, v in groups.items()}
    data = az.from_dict(groups) if major_version() >= 1 else az.from_dict(**groups)
    for group, values in (attrs or {}).items():
        data[group].attrs.update(values)
    return data


def summary(data, prob: float = 0.9):
    """``arviz.summary`` with a ``prob`` highest-density interval, in either version (a pandas DataFrame)."""
    import arviz as az

    if major_version() >= 1:
        return az.summary(data, ci_prob=prob, ci_kind="hdi")
    return az.summary(data, hdi_prob=prob)


def group_names(data) -> list[str]:
    """The groups of ArviZ data (``InferenceData.groups()`` in 0.x; the DataTree's children in 1.x)."""
    if major_version() >= 1:
        return list(data.children)
    return list(data.groups())


def to_netcdf(data, path: str) -> None:
    """Write ArviZ data to NetCDF through h5netcdf (the engine both versions read back)."""
    data.to_netcdf(str(path), engine=NETCDF_ENGINE)


def from_netcdf(path: str):
    """Read what :func:`to_netcdf` wrote."""
    import arviz as az

    return az.from_netcdf(str(path))
