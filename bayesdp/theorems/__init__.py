"""Theorems: one function per result, named constants in, Certificate out.

Modules by family (each theorem's docstring names its source as ../shared/math/SEEDS.md does):

* [`girsanov`][bayesdp.theorems.girsanov]: 004 §§4-5, Girsanov bounds for ULA and SGLD (final draw, path);
* [`transfer`][bayesdp.theorems.transfer]: 004 §3, posterior <-> chain <-> noisy Monte Carlo estimate;
* [`tight`][bayesdp.theorems.tight]: routes tighter than the seeds (GDP composition, shifted
  interpolation, the posterior's GDP bound, optimised windows; derivations in docs/tight.md);
* [`mixing`][bayesdp.theorems.mixing]: 002/000, amplification by mixing and diffusion;
* [`hockey_stick`][bayesdp.theorems.hockey_stick]: 003, E_gamma contraction of projected noisy SGD;
* [`pabi`][bayesdp.theorems.pabi]: 001, PABI with a modulus of continuity, PLA mixing, noisy SGD;
* [`gradient_step`][bayesdp.theorems.gradient_step]: contraction of a gradient step and coupling distances;
* [`paper_constants`][bayesdp.theorems.paper_constants]: 004's printed constants (regression only, never certified).

Every function validates its hypotheses and raises [`AssumptionError`][bayesdp.errors.AssumptionError] (one line)
when one fails; [`bayesdp.bound`][bayesdp.mechanisms.registry.bound] combines the theorems that apply into a report.

Examples:
    >>> from bayesdp.theorems import girsanov
    >>> girsanov.theorem_5_4(grad_diff=1.0, step_size=0.01, num_steps=1000).source
    '004 Theorem 5.4'
"""
