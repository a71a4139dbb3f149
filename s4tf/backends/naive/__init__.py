"""The naive backend (``s4tf.set_backend("naive")``, the default): eager NumPy on the host.

Its :data:`~s4tf.backends.naive.backend.BACKEND` lives in :mod:`.backend`, as
every backend's does; its kernel table (:mod:`.kernels`) is the shared kernels
of :mod:`s4tf.backends.array_kernels` over NumPy, with the few that NumPy runs
better another way.
"""
