"""Privacy calculator: every certificate for ULA on a strongly convex potential, from Python.

Run:  python examples/privacy_calculator.py
"""

import bayesdp

# U_D = K + V_D with K mu-strongly convex and L-smooth, |grad V_D| <= c, V linear (L_V = 0).
constants = dict(strong_convexity=1.0, smoothness=1.0, grad_bound=0.5, step_size=0.01, num_steps=10_000)

for mechanism, extra in [("ula-final", {"v_smoothness": 0.0}), ("ula-final", {}),
                         ("ula-path", {}), ("posterior", {"v_smoothness": 0.0})]:
    opts = {k: v for k, v in {**constants, **extra}.items()
            if k in {o.dest for o in bayesdp.MECHANISMS[mechanism].options}}
    report = bayesdp.bound(mechanism, delta=1e-5, **opts)
    print(report.table())
    print()

# Curves compose: 4 released chains of a mu-GDP final draw are (2 mu)-GDP.
one = bayesdp.bound("ula-final", delta=1e-5, v_smoothness=0.0, **constants).best.curve
four = bayesdp.compose([one] * 4)
print(f"one chain: mu = {one.gdp_mu:.4f}, eps(1e-5) = {one.epsilon(1e-5):.4f}")
print(f"four chains: mu = {four.gdp_mu:.4f}, eps(1e-5) = {four.epsilon(1e-5):.4f}")
