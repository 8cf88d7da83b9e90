"""Bundled data for examples and tutorials.

[`breast_cancer`][bayesdp.datasets.breast_cancer] returns the Breast Cancer Wisconsin (Diagnostic) data (569
records, 30 features, CC BY 4.0; ``bayesdp/data/ATTRIBUTION.md``) already mapped into the unit ball by a fixed
public map (``bayesdp.publish.data.scale_to_unit_ball``: public per-feature bounds, never computed from the
records), with the public domain of one record that the map guarantees.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from .analysis.domain import Domain, norm_bound, values
from .publish.data import load_breast_cancer, scale_to_unit_ball


__all__ = ["Dataset", "breast_cancer"]


class Dataset(NamedTuple):
    """A data set ready for a model: ``data`` (model arguments), its public ``domain`` and feature names.

    Attributes:
        data: ``{argument: array}``, records along axis 0.
        domain: the public ``Domain`` of one record.
        feature_names: the names of the columns of ``X``.

    Examples:
        >>> import numpy as np
        >>> import bayesdp
        >>> ds = Dataset(data={"X": np.zeros((2, 1))}, domain=bayesdp.Domain(X=bayesdp.norm_bound(1.0)),
        ...              feature_names=("x0",))
        >>> ds.data["X"].shape, ds.feature_names
        ((2, 1), ('x0',))
    """

    data: dict
    domain: object
    feature_names: tuple


def breast_cancer() -> Dataset:
    """Breast Cancer Wisconsin (Diagnostic) for ``bayesdp.models.logistic``.

    Returns:
        ``Dataset(data={"X": (569, 30) float32 rows of norm <= 1, "y": (569,) float32 0/1 with 1 = malignant},
            domain=Domain(X=norm_bound(1), y=values(0, 1)), feature_names)``.

    Examples:
        >>> import bayesdp.datasets
        >>> ds = bayesdp.datasets.breast_cancer()
        >>> ds.data["X"].shape, int(ds.data["y"].sum()), ds.feature_names[0]
        ((569, 30), 212, 'mean_radius')
        >>> ds.domain.to_dict()
        {'X': {'norm': 1.0}, 'y': {'values': [0.0, 1.0]}}
    """

    X, y, names = load_breast_cancer()
    data = {"X": scale_to_unit_ball(X).astype(np.float32), "y": y.astype(np.float32)}
    return Dataset(data=data, domain=Domain(X=norm_bound(1.0), y=values(0, 1)), feature_names=tuple(names))
