"""``bayesdp demo``: end to end on the quick setting, plots written, numbers against closed forms.

Independent values: the demo's potential (logistic, prior N(0, s^2 I), |x| <= 1) is 1/s^2-strongly
convex with replace-one gradient difference <= 2, so the ULA coupling distance at the default step
is 2 s^2; the reference records are ``(2p - 1)/sqrt(30) * (1, ..., 1)`` (norm |2p - 1|).  The default
statistic releases ``u = x_dir . w`` (``x_dir`` the unit vector of both records, Lipschitz 1: sensitivity
``2 s^2``) and derives ``sigmoid((2p - 1) u)``; ``profile-means`` releases the two posterior mean
probabilities, whose L1 sensitivity is ``(|2 p1 - 1| + |2 p2 - 1|)/4 * 2 s^2`` (Lipschitz |x|/4 each).
"""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from bayesdp.cli import main
from bayesdp.publish import demo
from bayesdp.publish.statistics import probability_at_profiles

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    res = demo.run_demo(quick=True, out_dir=str(out), seed=0)
    return res, out


def test_quick_demo_end_to_end(quick):      # (timings are measured by `bayesdp bench`, never by tests)
    res, out = quick
    for name in ("privacy_curve.png", "released_vs_nonprivate.png"):
        p = out / name
        assert p.read_bytes()[:8] == PNG_MAGIC and p.stat().st_size > 5000
    text = demo.format_demo(res)
    assert "NOT FOR RELEASE (non-private)" in text
    assert "mechanisms at delta" in text  # the analyzer's certificate table
    assert str(out) in text


def test_quick_demo_numbers(quick):
    res, _ = quick
    r = res.release
    s = demo.DEFAULT_PRIOR_SCALE
    # coupling distance 2 R s^2 with the certified norm R = 1 + 8 * 2^-24 (float32 rows at the bound, domain.py),
    # times the Lipschitz constant |x_dir| = 1 of u
    expected = 2 * s * s * (1 + 8 * 2.0 ** -24)
    assert r.names == ("u = x_dir . w",)
    assert r.proven_sensitivity == pytest.approx(expected, rel=1e-11)
    assert r.noise_scale == pytest.approx(r.sensitivity / r.epsilon, rel=1e-15)
    assert r.sensitivity - r.proven_sensitivity <= 2 * r.proven_sensitivity * 2.0 ** -39
    assert r.epsilon == 1.0 and r.delta == 0.0
    assert r.source.startswith("004 Proposition 3.7 + coupling")
    # the derived probabilities are sigmoid((2p - 1) u) of the released u, in [0, 1], intervals mapped
    u, (lo, hi) = r.items[0].value, r.items[0].interval
    for der, p in zip(res.derived, demo.PROFILE_FRACTIONS):
        c = 2 * p - 1
        assert der["value"] == pytest.approx(1 / (1 + math.exp(-c * u)), rel=1e-12)
        assert 0.0 < der["interval"][0] <= der["value"] <= der["interval"][1] < 1.0
        assert sorted(der["interval"]) == pytest.approx(sorted([1 / (1 + math.exp(-c * lo)),
                                                                1 / (1 + math.exp(-c * hi))]), rel=1e-12)
    # the non-private u is positive here (the reference records lie below the malignant ones: P < 1/2), and the
    # probabilities derived from it increase with tumour size
    npv = res.derived_nonprivate
    assert res.nonprivate[0] > 0 and 0 < npv[0] < npv[1] < 0.5


def test_noise_interval_of_the_probabilities_at_least_halved(quick):
    """Issue #17's demo target: the released probabilities lie in [0, 1] and their noise interval at eps = 1 is at
    most half of the previous release's (the posterior means of the two probabilities, Laplace scale
    (|2p1 - 1| + |2p2 - 1|)/4 * 2 s^2 = 0.0875: a 95% interval of width 2 (0.0875 log 20 + r))."""
    res, _ = quick
    s = demo.DEFAULT_PRIOR_SCALE
    p1, p2 = demo.PROFILE_FRACTIONS
    old_width = 2 * (abs(2 * p1 - 1) + abs(2 * p2 - 1)) / 4 * 2 * s * s * math.log(20)
    for der in res.derived:
        assert 0.0 <= der["value"] <= 1.0
    # The width of a derived interval depends on where the noisy u falls (sigmoid is flattest far from 0), so it is
    # compared where the mechanism centres it: at the non-private u (the chain is seeded here; the noise is not),
    # with the release's exact half-width in u (scale log 20 + grid rounding)
    r = res.release
    u0 = float(res.nonprivate[0])
    h = (r.items[0].interval[1] - r.items[0].interval[0]) / 2
    assert h == pytest.approx(r.noise_scale * math.log(20), rel=1e-6)
    for p in (p1, p2):
        c = 2 * p - 1
        width = abs(1 / (1 + math.exp(-c * (u0 + h))) - 1 / (1 + math.exp(-c * (u0 - h))))
        assert width <= old_width / 2


