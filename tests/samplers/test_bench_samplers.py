"""``bayesdp bench samplers``: the roofline arithmetic, and one quick run printing one JSON with every field."""

import json

import pytest

from bayesdp.bench import samplers as bench
from bayesdp.cli import main


def test_roofline_is_two_reads_of_the_design_per_step():
    # 40 MB design, 3 TB/s: one step reads 80 MB, so 37,500 steps/s; 18,750 steps/s is half of it
    roof, frac = bench._roofline(18_750.0, 40e6, 3e12)
    assert roof == pytest.approx(37_500.0) and frac == pytest.approx(0.5)


def test_copy_bandwidth_counts_read_and_write():
    bw = bench.copy_bandwidth(1 << 16, repeats=3)
    assert bw["array_bytes"] == 1 << 16 and bw["passes"] >= 2 and bw["bytes_per_s"] > 0


@pytest.mark.slow
def test_quick_bench_prints_one_json(capsys):
    assert main(["bench", "samplers", "--quick", "--repeats", "1", "--memory-size", "20000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["device"]["platform"] == "cpu" and out["bandwidth"][0]["bytes_per_s"] > 0
    for row in out["rows"]:
        assert row["steps_per_s"] > 0 and row["reference_steps_per_s"] > 0
        assert row["ratio"] == pytest.approx(row["steps_per_s"] / row["reference_steps_per_s"])
        if row["sampler"] == "ula":
            assert row["roofline_fraction"] > 0
    assert {(r["sampler"], r["aligned"]) for r in out["memory"]} == {("ula", True), ("ula", False), ("sgld", True),
                                                                     ("sgld", False)}
    assert all(r["peak_over_data"] > 0.5 for r in out["memory"])   # the data themselves are counted
