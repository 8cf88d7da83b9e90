import atexit
import os
import shutil
import signal
import sys
import tempfile

import pytest

# tests/exact.py holds independent reference values shared by several test modules.
sys.path.insert(0, os.path.dirname(__file__))

# Bytecode (docs/testing.md, "Bytecode"): each pytest worker imports every test module (pytest rewrites its asserts)
# and bayesdp; without Python's bytecode cache every worker compiles them all again, in every run (collection took
# 24 s of CPU per worker instead of 12).  So the suite writes the cache (`__pycache__/`, ignored by git) even where
# PYTHONDONTWRITEBYTECODE is set, as on machines that set it for everyone; BAYESDP_TEST_BYTECODE=0 honours it.
if os.environ.get("BAYESDP_TEST_BYTECODE", "1").strip().lower() not in ("0", "false", "no", "off"):
    sys.dont_write_bytecode = False

# The tests never write to the user's compilation cache (bayesdp/jax_cache.py): the CLI's cache is off in this
# process and in every subprocess it starts; tests/test_jax_cache.py turns it on in a tmp folder explicitly.
os.environ["BAYESDP_JAX_CACHE"] = "0"

# The suite's own compilation cache (docs/testing.md, "Compilation cache"): the suite compiles the same small
# programs again and again (closures made afresh in each test, every CLI subprocess, the caches dropped below to
# bound memory); JAX's persistent cache in one private temporary folder per pytest run, shared by this process
# and its subprocesses through JAX's own variables, turns those compilations into loads.  The folder is removed
# at exit; a JAX cache configured by whoever runs the tests wins; BAYESDP_TEST_JAX_CACHE=0 turns it off.
if os.environ.get("BAYESDP_TEST_JAX_CACHE", "1").strip().lower() not in ("0", "false", "no", "off") \
        and "JAX_COMPILATION_CACHE_DIR" not in os.environ and "jax" not in sys.modules:
    _SESSION_CACHE = tempfile.mkdtemp(prefix="bayesdp-tests-jax-")          # mode 0700
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _SESSION_CACHE
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
    atexit.register(shutil.rmtree, _SESSION_CACHE, True)


# Cheap compilation (docs/testing.md, "Cheap compilation"): the suite compiles thousands of programs and runs each
# for milliseconds, so XLA's LLVM back end runs its cheap passes only (what compilation costs, not what the program
# computes: floating point is not reassociated at any level).  This roughly halves the time of the tests that
# compile chains.  Set in XLA_FLAGS before JAX is imported, so that every CLI subprocess inherits it; flags that
# already name the level win; BAYESDP_TEST_FAST_COMPILE=0 compiles as a user's process does.
#
# The last flag compiles fused loops with XLA's older emitter (about 2.5x faster to compile; the fast tier went
# 5:20 -> 4:33 on 2 cores).  Unlike the others it changes a few results by some ulps (tanh, atan, exp in float64:
# their polynomial approximations differ), so two programs that compute the same quantity with different fusions
# may differ in the last bits.  A test that asserts bit-for-bit equality BETWEEN two compiled programs (streamed
# and in-device chains, path and final-draw programs) is marked `exact_codegen` and runs in a subprocess with
# XLA's default emitters, as a user's process compiles (pytest_pyfunc_call below).
EXACT_CODEGEN_FLAG = "--xla_cpu_use_fusion_emitters=false"
FAST_COMPILE_FLAGS = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"


def _xla_accepts(flag: str) -> bool:
    """Whether this jaxlib's XLA knows ``flag``: an unknown flag in XLA_FLAGS aborts every JAX process, and the
    older emitter's flag goes when XLA deletes that emitter (one JAX start in a subprocess, about 1 s)."""
    import subprocess

    env = dict(os.environ, XLA_FLAGS=flag, JAX_PLATFORMS="cpu")
    return subprocess.run([sys.executable, "-c", "import jax; jax.devices('cpu')"], env=env,
                          capture_output=True).returncode == 0


