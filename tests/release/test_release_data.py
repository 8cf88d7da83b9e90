"""Bundled Breast Cancer Wisconsin data and its public preprocessing."""

from importlib import resources

import numpy as np
import pytest

from bayesdp.errors import DomainError
from bayesdp.publish.data import PUBLIC_UPPER_BOUNDS, load_breast_cancer, scale_to_unit_ball


def test_shape_labels_and_attribution():
    X, y, names = load_breast_cancer()
    assert X.shape == (569, 30) and y.shape == (569,)
    assert int(y.sum()) == 212 and int((y == 0).sum()) == 357  # UCI: 212 malignant, 357 benign
    assert names[0] == "mean_radius" and names[20] == "worst_radius" and len(set(names)) == 30
    # documented ranges (UCI description): mean radius in [6.981, 28.11], worst area max 4254
    assert X[:, 0].min() == 6.981 and X[:, 0].max() == 28.11 and X[:, 23].max() == 4254.0
    att = resources.files("bayesdp").joinpath("data", "ATTRIBUTION.md").read_text()
    assert "CC BY 4.0" in att and "10.24432/C5DW2B" in att and "1 = malignant" in att


def test_first_record_is_malignant():
    # UCI record 842302 (first row): radius 17.99, texture 10.38, diagnosis M
    X, y, _ = load_breast_cancer()
    assert X[0, 0] == 17.99 and X[0, 1] == 10.38 and y[0] == 1


def test_public_scaling_unit_ball():
    X, _, _ = load_breast_cancer()
    Z = scale_to_unit_ball(X)
    assert np.all(np.linalg.norm(Z, axis=1) <= 1.0)
    # worst case of the fixed map: a record at all upper bounds has norm exactly 1
    corner = np.array([PUBLIC_UPPER_BOUNDS])
    assert np.linalg.norm(scale_to_unit_ball(corner)) == pytest.approx(1.0)
    assert np.linalg.norm(scale_to_unit_ball(np.zeros((1, 30)))) == pytest.approx(1.0)
    bad = X[:1].copy()
    bad[0, 3] = 1e5
    with pytest.raises(DomainError, match=r"X\[0, 3\]"):
        scale_to_unit_ball(bad)
