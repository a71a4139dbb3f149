"""Captured steps: ``s4tf.xla.compile(fn)`` replays a step's compiled program without its Python.

:mod:`.calls` reads a call's inputs and their signature, :mod:`.scalars`
follows the Python numbers a step computes, :mod:`.recording` runs the body
under the lazy backend's listeners and learns where every input of the
compiled program comes from and where every output goes, :mod:`.replay` feeds
the program new inputs, and :mod:`.step` decides, call by call, whether to
replay, to verify or to capture again.
"""
