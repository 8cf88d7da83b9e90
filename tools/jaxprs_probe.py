import inspect, jax, jax.numpy as jnp
from jax._src.lax import lax as L
print("jax", jax.__version__)
for name in ("_balanced_eq", "_eq_meet"):
    f = getattr(L, name, None)
    print(inspect.getsource(f) if f else f"no {name}")
for name in ("_clamp_jvp_rule", "_reduce_chooser_jvp_rule"):
    f = getattr(L, name, None)
    if f: print(inspect.getsource(f))
try:
    import jax._src.lax.lax as LL
    src = inspect.getsource(LL)
    i = src.find("ad.defjvp2(min_p"); print(src[i-600:i+400])
    i = src.find("clamp_p = "); print(src[i:i+1500])
except Exception as e:
    print("src", e)
cases = {
 "min(x^2,1)": lambda x: jnp.minimum(x ** 2, 1.0),
 "max(x,0)": lambda x: jnp.maximum(x, 0.0),
 "min(1,x)": lambda x: jnp.minimum(1.0, x),
 "clip": lambda x: jnp.clip(x, -1.0, 2.0),
 "relu": jax.nn.relu,
}
for k, f in cases.items():
    print("==", k)
    print(jax.make_jaxpr(lambda x, t: jax.jvp(f, (x,), (t,)))(jnp.ones(3), jnp.ones(3)))
print("== grad max-reduce")
print(jax.make_jaxpr(jax.grad(lambda x: jnp.max(x)))(jnp.ones(3)))
