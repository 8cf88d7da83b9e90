"""Placement of chains and records across devices with ``jax.sharding``.

The same code runs on one CPU, on a CPU with ``XLA_FLAGS=--xla_force_host_platform_device_count=N``
and on a GPU host: the arrays are placed with a :class:`~jax.sharding.NamedSharding` over a 1-D
mesh of ``jax.devices()`` and ``jit`` partitions the program (the vmap over chains is split along
the chain axis; a full-batch gradient over sharded records becomes per-device partial sums and
one all-reduce).
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from ..errors import AssumptionError


def mesh(axis: str) -> Mesh:
    return Mesh(np.asarray(jax.devices()), (axis,))


def shard_chains(keys, positions):
    """Split the chain axis (leading) of the keys and positions evenly over the devices."""
    n = jax.device_count()
    if positions.shape[0] % n:
        raise AssumptionError(f"num_chains = {positions.shape[0]} is not a multiple of the {n} devices; "
                              f"pass a multiple of {n}")
    sh = NamedSharding(mesh("chains"), P("chains"))
    return jax.device_put(keys, sh), jax.device_put(positions, sh)


def shard_records(data: dict) -> dict:
    """Split the record axis of every data array over the devices (needs m divisible by the device count)."""
    n = jax.device_count()
    out = {}
    msh = mesh("records")
    for k, v in data.items():
        if v.shape[0] % n:
            raise AssumptionError(f"data['{k}'] has {v.shape[0]} records, not a multiple of the {n} devices; "
                                  f"shard_data=True needs data_size divisible by {n}")
        out[k] = jax.device_put(v, NamedSharding(msh, P("records", *([None] * (v.ndim - 1)))))
    return out
