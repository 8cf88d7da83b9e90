"""bayesdp._arviz: the same calls and results with ArviZ 0.x (InferenceData) and 1.x (DataTree).

CI runs this file with ArviZ 0.22 and 0.23; ArviZ 1.x needs Python 3.12 and was checked by hand
(ArviZ 1.3 installed with --ignore-requires-python on Python 3.11)."""

import numpy as np
import pytest

from bayesdp import _arviz


def _draws(chains=2, draws=200, seed=0):
    rng = np.random.default_rng(seed)
    return {"w": rng.standard_normal((chains, draws, 3)) + np.array([0.0, 5.0, -2.0]),
            "b": rng.standard_normal((chains, draws))}


def test_from_dict_attrs_and_netcdf_roundtrip(tmp_path):
    draws = _draws()
    data = _arviz.from_dict({"posterior": draws}, attrs={"posterior": {"bayesdp_certified": 1, "note": "x"}})
    assert data.posterior.attrs["bayesdp_certified"] == 1 and _arviz.group_names(data) == ["posterior"]
    assert data.posterior["w"].shape == (2, 200, 3) and sorted(data.posterior.data_vars) == ["b", "w"]
    path = tmp_path / "run.nc"
    _arviz.to_netcdf(data, path)
    back = _arviz.from_netcdf(path)
    assert _arviz.group_names(back) == ["posterior"] and back.posterior.attrs["note"] == "x"
    assert int(back.posterior.attrs["bayesdp_certified"]) == 1
    np.testing.assert_array_equal(back.posterior["w"].values, draws["w"])


def test_summary_means_and_hdi(tmp_path):
    draws = _draws(chains=4, draws=2000, seed=1)
    table = _arviz.summary(_arviz.from_dict({"posterior": draws}), prob=0.9)
    np.testing.assert_allclose(table.loc["w[1]", "mean"], draws["w"][..., 1].mean(), atol=0.01)
    hdi = [c for c in table.columns if c.startswith("hdi")]  # 0.x: hdi_5%, hdi_95%; 1.x: hdi90_lb, hdi90_ub
    assert len(hdi) == 2
    low, high = hdi
    # 90 % HDI of N(5, 1): 5 -+ 1.645 (Monte Carlo error of 8000 draws well below 0.1)
    assert abs(table.loc["w[1]", low] - (5 - 1.645)) < 0.1 and abs(table.loc["w[1]", high] - (5 + 1.645)) < 0.1


def test_version_detected():
    import arviz

    assert _arviz.major_version() == int(arviz.__version__.split(".")[0])
    with pytest.raises(KeyError, match="no_such_group"):
        _arviz.from_dict({"posterior": _draws()}, attrs={"no_such_group": {"a": 1}})
