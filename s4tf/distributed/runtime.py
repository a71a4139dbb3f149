"""Joining several hosts into one JAX runtime, so strategies see every host's devices."""

from __future__ import annotations

from .strategy import _jax

__all__ = ["initialize"]


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_device_ids=None, **options) -> None:
    """Connect this process to the others of a multi-host job (``jax.distributed.initialize``).

    Call it once per process, before any xla tensor exists; afterwards
    ``DataParallel()`` spans the devices of every host. On a single host it is
    not needed. On managed clusters (SLURM, Cloud TPU, Kubernetes with the right
    environment) JAX finds every argument itself and ``initialize()`` suffices.

    Parameters
    ----------
    coordinator_address : str, optional
        ``"host:port"`` of process 0, reachable from every process.
    num_processes : int, optional
        How many processes take part.
    process_id : int, optional
        This process's rank, ``0 .. num_processes - 1``.
    local_device_ids : sequence of int, optional
        The local devices this process drives (default: all of them).
    **options
        Passed to ``jax.distributed.initialize`` unchanged.

    Examples
    --------
    >>> from s4tf import distributed
    >>> # On each of two hosts (process_id 0 and 1):
    >>> # distributed.initialize("10.0.0.1:1234", num_processes=2, process_id=0)
    >>> # strategy = distributed.DataParallel()   # now every host's devices
    """
    _jax().distributed.initialize(coordinator_address=coordinator_address,
                                  num_processes=num_processes, process_id=process_id,
                                  local_device_ids=local_device_ids, **options)
