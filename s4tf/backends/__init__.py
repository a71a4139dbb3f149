"""Backends: the array libraries that run s4tf's kernels (NumPy, CuPy, lazy JAX/XLA).

:mod:`.base` holds the registry and the switch (``s4tf.set_backend``); each
backend imports its array library only when first used.
"""
