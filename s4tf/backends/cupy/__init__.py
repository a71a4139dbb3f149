"""The eager CuPy backend (``s4tf.set_backend("cupy")``): the shared array kernels on the GPU.

:mod:`.backend` holds its :data:`~s4tf.backends.cupy.backend.BACKEND`,
:class:`~s4tf.backends.array_module_backend.ArrayModuleBackend` over ``cupy``;
:mod:`.kernels` the kernels where CuPy differs from NumPy (its own
scatter-add). Machines without a GPU can test it with NumPy standing in for
CuPy: set ``S4TF_CUPY_STANDIN=numpy`` before the backend is first used (the
test suite does). The stand-in (:mod:`.standin`) has an array type of its own
that refuses implicit host conversion and host arrays in device functions, as
CuPy does, so a kernel that calls ``np`` instead of ``xp`` or allocates on the
host fails here as it would on a GPU. It is a separate backend object, so
mixing it with naive tensors still raises the two-backends error, as on a
real GPU.

Importing this package imports neither CuPy nor the stand-in: the backend
registry imports :mod:`.backend` when the backend is first used.
"""