def test_profile_means_are_clamped(tmp_path):
    res = demo.run_demo(quick=True, statistic="profile-means", seed=0, plots=False)
    r = res.release
    s = demo.DEFAULT_PRIOR_SCALE
    p1, p2 = demo.PROFILE_FRACTIONS
    expected = (abs(2 * p1 - 1) + abs(2 * p2 - 1)) / 4 * 2 * s * s * (1 + 8 * 2.0 ** -24)
    assert r.proven_sensitivity == pytest.approx(expected, rel=1e-12)
    assert r.postprocessing["clamp"] == [0.0, 1.0]
    for it in r.items:
        assert 0.0 <= it.interval[0] <= it.value <= it.interval[1] <= 1.0
    npv = res.nonprivate
    assert np.all((0 < npv) & (npv < 1)) and npv[1] > npv[0]
    assert res.ledger_is_temporary
    assert res.ledger_summary["remaining_budget"]["epsilon"] == demo.DEFAULT_BUDGET - 1.0
    d = res.to_dict()
    assert d["release"]["chain"]["published"] is False
    assert "NOT FOR RELEASE" in d["not_for_release_nonprivate_estimate"]["warning"]


def test_reference_profiles_are_public_map():
    P, names = demo.reference_profiles((0.25, 0.4))
    assert P.shape == (2, 30) and len(names) == 2
    np.testing.assert_allclose(P[0], -0.5 / math.sqrt(30), rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(P, axis=1), [0.5, 0.2], rtol=1e-12)


def test_profile_statistic_lipschitz():
    """|f(z) - f(z')|_1 <= (sum_j |x_j|)/4 |z - z'|_2, nearly attained at logit 0 along x (one profile)."""
    rng = np.random.default_rng(1)
    P = rng.normal(size=(2, 5))
    st = probability_at_profiles(P, ["a", "b"])
    assert st.lipschitz == pytest.approx(np.linalg.norm(P, axis=1).sum() / 4, rel=1e-12)
    z = rng.normal(size=(2000, 5))
    dz = rng.normal(size=(2000, 5)) * 10 ** rng.uniform(-4, 1, size=(2000, 1))
    lhs = np.abs(st.fn(z) - st.fn(z + dz)).sum(axis=1)
    assert np.all(lhs <= st.lipschitz * np.linalg.norm(dz, axis=1) * (1 + 1e-9))
    one = probability_at_profiles(P[:1], ["a"])
    x = P[0]
    h = 1e-6 * x / np.linalg.norm(x)
    ratio = abs(one.fn(h[None])[0, 0] - one.fn(-h[None])[0, 0]) / (2e-6)
    assert ratio == pytest.approx(one.lipschitz, rel=1e-6)


def test_demo_cli_json_and_refusal(tmp_path, capsys):
    rc = main(["demo", "--quick", "--out-dir", str(tmp_path / "o"), "--json", "--seed", "3",
               "--ledger", str(tmp_path / "l.json"), "--budget", "1.5"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    d = json.loads(out)
    r = d["release"]
    # the budget 1.5 less the remaining 0.5 (below): the demo's default epsilon 1, pure (Laplace) at delta 0, and the
    # Laplace scale is sensitivity / epsilon (004 Proposition 3.7)
    assert (r["epsilon"], r["delta"], r["noise_mechanism"]) == (1.0, 0.0, "laplace")
    assert r["noise_scale"] == pytest.approx(r["sensitivity"] / r["epsilon"], rel=1e-12) and r["sensitivity"] > 0
    assert len(r["values"]) == len(r["names"]) >= 1 and r["source"].startswith("004 Proposition 3.7")
    assert d["ledger"]["temporary"] is False
    assert d["release"]["remaining_budget"]["epsilon"] == pytest.approx(0.5, abs=1e-15)
    assert set(d["plots"]) == {"privacy_curve", "released_vs_nonprivate"}
    before = (tmp_path / "l.json").read_bytes()
    rc = main(["demo", "--quick", "--out-dir", str(tmp_path / "o"), "--ledger", str(tmp_path / "l.json")])
    out, err = capsys.readouterr()
    assert rc == 2 and err.count("\n") == 1 and "exceeds the budget" in err
    assert (tmp_path / "l.json").read_bytes() == before
    for bad in ("0", "-1"):
        rc = main(["demo", "--quick", "--no-plots", "--epsilon", bad])
        out, err = capsys.readouterr()
        assert rc == 2 and err == f"error: --epsilon = {bad} must be > 0; pass a positive epsilon\n", err


@pytest.mark.slow
def test_bayesdp_demo_default_end_to_end(tmp_path):
    """Exactly ``bayesdp demo`` from a fresh directory (console script)."""
    exe = os.path.join(os.path.dirname(sys.executable), "bayesdp")
    cmd = [exe, "demo"] if os.path.exists(exe) else [sys.executable, "-m", "bayesdp.cli", "demo"]
    r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "bayesdp-demo" / "privacy_curve.png").exists()
    assert (tmp_path / "bayesdp-demo" / "released_vs_nonprivate.png").exists()
    assert "NOT FOR RELEASE (non-private)" in r.stdout
