"""The jax backend: s4tf tensors holding JAX arrays or JAX tracers, computed eagerly.

This is the backend s4tf runs on *inside* JAX's transformations (``jax.jit``,
``jax.grad``, ``jax.vmap``, ``jax.lax.scan``, optax): a tensor handed to them
flattens to a JAX array, comes back into the traced function as a tensor of
this backend around a JAX tracer, and every s4tf op on it calls the lazy
backend's replay kernel (:data:`s4tf.backends.xla.kernels.JAX_KERNELS`, the
kernels that already are JAX) directly, so JAX sees ordinary ``jax.numpy``
calls. Outside a transformation it is an eager backend over ``jax.Array``.
Its :data:`~s4tf.backends.jax.backend.BACKEND` lives in :mod:`.backend`, as
every backend's does; its kernel table (:mod:`.kernels`) is the xla one.
"""
