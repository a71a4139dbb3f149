"""How the trace sees device layouts: sharding keys, mesh checks, collectives.

Pure helpers over ``jax.Array`` shardings, used by the graph (trace keys and
the one-mesh rule) and the compiler (device counts, collectives in a compiled
step); placing values on devices is :mod:`.sharding`'s job.
"""

from __future__ import annotations

import numpy as np
from jax.sharding import NamedSharding

__all__ = ["check_meshes", "collectives_in", "device_count", "placement"]

COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")


def placement(buffer):
    """What the trace key records of a device buffer's layout (None: one default device)."""
    sharding = getattr(buffer, "sharding", None)
    if isinstance(sharding, NamedSharding):
        return sharding
    if sharding is not None and getattr(buffer, "committed", False):
        return sharding
    return None

def check_meshes(buffers) -> None:
    """Refuse one graph whose inputs are sharded over different device meshes."""
    meshes = {}
    for buffer in buffers:
        sharding = getattr(buffer, "sharding", None)
        if isinstance(sharding, NamedSharding):
            meshes.setdefault(sharding.mesh, buffer)
    if len(meshes) > 1:
        described = "; ".join(
            f"mesh {dict(mesh.shape)} over devices {[d.id for d in np.ravel(mesh.devices)]}"
            for mesh in meshes)
        raise ValueError(
            f"One xla step mixes tensors sharded over different device meshes ({described}). "
            "Every sharded tensor of a step must come from the same strategy: replicate the "
            "model and shard the batches with one DataParallel/FullySharded object, or move a "
            "tensor with strategy.replicate(t) / strategy.shard(t).")

def device_count(buffers) -> int:
    """How many devices the graph over ``buffers`` runs on (1 without sharded inputs)."""
    count = 1
    for buffer in buffers:
        sharding = getattr(buffer, "sharding", None)
        if sharding is not None:
            count = max(count, len(sharding.device_set))
    return count

def collectives_in(jitted, arguments) -> tuple[str, ...]:
    """The collective operations XLA put into the compiled ``jitted(*arguments)``."""
    text = jitted.lower(*arguments).compile().as_text()
    return tuple(name for name in COLLECTIVES if name in text)
