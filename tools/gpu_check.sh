#!/usr/bin/env bash
# The device checks of one GPU lease (issue 24, item 5), run by the `device` tool from the repository's root:
#   carry .whl (the wheels the machine lacks: see docs/samplers.md, "GPU"), results under $OUT.
# 1. the fast tier, 2. `bayesdp bench release`, 3. `bayesdp bench samplers` (the rows the GPU targets name).
# Each step has its own time limit so that a slow one cannot take the others' time.
set -u
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || { echo "wheel install failed"; exit 1; }
export PYTHONPATH="$PWD:/tmp/site"
# the source tree as installed: bayesdp.models is the top-level models/ (an editable install maps it so; pip's
# build needs setuptools >= 77, which the machine may lack); on this machine's copy of the tree only
[ -e bayesdp/models ] || ln -s ../models bayesdp/models
# one process per test worker: JAX's default preallocation (75% of the GPU each) fails from the second worker
export XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv,noheader
python3 -c "import sys, jax, numpyro, numpy; print(sys.version.split()[0], 'jax', jax.__version__, 'numpyro', numpyro.__version__, 'numpy', numpy.__version__, jax.devices())"
t0=$(date +%s)
timeout "${TESTS_S:-270}" python3 -m pytest -q -n 12 -p no:cacheprovider --tb=short -rfE > /tmp/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^(FAILED|ERROR)|passed|failed" /tmp/tests.log | tail -40
tail -c 12000000 /tmp/tests.log > "$OUT/tests.log"
t0=$(date +%s)
timeout "${RELEASE_S:-80}" python3 -m bayesdp.cli bench release --json > "$OUT/release.json" 2> "$OUT/release.err"
echo "release rc=$? $(( $(date +%s) - t0 )) s"; tail -c 600 "$OUT/release.json"
t0=$(date +%s)
timeout "${SAMPLERS_S:-200}" python3 -m bayesdp.cli bench samplers --json --targets-only --no-memory --repeats 5 \
  > "$OUT/samplers.json" 2> "$OUT/samplers.err"; echo "samplers rc=$? $(( $(date +%s) - t0 )) s"
grep "bench samplers:" "$OUT/samplers.err"
python3 - "$OUT/samplers.json" <<'PY'
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except Exception as e:
    sys.exit(f"no samplers JSON: {e}")
for r in doc["rows"]:
    print(r["sampler"], r["data_size"], r["chains"], f"ours {r['steps_per_s']:.0f}", f"ref {r['reference_steps_per_s']:.0f}",
          f"ratio {r['ratio']:.3f}", r.get("ratio_median_of_pairs"), r.get("gradient_path", "")[:60])
    for k in ("layout_gradient_s", "reference_forms_steps_per_s", "reference_forms_highest_steps_per_s"):
        if r.get(k):
            print("  ", k, {a: round(b, 7 if k == "layout_gradient_s" else 0) for a, b in r[k].items()})
PY
