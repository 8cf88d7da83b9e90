"""Bundled dataset: Breast Cancer Wisconsin (Diagnostic), 569 records x 30 features, CC BY 4.0.

See ``bayesdp/data/ATTRIBUTION.md`` for the citation, licence and preprocessing.
``diagnosis`` is 1 for malignant (212 records) and 0 for benign (357 records).

Public preprocessing (:func:`scale_to_unit_ball`): every feature is a non-negative physical
measurement, so its public lower bound is 0; its public upper bound is the maximum printed in the
dataset's own documentation (UCI / scikit-learn description, "Summary Statistics"), plus half a
unit of the last printed digit, rounded up to two significant digits (:data:`PUBLIC_UPPER_BOUNDS`).
These bounds are NOT computed from the records by this code; note however that the documented
maxima were themselves computed from the data by the dataset's authors, so treating them as public
is an assumption of the demo (a deployment should take bounds from domain knowledge).
Standardising with the data's own mean / sd would leak and is not done.  Each feature is mapped to
``2 x / upper - 1`` in [-1, 1] and the row divided by ``sqrt(30)``: a fixed map, so every record has
Euclidean norm <= 1 whatever the data.
"""

from __future__ import annotations

import csv
import math
from importlib import resources

import numpy as np

from ..errors import DomainError

DATA_FILE = "breast_cancer.csv"
NUM_FEATURES = 30

#: Public per-feature upper bounds (lower bounds are 0); order = CSV column order.
PUBLIC_UPPER_BOUNDS: tuple[float, ...] = (
    29.0, 40.0, 190.0, 2600.0, 0.17, 0.35, 0.43, 0.21, 0.31, 0.098,
    2.9, 4.9, 22.0, 550.0, 0.032, 0.14, 0.4, 0.054, 0.08, 0.035,
    37.0, 50.0, 260.0, 4300.0, 0.23, 1.1, 1.3, 0.3, 0.67, 0.21,
)


def load_breast_cancer() -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """``(X, y, feature_names)``: X (569, 30) float64 raw features, y (569,) int 0/1 (1 = malignant).

    Returns:
        ``(X, y, feature_names)``.

    Raises:
        DomainError: the bundled file is damaged (reinstall).

    Examples:
        >>> X, y, names = load_breast_cancer()
        >>> X.shape, int(y.sum()), names[0]
        ((569, 30), 212, 'mean_radius')
    """
    ref = resources.files("bayesdp").joinpath("data", DATA_FILE)
    with ref.open("r", newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    if len(header) != NUM_FEATURES + 1 or header[-1] != "diagnosis":
        raise DomainError(f"bundled {DATA_FILE}: unexpected header; reinstall bayesdp")
    data = np.array([[float(v) for v in r] for r in body], dtype=np.float64)
    X = data[:, :NUM_FEATURES]
    y = data[:, NUM_FEATURES].astype(np.int64)
    return X, y, tuple(header[:NUM_FEATURES])


def scale_to_unit_ball(X: np.ndarray, upper: tuple[float, ...] = PUBLIC_UPPER_BOUNDS) -> np.ndarray:
    """Fixed public map ``(2 x / upper - 1) / sqrt(d)``: rows land in the closed unit ball.

    A value outside [0, upper] is refused (never clamped): the bound would not be public-valid.

    Args:
        X: (n, d) raw features.
        upper: the public upper bound of each feature (lower bounds are 0).

    Returns:
        (n, d) float64 rows of Euclidean norm <= 1.

    Raises:
        DomainError: X is not (n, len(upper)), or a value is outside [0, upper] or not finite.

    Examples:
        >>> import numpy as np
        >>> Z = scale_to_unit_ball(np.zeros((1, 2)), upper=(1.0, 4.0))      # (2 * 0 / u - 1) / sqrt(2)
        >>> np.round(Z, 6).tolist()
        [[-0.707107, -0.707107]]
    """
    X = np.asarray(X, dtype=np.float64)
    ub = np.asarray(upper, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != ub.size:
        raise DomainError(f"X.shape = {X.shape} must be (n, {ub.size}); pass the 30 raw features")
    bad = np.argwhere((X < 0) | (X > ub) | ~np.isfinite(X))
    if bad.size:
        i, j = bad[0]
        raise DomainError(f"X[{i}, {j}] = {X[i, j]:.6g} is outside the public domain [0, {ub[j]:.6g}] of feature {j}; "
                          "use bounds that hold for every possible record")
    return (2.0 * X / ub - 1.0) / math.sqrt(ub.size)
