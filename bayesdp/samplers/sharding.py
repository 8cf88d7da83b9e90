"""Chains and records across devices and processes (``jax.sharding``, ``jax.shard_map``, ``jax.distributed``).

Two placements, both on a 1-D mesh of every device of every process (devices ordered by process, so the
devices of one process hold one contiguous block of rows):

* **chains** (``chain_method="parallel"``): the chain axis is split over the devices, the data are
  replicated; each device runs its chains with the unchanged single-device program.
* **records** (``shard_data=True``): the records are split over the devices, the chains are replicated
  (every device holds every position, a few numbers per chain).  The full-batch gradient becomes one
  partial sum per device and a ``psum``; an SGLD batch is fetched from the devices that own its records
  (:func:`gather_rows`, an all-reduce of the masked rows: the batch every device sees is bit for bit
  the batch of the unsharded run), so the gradient code is the unsharded one.

**Any record count.**  Every device holds ``L = max_p ceil(m_p / n_p)`` rows (``m_p`` records and
``n_p`` devices on process p): process p's records fill the first ``m_p`` rows of its block and the rest
is padding (copies of its first record, so every row is a finite, valid record).  Padding contributes
exactly nothing: full-batch sums mask padded rows (:meth:`RecordLayout.local_valid`; the per-record
loss, or the GLM residual, is replaced by 0 before it is differentiated or summed, so a padded row's
term is an exact zero also after clipping), and SGLD batches are drawn over the ``m`` real records and
mapped to their rows (:meth:`RecordLayout.rows`), so a padded row is never in a batch.

**Several processes** (``jax.distributed``, JAX's multi-controller runtime): every process runs the
same program on its own devices.  With ``shard_data=True`` each process passes only *its* records
(the global dataset is their concatenation in process order); otherwise every process passes the same
full dataset.  The chain keys are drawn on process 0 and broadcast (:func:`agree`), so every process
runs the same chains.  See ``docs/distributed.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from ..errors import AssumptionError

__all__ = ["CHAINS", "RECORDS", "devices", "mesh", "multi_process", "RecordLayout", "record_layout", "place_records",
           "gather_rows", "check_chains", "place", "replicate_data", "to_host", "agree", "all_equal"]

#: mesh axis name of the chains (``chain_method="parallel"``)
CHAINS = "chains"
#: mesh axis name of the records (``shard_data=True``)
RECORDS = "records"


def devices() -> list:
    """Every device of every process, ordered by (process, id): each process owns a contiguous run.

    Returns:
        the list of JAX devices.

    Examples:
        >>> import jax
        >>> len(devices()) == jax.device_count()
        True
    """
    return sorted(jax.devices(), key=lambda d: (d.process_index, d.id))


def mesh(axis: str) -> Mesh:
    """The 1-D mesh of :func:`devices` with the axis ``axis``.

    Args:
        axis: the axis name (:data:`CHAINS` or :data:`RECORDS`).

    Returns:
        a ``jax.sharding.Mesh``.

    Examples:
        >>> mesh(RECORDS).axis_names
        ('records',)
    """
    return Mesh(np.asarray(devices()), (axis,))


def multi_process() -> bool:
    """Whether JAX runs several processes (``jax.distributed``).

    Returns:
        ``jax.process_count() > 1``.

    Examples:
        >>> import jax
        >>> multi_process() == (jax.process_count() > 1)
        True
    """
    return jax.process_count() > 1


# ---------------------------------------------------------------------------
# records: layout with padding
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordLayout:
    """Where each record lives when the records are split over ``num_devices`` devices (static, hashable).

    Process p holds records ``[record_offsets[p], record_offsets[p] + process_records[p])`` of the global
    dataset (their order of concatenation) in rows ``[row_offsets[p], row_offsets[p] + process_records[p])``
    of the padded global array of ``padded_size = shard_size * num_devices`` rows; device j holds rows
    ``[j L, (j+1) L)``, of which the first ``valid_rows[j]`` are records and the rest padding.

    Attributes:
        data_size: the number of records over every process.
        shard_size: ``L``, rows per device.
        num_devices: the number of devices.
        valid_rows: records (not padding) per device.
        record_offsets: the first global record index of each process.
        row_offsets: the first padded row of each process.
        process_records: the number of records of each process.

    Examples:
        Process 0 holds 5 records on 2 devices, process 1 holds 3 records on 1 device: ``L = 3`` rows per
        device, process 0's last device holds 2 records and one padded row.

        >>> lay = RecordLayout.build([5, 3], [2, 1])
        >>> lay.shard_size, lay.valid_rows, lay.padded_size
        (3, (3, 2, 3), 9)
        >>> lay.rows([0, 4, 5, 7]).tolist()               # records 5..7 live in rows 6..8
        [0, 4, 6, 8]
    """

    data_size: int
    shard_size: int
    num_devices: int
    valid_rows: tuple[int, ...]
    record_offsets: tuple[int, ...]
    row_offsets: tuple[int, ...]
    process_records: tuple[int, ...]

    @property
    def padded_size(self) -> int:
        """Rows of the padded global array: ``shard_size * num_devices``.

        Returns:
            the number of rows.
        """
        return self.shard_size * self.num_devices

    @staticmethod
    def build(process_records, process_devices) -> "RecordLayout":
        """Layout for ``process_records[p]`` records on ``process_devices[p]`` devices of each process p.

        Args:
            process_records: the number of records of each process.
            process_devices: the number of devices of each process.

        Returns:
            the layout.

        Raises:
            AssumptionError: a process with no record.
        """
        counts = [int(c) for c in process_records]
        ndev = [int(n) for n in process_devices]
        if any(c < 1 for c in counts):
            p = next(i for i, c in enumerate(counts) if c < 1)
            raise AssumptionError(f"process {p} passed {counts[p]} records; with shard_data=True every process "
                                  "must pass at least one record (its own share of the data)")
        L = max(-(-c // n) for c, n in zip(counts, ndev))
        valid, rec_off, row_off = [], [], []
        rec = row = 0
        for c, n in zip(counts, ndev):
            rec_off.append(rec)
            row_off.append(row)
            valid += [max(0, min(L, c - k * L)) for k in range(n)]
            rec += c
            row += n * L
        return RecordLayout(rec, L, sum(ndev), tuple(valid), tuple(rec_off), tuple(row_off), tuple(counts))

    def rows(self, idx) -> jax.Array:
        """Row of the padded array holding each global record index in ``idx`` (int32, any shape).

        Args:
            idx: global record indices.

        Returns:
            int32 rows of the shape of ``idx``.
        """
        idx = jnp.asarray(idx, jnp.int32)
        if len(self.record_offsets) == 1:
            return idx  # one process: its padding is at the end
        starts = jnp.asarray(self.record_offsets[1:], jnp.int32)
        proc = jnp.sum(idx[..., None] >= starts, axis=-1)
        shift = jnp.asarray(np.subtract(self.row_offsets, self.record_offsets), jnp.int32)
        return idx + shift[proc]

    def local_valid(self, axis: str = RECORDS) -> jax.Array:
        """Inside ``shard_map`` over ``axis``: which of this device's ``shard_size`` rows are records.

        Args:
            axis: the mesh axis the records are split over.

        Returns:
            bool ``(shard_size,)``.
        """
        count = jnp.asarray(self.valid_rows, jnp.int32)[jax.lax.axis_index(axis)]
        return jnp.arange(self.shard_size, dtype=jnp.int32) < count

    def host_rows(self, process: int, start: int, stop: int) -> tuple[int, int]:
        """Local record range of ``process`` covered by global rows ``[start, stop)`` (clipped to its records).

        Args:
            process: the process index.
            start: the first global row.
            stop: the global row after the last.

        Returns:
            ``(lo, hi)``: the process's records ``[lo, hi)`` in those rows.
        """
        base = self.row_offsets[process]
        lo = min(max(start - base, 0), self.process_records[process])
        hi = min(max(stop - base, 0), self.process_records[process])
        return lo, hi


def record_layout(local_size: int) -> RecordLayout:
    """The layout of this run: the record counts of every process (all-gathered when there are several).

    Args:
        local_size: the number of records this process passed.

    Returns:
        the :class:`RecordLayout` over :func:`devices`.

    Raises:
        AssumptionError: a process with no record.

    Examples:
        >>> lay = record_layout(3)
        >>> lay.data_size, lay.num_devices == len(devices())
        (3, True)
    """
    devs = devices()
    per_process = [sum(1 for d in devs if d.process_index == p) for p in range(jax.process_count())]
    if multi_process():
        from jax.experimental import multihost_utils

        counts = np.asarray(multihost_utils.process_allgather(np.asarray([local_size], np.int64))).reshape(-1)
    else:
        counts = [local_size]
    return RecordLayout.build(counts, per_process)


def place_records(data: Mapping[str, np.ndarray], layout: RecordLayout) -> dict:
    """This process's records as global arrays of ``layout.padded_size`` rows split over the devices.

    Each device's rows are a slice of the host array (no copy of the whole data); a device whose rows
    run past this process's records gets copies of the process's first record as padding.

    Args:
        data: this process's record arrays.
        layout: the run's layout (:func:`record_layout`).

    Returns:
        a dict of global ``jax.Array`` of ``layout.padded_size`` rows, split over :data:`RECORDS`.

    Examples:
        >>> import numpy as np
        >>> lay = record_layout(3)
        >>> place_records({"y": np.array([10.0, 20.0, 30.0])}, lay)["y"].shape == (lay.padded_size,)
        True
    """
    msh = mesh(RECORDS)
    p = jax.process_index()
    out = {}
    for name, host in data.items():
        host = np.asarray(host)
        shape = (layout.padded_size,) + host.shape[1:]
        sharding = NamedSharding(msh, P(RECORDS, *([None] * (host.ndim - 1))))

        def shard(index, host=host):
            rows = index[0]
            lo, hi = layout.host_rows(p, rows.start or 0, rows.stop if rows.stop is not None else shape[0])
            want = (rows.stop if rows.stop is not None else shape[0]) - (rows.start or 0)
            piece = host[lo:hi]
            if piece.shape[0] < want:
                pad = np.broadcast_to(host[:1], (want - piece.shape[0],) + host.shape[1:])
                piece = np.concatenate([piece, pad]) if piece.shape[0] else np.array(pad)
            return piece

        out[name] = jax.make_array_from_callback(shape, sharding, shard)
    return out


def gather_rows(local: Mapping[str, jax.Array], rows, layout: RecordLayout, axis: str = RECORDS) -> dict:
    """Inside ``shard_map``: the rows ``rows`` (global padded row numbers, any shape) of every data array,
    on every device.  Each device takes the requested rows it owns and zeros elsewhere, as raw bits (an
    integer view), and a ``psum`` adds them: exactly one device contributes each row, so the result is the
    row bit for bit (no float addition, no sign-of-zero change).

    Args:
        local: this device's rows of every data array (inside ``shard_map``).
        rows: global padded row numbers.
        layout: the run's layout.
        axis: the mesh axis the records are split over.

    Returns:
        a dict of the requested rows of every array, identical on every device.

    Examples:
        >>> import numpy as np, jax, jax.numpy as jnp
        >>> from jax.sharding import PartitionSpec as P
        >>> lay = record_layout(3)
        >>> data = place_records({"y": np.array([10.0, 20.0, 30.0])}, lay)
        >>> fetch = jax.shard_map(lambda d: gather_rows(d, lay.rows(jnp.array([2, 0])), lay), mesh=mesh(RECORDS),
        ...                       in_specs=(P(RECORDS),), out_specs=P(), check_vma=False)
        >>> jax.jit(fetch)(data)["y"].tolist()
        [30.0, 10.0]
    """
    lo = jax.lax.axis_index(axis) * layout.shard_size
    mine = (rows >= lo) & (rows < lo + layout.shard_size)
    at = jnp.clip(rows - lo, 0, layout.shard_size - 1)
    out = {}
    for name, v in local.items():
        got = jnp.take(v, at, axis=0)
        keep = mine.reshape(mine.shape + (1,) * (got.ndim - mine.ndim))
        if v.dtype == jnp.bool_:
            bits = jnp.where(keep, got, False).astype(jnp.int32)
            out[name] = jax.lax.psum(bits, axis).astype(jnp.bool_)
            continue
        width = jnp.dtype(v.dtype).itemsize * 8
        ity = {8: jnp.int8, 16: jnp.int16, 32: jnp.int32, 64: jnp.int64}[width]
        bits = jax.lax.bitcast_convert_type(got, ity) if jnp.issubdtype(v.dtype, jnp.floating) else got.astype(ity)
        bits = jnp.where(keep, bits, jnp.zeros((), ity))
        total = jax.lax.psum(bits, axis)
        out[name] = (jax.lax.bitcast_convert_type(total, v.dtype) if jnp.issubdtype(v.dtype, jnp.floating)
                     else total.astype(v.dtype))
    return out


# ---------------------------------------------------------------------------
# chains
# ---------------------------------------------------------------------------


def check_chains(num_chains: int) -> int:
    """Chains per device for ``chain_method="parallel"``.

    Args:
        num_chains: the number of chains.

    Returns:
        ``num_chains`` divided by the number of devices.

    Raises:
        AssumptionError: the devices do not divide ``num_chains``.

    Examples:
        >>> check_chains(2 * len(devices()))
        2
    """
    n = len(devices())
    if num_chains % n:
        raise AssumptionError(f"num_chains = {num_chains} is not a multiple of the {n} devices; "
                              f"chain_method='parallel' shards chains evenly, pass a multiple of {n}")
    return num_chains // n


def place(host, spec_axis: str | None, axis_name: str):
    """A host array (every process holds the same value) as a global array: split along its first axis over
    ``axis_name``'s mesh when ``spec_axis`` is set, replicated otherwise.

    Args:
        host: the array (the same on every process).
        spec_axis: the mesh axis to split the first axis over, or ``None`` (replicated).
        axis_name: the mesh's axis name.

    Returns:
        a global ``jax.Array``.

    Examples:
        >>> import numpy as np
        >>> place(np.arange(4.0), None, CHAINS).tolist()
        [0.0, 1.0, 2.0, 3.0]
    """
    host = np.asarray(host)
    spec = P(spec_axis, *([None] * (host.ndim - 1))) if spec_axis else P()
    sharding = NamedSharding(mesh(axis_name), spec)
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def replicate_data(data: Mapping[str, np.ndarray], axis_name: str) -> dict:
    """Every data array on every device (chains split over devices, records not).

    Args:
        data: record arrays by name.
        axis_name: the mesh's axis name.

    Returns:
        a dict of replicated global arrays.

    Examples:
        >>> import numpy as np
        >>> replicate_data({"y": np.arange(3.0)}, CHAINS)["y"].tolist()
        [0.0, 1.0, 2.0]
    """
    return {k: place(v, None, axis_name) for k, v in data.items()}


def to_host(x) -> np.ndarray:
    """A global output (replicated, or split over the processes) as one NumPy array on this process.

    Args:
        x: a JAX array (or anything ``np.asarray`` takes).

    Returns:
        the whole array as NumPy.

    Examples:
        >>> import numpy as np
        >>> to_host(place(np.arange(3.0), None, CHAINS)).tolist()
        [0.0, 1.0, 2.0]
    """
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
        if x.sharding.is_fully_replicated:
            return np.asarray(x.addressable_data(0))
        from jax.experimental import multihost_utils

        return np.asarray(multihost_utils.process_allgather(x, tiled=True))
    return np.asarray(x)


def agree(value: np.ndarray) -> np.ndarray:
    """Process 0's ``value`` on every process (one broadcast); ``value`` itself with one process.

    Args:
        value: a NumPy array of the same shape and dtype on every process.

    Returns:
        process 0's value.

    Examples:
        >>> import numpy as np
        >>> agree(np.array([1, 2])).tolist()              # one process: unchanged
        [1, 2]
    """
    if not multi_process():
        return value
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.broadcast_one_to_all(np.asarray(value)))


def all_equal(value, what: str) -> None:
    """Refuse (one line) when processes disagree on ``value`` (shapes, counts: what must be identical).

    Args:
        value: integers (a scalar or a sequence) that every process must pass identically.
        what: what they are, for the refusal.

    Raises:
        AssumptionError: the processes passed different values.

    Examples:
        >>> all_equal([3, 2], "the data shapes")          # one process: nothing to compare
    """
    if not multi_process():
        return
    from jax.experimental import multihost_utils

    arr = np.asarray(value, np.int64).reshape(-1)
    got = np.asarray(multihost_utils.process_allgather(arr)).reshape(jax.process_count(), -1)
    if not (got == got[0]).all():
        raise AssumptionError(f"the processes disagree on {what} ({got.tolist()}); every process must pass the "
                              "same configuration (and, without shard_data=True, the same data)")