if os.environ.get("BAYESDP_TEST_FAST_COMPILE", "1").strip().lower() not in ("0", "false", "no", "off") \
        and "jax" not in sys.modules and "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    if _xla_accepts(EXACT_CODEGEN_FLAG):
        FAST_COMPILE_FLAGS += " " + EXACT_CODEGEN_FLAG
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + FAST_COMPILE_FLAGS).strip()


# Ctrl-C stops the run.  Code under test may swallow KeyboardInterrupt (`bayesdp.cli.main` turns it into exit
# status 130, as a command should, and many tests call it in-process): pytest then records one failed test and
# goes on.  The handler below remembers the interrupt, and the next test boundary ends the session.
_INTERRUPTED = []


def _on_sigint(signum, frame):
    _INTERRUPTED.append(signum)
    if len(_INTERRUPTED) > 1:    # a second Ctrl-C: out now, whatever runs
        os._exit(130)
    signal.default_int_handler(signum, frame)


def pytest_sessionstart(session):
    # under pytest-xdist the controller owns Ctrl-C: it stops its workers, which keep the default handler
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    yield                        # the test, its teardown included
    if _INTERRUPTED:
        pytest.exit("interrupted (Ctrl-C)", returncode=130)
    rss = _resident_bytes()
    if rss is not None and rss > _CLEAR_WITHIN_MODULE_BYTES and _worth_dropping(rss):   # a long module: not at its end
        _drop_jax_caches()


def _has_gpu() -> bool:
    try:
        import jax

        return any(d.platform == "gpu" for d in jax.devices())
    except Exception:  # noqa: BLE001 - no usable backend beyond the CPU
        return False


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (the default, pyproject.toml): one worker per usable core, at most 4 and at most one per GB of
    available memory (each worker holds its own JAX and compiled programs, about 1 GB at its peak)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        with open("/proc/meminfo") as f:
            avail = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError, IndexError):
        avail = 1 << 32
    return max(1, min(cores, 4, avail >> 30))


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: runs only where JAX sees a GPU (precision on accelerators); skipped "
                                       "elsewhere")
    config.addinivalue_line("markers", "exact_codegen: asserts bit-for-bit equality between two compiled programs; "
                                       "runs in a subprocess with XLA's default code generation (tests/conftest.py)")


def pytest_pyfunc_call(pyfuncitem):
    """An `exact_codegen` test in a process that compiles with the older loop emitter (FAST_COMPILE_FLAGS) runs
    again in a fresh pytest process without that flag, and passes or fails as it does there."""
    flags = os.environ.get("XLA_FLAGS", "").split()
    if pyfuncitem.get_closest_marker("exact_codegen") is None or EXACT_CODEGEN_FLAG not in flags:
        return None
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["XLA_FLAGS"] = " ".join(f for f in flags if f != EXACT_CODEGEN_FLAG)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "-m", "slow or not slow",
           pyfuncitem.nodeid]
    _drop_jax_caches()      # this worker waits on the subprocess: its compiled programs need not stay resident
    from _slots import heavy_subprocess

    with heavy_subprocess():    # one such process at a time across the workers (tests/_slots.py)
        done = subprocess.run(cmd, cwd=str(pyfuncitem.config.rootpath), env=env, capture_output=True, text=True)
    if done.returncode != 0 or " passed" not in done.stdout:
        pytest.fail(f"{pyfuncitem.nodeid}, run with XLA's default code generation (exit {done.returncode}):\n"
                    + (done.stdout + done.stderr)[-6000:], pytrace=False)
    return True


