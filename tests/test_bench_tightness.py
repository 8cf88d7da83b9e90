"""`bayesdp bench tightness` targets (issue #6), with a small soundness sample in CI."""

import json

from bayesdp.cli import main


def test_tightness_targets(capsys):
    assert main(["bench", "tightness", "--random-draws", "60", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    s = out["summary"]
    assert s["final_best_over_exact_max"] <= 1.001
    assert s["path_best_over_exact_max"] <= 1.001
    assert s["nonconvex_best_over_004_supported_max"] <= 0.85
    assert s["soundness"]["violations"] == 0 and s["soundness"]["checked"] > 30
    for r in out["rows"]:
        assert r["final_best"] >= r["final_exact"] * (1 - 1e-9)
        assert r["path_best"] >= r["path_exact"] * (1 - 1e-9)
        assert r["nonconvex_best"] >= r["final_exact"] * (1 - 1e-9)
