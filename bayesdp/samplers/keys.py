"""PRNG keys of chains whose draws leave the process.

A chain's draws are a deterministic function of (data, key): a key that an adversary can guess
(a default seed such as 0, a seed printed next to the release) lets them recompute the chain and
the privacy certificate no longer describes what was published (004 Proposition 3.10's
``delta = 2 delta~ - delta~^2`` assumes independent chains).  So:

* without an explicit key/seed, keys come from the OS CSPRNG (:mod:`secrets`): the full key data
  of JAX's default PRNG implementation is filled with random bytes (64 bits for threefry2x32);
* a seed or key given explicitly is honoured (reproducible runs, tests) and every output then says
  :data:`REPRODUCIBLE` ("reproducible seed: not private");
* no key or seed value is ever written into an output or a release record: only the label.
"""

from __future__ import annotations

import secrets
from typing import Any

import numpy as np
from ..errors import AssumptionError

__all__ = ["REPRODUCIBLE", "SECURE", "MAX_SEED", "secure_key", "check_seed", "resolve_key"]

#: label of chains whose keys were given explicitly (a seed or a key)
REPRODUCIBLE = "reproducible seed: not private"
#: label of chains whose keys come from the OS CSPRNG
SECURE = "OS CSPRNG (secrets): not reproducible"


def secure_key():
    """A JAX PRNG key whose key data are random bytes from the OS CSPRNG (``secrets``).

    Returns:
        a typed JAX key of the default implementation (unpredictable: never written into an output).

    Examples:
        >>> import jax
        >>> key = secure_key()
        >>> jax.random.key_data(key).shape == jax.random.key_data(jax.random.key(0)).shape
        True
    """
    import jax

    template = jax.random.key_data(jax.random.key(0))
    nbytes = int(np.prod(template.shape, dtype=np.int64)) * template.dtype.itemsize
    raw = np.frombuffer(secrets.token_bytes(nbytes), dtype=template.dtype).reshape(template.shape)
    return jax.random.wrap_key_data(raw)


#: seeds map to JAX keys without loss only in [0, 2^32) (larger ones are truncated or overflow)
MAX_SEED = 2 ** 32 - 1


def check_seed(seed: Any, name: str = "seed") -> int:
    """An int seed in ``[0, 2^32 - 1]``, or a one-line refusal.

    Args:
        seed: the value to check.
        name: the parameter's name in the refusal.

    Returns:
        the seed as a Python int.

    Raises:
        AssumptionError: not an integer (a bool is refused) or outside ``[0, MAX_SEED]``.

    Examples:
        >>> check_seed(7)
        7
        >>> check_seed(-1)
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: seed = -1 must be an integer in [0, 4294967295]; pass a smaller seed, ...
    """

    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) <= MAX_SEED:
        raise AssumptionError(f"{name} = {seed!r} must be an integer in [0, {MAX_SEED}]; pass a smaller seed, or "
                              "none for OS CSPRNG keys")
    return int(seed)


def resolve_key(rng_key: Any = None) -> tuple[Any, str]:
    """``(key, label)``: a CSPRNG key and :data:`SECURE` for ``None``; otherwise the given key and :data:`REPRODUCIBLE`.

    Args:
        rng_key: ``None`` (OS CSPRNG key), a JAX key, or an int seed (turned into ``jax.random.key(seed)``).

    Returns:
        the key and the label every output of the run carries.

    Raises:
        AssumptionError: an int seed outside ``[0, MAX_SEED]``.

    Examples:
        >>> import jax
        >>> key, label = resolve_key(3)
        >>> label
        'reproducible seed: not private'
        >>> bool((jax.random.key_data(key) == jax.random.key_data(jax.random.key(3))).all())
        True
        >>> resolve_key(None)[1]
        'OS CSPRNG (secrets): not reproducible'
    """
    import jax

    if rng_key is None:
        return secure_key(), SECURE
    if isinstance(rng_key, (int, np.integer)) and not isinstance(rng_key, bool):
        return jax.random.key(check_seed(rng_key)), REPRODUCIBLE
    return rng_key, REPRODUCIBLE