# Memory: a pytest process compiles thousands of small XLA programs; JAX keeps every compiled executable (and
# its tracing caches) alive for the life of the process (4.65 GB peak for the whole suite).  After a test module,
# when the process holds more than 1 GB, the caches are dropped (not after every module: the next modules would
# compile again what they share; docs/testing.md has the measured peaks).
# Under pytest-xdist the workers share the machine's memory: 1 GB in all, split between them (at least 384 MB each;
# the suite's compilation cache makes the recompilations after a drop cheap).
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
_CLEAR_ABOVE_BYTES = max((1 << 30) // _WORKERS, 384 << 20)
# ... and within a module, after any test, above 1.5 GB in all (at least 640 MB each): a long module's programs
# otherwise pile up until its end (1.35 GB in one worker, 2.16 GB for the tree, before this check).
_CLEAR_WITHIN_MODULE_BYTES = max((3 << 29) // _WORKERS, 640 << 20)


def _resident_bytes() -> int | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None          # not Linux: drop the caches after every module


@pytest.fixture(autouse=True)
def _jax_float64_mode_unchanged():
    """A test that turns JAX's float64 mode on (or off) must restore it: left changed, it alters the draws and
    dtypes of every later test in the worker, which then fail or pass by scheduling (seen in the slow tier)."""
    jax = sys.modules.get("jax")
    before = jax.config.read("jax_enable_x64") if jax is not None else None
    yield
    jax = sys.modules.get("jax")
    if jax is None:
        return
    after = jax.config.read("jax_enable_x64")
    if before is None:                     # jax imported by the test itself: the default is off
        before = False if after is True and "JAX_ENABLE_X64" not in os.environ else after
    if after != before:
        jax.config.update("jax_enable_x64", before)
        pytest.fail(f"the test left jax_enable_x64 = {after} (it was {before}): restore it (a fixture with yield)")


@pytest.fixture(autouse=True, scope="module")
def _drop_jax_caches_after_module():
    yield
    rss = _resident_bytes()
    if rss is None or (rss > _CLEAR_ABOVE_BYTES and _worth_dropping(rss)):
        _drop_jax_caches()


# What a drop leaves: a worker's memory after one creeps up to about 600 MB (imported modules, the tests' own
# module-level objects), above the 512 MB of two workers' threshold, and every module's end then dropped caches that
# held 1-40 MB, for 0.3-1.3 s of clearing and collection each (a third of the drops, measured on tests/analysis and
# tests/samplers).  A drop is made only when the process has grown by at least this much since the last one (32 MB:
# the drops that freed more than that stay; a skipped drop would have freed less than that).
_DROP_GROWTH_BYTES = 32 << 20
_AFTER_LAST_DROP = [0]


def _worth_dropping(rss: int) -> bool:
    return rss - _AFTER_LAST_DROP[0] >= _DROP_GROWTH_BYTES


def _drop_jax_caches() -> None:
    jax = sys.modules.get("jax")
    if jax is not None:
        jax.clear_caches()
        import gc

        gc.collect()
        _trim_heap()
        _AFTER_LAST_DROP[0] = _resident_bytes() or 0


def _trim_heap() -> None:
    """The freed executables otherwise stay in the process's resident memory (bayesdp.resources)."""
    from bayesdp.resources import return_freed_memory

    return_freed_memory()


# The slow tier (docs/testing.md): tests that took >= ~10 s each (`--durations`, 2 cores), moved out of the
# README's command so that it stays under 5 minutes.  Each entry names the fast test that keeps its kind of
# assertion in the fast tier.  An entry without "[...]" covers every parameter of the test.  Listed here rather
# than decorated in place, so that the tiers are read in one place (tests/test_tiers.py checks every entry names
# a collected test).  `python -m pytest -m slow` runs them (.ci/run does, once).
SLOW = {
    # three fresh processes, each a CLI release (15-20 s); the bench's option checks stay fast (its doctest)
    "tests/test_bench_release.py::test_breakdown_runs_the_default_release_in_three_processes":
        "test_docs_examples.py::test_docstring_examples",
    # two CLI releases in subprocesses (8 s): which modules a GDP path release imports; the light commands' probe stays
    "tests/test_imports.py::test_a_gdp_path_release_imports_neither_dp_accounting_nor_scipy_optimize":
        "test_imports.py::test_light_commands_import_no_heavy_module",
    # the full tier check collects every slow module in a subprocess (0.4 GB beside both workers: the fast tier's
    # memory peak); the fast tier parses the files for the test functions instead
    "tests/test_tiers.py::test_every_slow_entry_names_a_collected_test":
        "test_tiers.py::test_every_slow_entry_names_a_test_function",
    "tests/release/test_release_final.py::test_last_draw_release_carries_the_plans_warning_and_the_start_transient":
        "test_given_chain_refusal.py::test_a_driver_too_short_to_forget_its_start_carries_the_start_transient",
    # docstring examples and documentation pages that run chains: the other modules' and pages' stay fast
    "tests/test_docs_examples.py::test_docstring_examples[bayesdp.publish.final]": "other docstrings",
    "tests/test_docs_examples.py::test_docstring_examples[bayesdp.samplers.minibatch]": "other docstrings",
    "tests/test_docs_examples.py::test_docstring_examples[bayesdp.samplers.gradients]": "other docstrings",
    "tests/test_docs_examples.py::test_docstring_examples[bayesdp.samplers.glm]": "other docstrings",
    "tests/test_docs_examples.py::test_python_blocks_run[README.md]": "test_readme_examples.py",
    "tests/test_docs_examples.py::test_python_blocks_run[docs/tutorial.md]": "the other pages' blocks",
    "tests/test_docs_examples.py::test_python_blocks_run[docs/samplers.md]": "the other pages' blocks",
    "tests/test_docs_examples.py::test_python_blocks_run[docs/distributed.md]": "test_sharding.py (fast part)",
    "tests/test_readme_examples.py::test_public_api_example_scripts_run[sample_logistic.py-expect0]":
        "[release_logistic.py-expect1]",
    # bench constants' floored-scale rows (a search): the analyzer's own test of the joint bound stays fast
    "tests/test_bench_constants.py::test_floored_scale_rows_within_1_1x":
        "tests/analysis/test_families_floor.py::test_floored_scale_certifies_and_covers_the_brute_force_maximum",
    # audits: the ULA audits and the logistic SGLD path audit stay fast
    "tests/test_audit.py::test_sgld_audits_below_certificate": "test_reference_model_audits_...[logistic-sgld-path]",
    "tests/test_audit.py::test_reference_model_audits_stay_below_certificates[softmax-ula-path]": "[logistic-ula-path]",
    "tests/test_audit.py::test_reference_model_audits_stay_below_certificates[sparse_logistic-ula-path]":
        "[logistic-ula-path]",
    # samplers: the smallest point of each grid stays fast
    "tests/samplers/test_glm.py::test_sampler_glm_path_equals_general_path[logistic-3]": "[logistic-1]",
    "tests/samplers/test_glm.py::test_sampler_glm_path_equals_general_path[intercept_features-1]": "[logistic-1]",
    "tests/samplers/test_glm.py::test_sampler_glm_path_equals_general_path[intercept_features-3]": "[logistic-1]",
    "tests/samplers/test_glm.py::test_glm_gradient_equals_numpyro_gradient[1-intercept_features]": "[1-logistic]",
    "tests/samplers/test_glm.py::test_glm_gradient_equals_numpyro_gradient[3-intercept_features]": "[3-logistic]",
    "tests/samplers/test_glm.py::test_clipped_and_minibatch_runs_keep_the_general_path[kw1]": "[kw0]",
    "tests/samplers/test_glm.py::test_clipped_and_minibatch_runs_keep_the_general_path[kw2]": "[kw0]",
    "tests/samplers/test_glm.py::test_ula_vectorized_equals_sequential_with_glm_path":
        "test_driver.py::test_vectorized_equals_sequential_chains",
    "tests/samplers/test_glm.py::test_no_copy_above_max_copy_bytes_and_gpu_layout":
        "test_glm.py::test_choose_form_returns_a_form_and_is_cached",
    "tests/samplers/test_glm.py::test_feature_major_copy_in_blocks_is_exact":
        "test_glm.py::test_row_blocks_with_a_last_block_overlapping",
    "tests/samplers/test_driver.py::test_first_sgld_steps_are_the_documented_update[0.4]": "[None]",
    "tests/samplers/test_minibatch.py::test_parallel_floyd_equals_sequential_on_random_draws":
        "test_parallel_floyd_is_floyd_and_exactly_uniform_by_enumeration",
    "tests/samplers/test_minibatch.py::test_subsets_uniform_chi_square[6-3]": "[8-5]",
    "tests/samplers/test_minibatch.py::test_subsets_uniform_chi_square[7-2]": "[8-5]",
    # calibration's pruned search against the full grid: the small model's grid stays fast
    "tests/analysis/test_session_memo.py::test_the_pruned_search_picks_the_full_grids_pair[10000-10-1.0]":
        "[150-2-4.0]",
    # the final-draw program against the path program: one chain at one length and three chains stay fast
    "tests/samplers/test_dynamic_steps.py::test_final_draw_is_the_paths_last_draw[1-512]": "[1-513]",
    "tests/samplers/test_dynamic_steps.py::test_final_draw_is_the_paths_last_draw[1-1]": "[1-513]",
    "tests/samplers/test_minibatch.py::test_batch_indices_distinct_and_in_range":
        "test_parallel_floyd_is_floyd_and_exactly_uniform_by_enumeration",
    "tests/samplers/test_gradients.py::test_minibatch_estimators_use_the_drawn_indices":
        "test_driver.py::test_first_sgld_steps_are_the_documented_update[None]",
    "tests/samplers/test_streaming.py::test_streamed_chains_vectorised_sequential_and_thinned_match":
        "test_streaming.py::test_streamed_chain_gives_the_in_device_draws_and_batches_without_replacement",
    "tests/samplers/test_streaming.py::test_streamed_chain_over_two_blocks_with_tails":
        "test_streaming.py::test_streamed_chain_gives_the_in_device_draws_and_batches_without_replacement",
    "tests/samplers/test_sharding.py::test_sharded_runs_equal_unsharded_for_any_record_count":
        "the other test_sharding.py tests",
    "tests/samplers/test_distributed.py::test_two_processes_match_one_process": "none (two JAX processes)",
    # releases and the API: one of each kind stays fast
    "tests/release/test_error_interval.py::test_error_interval_covers_the_exact_posterior_mean_at_its_level":
        "test_path_release_items_carry_the_equivalent_noise_and_the_error_interval",
    "tests/release/test_error_interval.py::test_a_tempered_chain_s_quantiles_are_labelled_tempered":
        "test_tempered_labels_reach_the_table_and_the_json",
    "tests/release/test_error_interval.py::test_last_draw_error_interval_covers_the_exact_posterior_mean_at_its_level":
        "test_the_last_draw_refuses_quantiles_and_auto_goes_to_a_method_that_answers",
    "tests/release/test_error_interval.py::test_cli_prints_and_emits_the_error_interval_and_tempered_labels":
        "test_tempered_labels_reach_the_table_and_the_json",
    # 20 path releases on breast cancer and a NUTS reference (11 s): the read-off terms by hand stay fast
    "tests/release/test_interval_read_off.py::test_breast_cancer_error_interval_covers_the_posterior_mean":
        "test_read_off_terms_by_hand",
    "tests/release/test_release_final.py::test_cli_final_release_and_bad_input":
        "test_release_is_the_planned_chains_final_draw",
    "tests/release/test_release_final.py::test_api_auto_picks_the_tuned_path_even_for_a_prior_dominated_model":
        "test_release_is_the_planned_chains_final_draw",
    "tests/test_api.py::test_hundred_laplace_releases_compose_like_dp_accounting":
        "test_mixed_laplace_and_gaussian_equal_dp_accounting",
    "tests/test_api.py::test_cli_and_api_give_identical_certificates": "test_analysis_cli.py, test_sample_cli.py",
    "tests/test_api.py::test_calibration_falls_back_to_mixing_when_the_bound_says_nothing":
        "test_calibration_meets_the_target_tightly",
    "tests/test_api.py::test_private_mcmc_from_a_plan_and_from_a_kernel": "test_api.py's other PrivateMCMC tests",
    "tests/release/test_release_final.py::test_plan_does_not_depend_on_the_values":
        "test_api.py::test_calibration_never_depends_on_the_data_values",
    "tests/test_api.py::test_calibration_meets_the_target_tightly[0.5-logistic]": "[0.5-robust]",
    "tests/test_api.py::test_calibration_meets_the_target_tightly[0.5-softmax]": "[0.5-robust]",
    "tests/test_api.py::test_calibration_meets_the_target_tightly[2.0-logistic]": "[2.0-robust]",
    "tests/test_api.py::test_calibration_meets_the_target_tightly[2.0-softmax]": "[2.0-robust]",
    "tests/test_audit.py::test_lq_audit_is_tight[ula-final-kw1]": "[posterior-kw0]",
    "tests/test_audit.py::test_lq_audit_is_tight[ula-path-kw2]": "[posterior-kw0]",
    "tests/test_docs_examples.py::test_docstring_examples[bayesdp.samplers.kernels]": "other docstrings",
    "tests/test_docs_examples.py::test_docstring_examples[bayesdp.api]": "other docstrings, test_api.py",
    "tests/test_docs_examples.py::test_docstring_examples[bayesdp.publish.demo]": "test_demo.py (quick demo)",
    "tests/test_docs_examples.py::test_docstring_examples[bayesdp.bench.utility]": "other docstrings",
    "tests/test_audit.py::test_reference_model_audits_stay_below_certificates[logistic-sgld-final]":
        "[logistic-sgld-path]",
    "tests/test_safe_defaults.py::test_sample_cli_marks_a_seed_everywhere":
        "test_safe_defaults.py::test_no_seed_or_key_in_release_records",
    # a second chain compiled for --plan (release); apply_plan itself is run fast by `sample --plan`
    "tests/test_cli_apply_plan.py::test_release_runs_the_plans_chain":
        "test_cli_apply_plan.py::test_sample_runs_and_certifies_the_plans_model_domain_and_settings",
    "tests/analysis/test_analysis_tracing.py::test_same_constants_with_x64_on_and_off":
        "none (a subprocess with x64 on); the analysis tests run with x64 off",
    # calibration diagnostics: a calibrated plan each
    "tests/test_calibration_diagnostics.py::test_calibrated_plans_heuristic_contraction_matches_measurement":
        "test_heuristic_contraction_within_a_factor_two_of_the_measured_one_at_m_1e3",
    "tests/test_calibration_diagnostics.py::test_plan_that_cannot_reach_its_target_says_so_in_one_line":
        "test_warning_only_when_neither_contraction_reaches_the_need",
    "tests/analysis/test_families_zip.py::test_latent_gate_bound_is_the_derived_one_and_within_1_001_of_the_grid_maximum":
        "test_families_zip.py::test_public_gate_bound_is_the_exact_supremum",
    "tests/analysis/test_families_zip.py::test_random_theta_and_records_never_exceed_the_bound":
        "test_families_zip.py::test_shared_latent_site_uses_the_triangle_inequality",
    # gate_logits: grids of JAX's gradient of NumPyro's log-density (the bound itself stays in the fast tier)
    "tests/analysis/test_families_zip_logits.py::test_latent_gate_logits_get_the_exact_supremum":
        "test_families_zip_logits.py::test_zero_count_score_bound_is_above_and_close_to_a_dense_maximum",
    "tests/analysis/test_families_zip_logits.py::test_public_gate_logits_get_the_exact_supremum_far_below_lambda_hi":
        "test_families_zip_logits.py::test_a_zero_inflated_negative_binomial_is_not_taken_for_a_poisson",
    "tests/analysis/test_families_beta_gate.py::test_zip_beta_gate_bound_is_reached_by_a_grid_of_the_models_gradient":
        "test_families_beta_gate.py::test_zip_with_a_beta_gate_is_certified_with_the_exact_supremum",
    "tests/analysis/test_replace_one_difference.py::"
    "test_negative_binomial_with_a_per_record_concentration_is_bounded_by_its_range":
        "test_replace_one_difference.py::test_negative_binomial_intercept_difference_is_the_response_range",
    # the compilation cache: a CLI chain in a subprocess each
    "tests/test_jax_cache.py::test_no_data_record_reaches_the_cache[sgld]": "[ula]",
    "tests/test_jax_cache.py::test_no_jax_cache_flag_and_env_turn_it_off":
        "test_enable_in_python_never_overrides_the_users_jax_configuration[off]",
    # never worse than knowing nothing (docs/release.md §12): the searches a refusal runs, a CLI chain
    "tests/release/test_uninformative.py::test_the_record_count_it_names_makes_the_path_prediction_beat_the_prior":
        "test_uninformative.py::test_refused_when_the_prediction_is_worse_than_the_prior_and_nothing_is_charged",
    "tests/release/test_uninformative.py::test_a_hierarchical_prior_is_skipped_with_a_labelled_warning_never_silently":
        "test_uninformative.py::test_prior_spread_reads_the_model_prior_sites_only",
    "tests/release/test_given_chain_refusal.py::test_a_run_chain_predicted_ten_times_worse_than_a_fresh_release_is_refused":
        "test_given_chain_refusal.py::test_a_given_chain_released_anyway_carries_the_warning",
    "tests/release/test_given_chain_refusal.py::test_cli_allow_uninformative_releases_and_warns_on_stderr":
        "test_uninformative.py::test_allow_uninformative_releases_with_a_warning",
    # the path release's tuning measured on logistic regression at m = 1e4 (docs/release.md §8.4): 12 reference chains
    "tests/release/test_path_tuning.py::test_logistic_m1e4_default_release_error_and_interval_coverage":
        "test_path_tuning.py::test_predicted_error_on_a_quadratic_is_the_simulated_chain_s",
    # 2026-11-26, the fast tier over its 5 minutes (docs/testing.md): tests of 2.5-12 s whose kind stays fast
    "tests/test_mutation_tool.py::test_spawn_runs_each_mutant_in_a_fresh_process_and_writes_mutmuts_verdicts":
        "test_mutation_tool.py::test_spawn_refuses_when_the_unmutated_code_fails_its_tests",
    "tests/test_audit.py::test_model_audit_detects_the_difference":
        "test_audit.py::test_reference_model_audits_stay_below_certificates[logistic-ula-final]",
    "tests/test_audit.py::test_release_audit_is_tight": "test_audit.py::test_lq_audit_is_tight[posterior-kw0]",
    "tests/release/test_ledger_journal.py::test_long_ledger_show_and_a_release_that_verifies_only_the_new_rows":
        "test_ledger_journal.py::test_a_release_rechecks_the_header_and_the_rows_after_the_verified_one",
    "tests/release/test_engine.py::test_cli_and_python_choose_the_same_method_and_settings[extra0-spec_kw0]":
        "[extra1-spec_kw1]",
    "tests/samplers/test_minibatch.py::test_pair_and_single_frequencies_exact_binomial":
        "test_minibatch.py::test_parallel_floyd_is_floyd_and_exactly_uniform_by_enumeration",
    "tests/test_docs_examples.py::test_docstring_examples[bayesdp.publish.engine]": "other docstrings",
    "tests/test_docs_examples.py::test_docstring_examples[bayesdp.models]": "other docstrings",
    "tests/analysis/test_replace_one_difference.py::"
    "test_ordered_logistic_shared_predictor_difference_is_one_plus_tanh[K=4]": "[K=2]",
    "tests/analysis/test_replace_one_difference.py::"
    "test_ordered_logistic_shared_predictor_difference_is_one_plus_tanh[K=5]": "[K=2]",
    "tests/test_audit.py::test_reference_model_audits_stay_below_certificates[poisson-ula-path]": "[logistic-ula-path]",
    "tests/test_bench_constants.py::test_logistic_hessian_sup_is_reached":
        "test_bench_constants.py::test_logistic_gradient_sup_is_reached",
    "tests/test_bench_constants.py::test_clipped_poisson_sup_is_reached":
        "test_bench_constants.py::test_logistic_gradient_sup_is_reached",
    "tests/release/test_given_chain_refusal.py::test_cli_release_runs_a_last_draw_plan_from_calibrate":
        "test_release_final.py::test_release_is_the_planned_chains_final_draw",
    "tests/release/test_engine.py::test_a_plans_settings_are_used_as_given":
        "test_cli_apply_plan.py::test_sample_runs_and_certifies_the_plans_model_domain_and_settings",
    "tests/release/test_utility.py::test_path_release_through_the_api":
        "test_readme_examples.py::test_public_api_example_scripts_run[release_logistic.py-expect1]",
    "tests/release/test_uninformative.py::test_a_pure_dp_refusal_suggests_approximate_dp_when_it_would_help":
        "test_uninformative.py::test_refused_when_the_prediction_is_worse_than_the_prior_and_nothing_is_charged",
    "tests/budget/test_ledger_faults.py::test_concurrent_releases_through_a_symlink_and_the_real_path":
        "test_release_ledger.py::test_concurrent_processes_cannot_overspend",
    "tests/test_face_public.py::test_cli_sample_out_holds_what_python_to_inference_data_holds":
        "samplers/test_certificate.py::test_inference_data_holds_only_released_draws_and_certificate",
    # ledger: many processes or a 100,000-entry journal
    "tests/release/test_ledger_processes.py::test_kill9_at_random_points_of_a_release":
        "test_release_ledger.py::test_killed_at_random_times_during_writes",
    "tests/release/test_ledger_processes.py::test_eight_concurrent_releases_against_a_budget_of_five":
        "test_release_ledger.py::test_concurrent_processes_cannot_overspend",
    # 2026-11-27, the fast tier still over its 5 minutes (docs/testing.md)
    "tests/analysis/test_soundness_property.py::test_certified_bounds_dominate_numerical_search":
        "test_soundness_property.py::test_search_reaches_known_sups (the same check on four hand-derived models)",
    "tests/test_outputs.py::test_calibrate_out_refuses_an_existing_file_without_overwrite":
        "test_outputs.py::test_plan_to_json_writes_atomically_and_refuses_to_replace",
    "tests/test_bench_constants.py::test_rows_and_summary_from_the_cli":
        "test_bench_constants.py::test_logistic_gradient_sup_is_reached",
    "tests/samplers/test_minibatch.py::test_bins_at_large_m":
        "test_minibatch.py::test_parallel_floyd_is_floyd_and_exactly_uniform_by_enumeration",
    "tests/samplers/test_minibatch.py::test_consecutive_batches_independent":
        "test_minibatch.py::test_parallel_floyd_is_floyd_and_exactly_uniform_by_enumeration",
}


def _slow_key(nodeid: str) -> str | None:
    if nodeid in SLOW:
        return nodeid
    base = nodeid.split("[", 1)[0]
    return base if base in SLOW else None


@pytest.hookimpl(tryfirst=True)     # before `-m` deselects
def pytest_collection_modifyitems(config, items):
    slow = pytest.mark.slow
    for it in items:
        if _slow_key(it.nodeid) is not None:
            it.add_marker(slow)
    gpu_items = [it for it in items if "gpu" in it.keywords]
    if gpu_items and not _has_gpu():
        skip = pytest.mark.skip(reason="needs a GPU (JAX sees none)")
        for it in gpu_items:
            it.add_marker(skip)
