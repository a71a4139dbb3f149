"""``s4tf.save`` and ``s4tf.load``: models as safetensors files.

The file holds one tensor per parameter under its dotted field path
(``conv1.filter``, ``blocks.0.bias``) and, in the safetensors metadata, the
model's structure as JSON (see :mod:`s4tf.checkpoint.structure`). Writing goes
to a temporary file in the same directory that is renamed over the target only
when complete, so a crash never leaves a half-written checkpoint (see
:mod:`s4tf.checkpoint.atomic`). Reading accepts only regular files.
"""

from __future__ import annotations

import json
import os
import stat

import numpy as np

from ..tensor import Tensor, from_numpy
from .atomic import write_atomically
from .key_report import mismatch_lines
from .structure import CheckpointError, decode, encode

__all__ = ["load", "save"]

MODEL_FORMAT = "s4tf.model/1"


def _as_numpy(value) -> np.ndarray:
    array = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
    # np.ascontiguousarray would turn a 0-d array into shape (1,).
    return array if array.flags.c_contiguous else np.ascontiguousarray(array)


def write_file(path, tensors: dict, metadata: dict) -> None:
    """Write ``tensors`` (Tensors or arrays) and string ``metadata`` atomically."""
    from safetensors.numpy import save as to_bytes

    data = to_bytes({k: _as_numpy(v) for k, v in tensors.items()}, metadata=metadata)
    write_atomically(os.fspath(path), data)


def encode_into(tensors: dict, value, prefix: str = "", **options) -> str:
    """Add ``value``'s tensors to ``tensors`` under ``prefix``; return its structure as JSON.

    ``options`` go to :func:`~s4tf.checkpoint.structure.encode`. Every section
    of a file (the model of ``s4tf.save``; the model and the optimizer state of
    a training state) is written through here, so they share one key scheme.
    """
    found: dict = {}
    structure = encode(value, found, **options)
    tensors.update({prefix + key: array for key, array in found.items()})
    return json.dumps(structure)


def under(arrays: dict, prefix: str) -> dict:
    """The entries of ``arrays`` whose keys start with ``prefix``, without it."""
    return {key[len(prefix):]: array for key, array in arrays.items() if key.startswith(prefix)}


def read_arrays(path, written_by: str = "s4tf.save / s4tf.save_training_state") -> tuple[dict, dict]:
    """``(arrays, metadata)`` of any safetensors file (NumPy arrays, string metadata).

    ``written_by`` names what should have written the file, for the error
    message when it cannot be read.
    """
    from safetensors import safe_open

    path = os.fspath(path)
    _check_regular_file(path, written_by)
    try:
        # safetensors parses a JSON header and raw little-endian buffers: it
        # cannot run code, unlike pickle-based formats.
        with safe_open(path, framework="numpy") as file:
            metadata = dict(file.metadata() or {})
            arrays = {key: file.get_tensor(key) for key in file.keys()}
    except Exception as error:
        raise CheckpointError(
            f"{path!r} is not a safetensors file s4tf can read ({error}). It should be "
            f"written by {written_by}; pickle files (.pt, .pkl, .bin) are never loaded "
            "because unpickling can run arbitrary code."
        ) from None
    return arrays, metadata


def read_file(path, expected_format: str) -> tuple[dict, dict]:
    """``(arrays, metadata)`` of an s4tf safetensors file of ``expected_format``."""
    path = os.fspath(path)
    arrays, metadata = read_arrays(path)
    found = metadata.get("format")
    if found != expected_format:
        raise CheckpointError(
            f"{path!r} holds {found or 'no s4tf format tag'!r}, expected {expected_format!r}"
            + (" (use s4tf.load_training_state for training states)"
               if found and found.startswith("s4tf.training_state") else "")
            + (" (use s4tf.load for model files)" if found == MODEL_FORMAT else "")
            + "."
        )
    return arrays, metadata


def _check_regular_file(path: str, written_by: str = "s4tf.save") -> None:
    # Opening a FIFO would wait for a writer forever, a device could stream
    # without end: only regular files (or links to them) are read.
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"No checkpoint at {path!r}; check the path ({written_by} "
                                "writes it).") from None
    if stat.S_ISREG(mode):
        return
    raise CheckpointError(
        f"{path!r} is {file_kind(mode)}, not a checkpoint file; pass the path of a file written "
        f"by {written_by}."
    )


def file_kind(mode: int) -> str:
    """What a file of ``os.stat`` mode ``mode`` is, for an error that refuses to read it."""
    return ("a directory" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")


def _json(metadata: dict, name: str, path):
    try:
        return json.loads(metadata[name])
    except (KeyError, TypeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{path!r} has a damaged {name!r} entry in its metadata ({error}).") from None
    except RecursionError:
        raise CheckpointError(
            f"{path!r} has a {name!r} entry nested too deeply to read: s4tf never writes such "
            "files; it is damaged or was crafted."
        ) from None


def save(model, path) -> None:
    """Write ``model``'s parameters and structure to the safetensors file ``path``.

    Keys are dotted field paths (``conv1.filter``; list elements by index, dict
    entries by key). The metadata records classes by qualified name, the
    non-differentiable fields as JSON and activations by registry name, so that
    :func:`load` can rebuild the model without ``like=``. ``State`` cells
    (running statistics) are saved too. The write is atomic.

    Examples
    --------
    >>> import s4tf, tempfile, os
    >>> class Affine(s4tf.Differentiable):
    ...     w: s4tf.Tensor
    ...     b: float
    >>> path = os.path.join(tempfile.mkdtemp(), "affine.safetensors")
    >>> s4tf.save(Affine(s4tf.ones([2]), 0.5), path)
    >>> s4tf.load(path).b
    0.5
    """
    tensors: dict = {}
    structure = encode_into(tensors, model)
    write_file(path, tensors, {"format": MODEL_FORMAT, "structure": structure})


def load(path, like=None, *, strategy=None):
    """A new model holding the weights saved in ``path``.

    Parameters
    ----------
    path : str or os.PathLike
        A file written by :func:`save`.
    like : optional
        A model of the same structure (built by your code); the result has its
        classes, static fields and backends and the file's weights. Every key's
        shape and dtype is checked, and a mismatch raises a ``ValueError``
        listing the missing, unexpected and mis-shaped keys. Without ``like``,
        the model is rebuilt from the recorded structure; its classes must be
        defined in the running program (nothing is imported or unpickled).
        Then every tensor of the file must be used, a differentiable field
        must hold floating point, and a library layer's tensors must fit each
        other (a bias of shape ``(1,)`` or a transposed weight is refused):
        a :class:`CheckpointError` names the file and the field.
    strategy : s4tf.distributed.Strategy, optional
        Lay the loaded model out on the strategy's devices
        (``strategy.replicate``), as the saved one was: a file holds one copy
        of every tensor, whatever devices it was saved from.

    Examples
    --------
    >>> import s4tf, tempfile, os
    >>> class Scale(s4tf.Differentiable):
    ...     w: s4tf.Tensor
    >>> path = os.path.join(tempfile.mkdtemp(), "scale.safetensors")
    >>> s4tf.save(Scale(s4tf.Tensor([2.0, 3.0])), path)
    >>> s4tf.load(path, like=Scale(s4tf.zeros([2]))).w.tolist()
    [2.0, 3.0]
    """
    arrays, metadata = read_file(path, MODEL_FORMAT)
    model = restore(_json(metadata, "structure", path), arrays, like, path)
    return model if strategy is None else strategy.replicate(model)


def restore(structure, arrays: dict, like, path, prefix: str = ""):
    """The value described by ``structure`` over ``arrays[prefix + key]``, checked against ``like``."""
    if prefix:
        arrays = under(arrays, prefix)
    if like is None:
        return decode_section(structure, arrays, _tensor_on_current_backend, path, prefix)
    expected: dict = {}
    objects: list = []
    like_structure = encode(like, expected, objects=objects)
    _check_keys(expected, arrays, path, type(like).__name__)

    def make_tensor(array, key):
        template = expected[key]
        return from_numpy(array, like=template)

    return decode(like_structure, arrays, make_tensor, objects=objects)


class _Reads(dict):
    """A file's arrays, remembering the keys decoding read."""

    def __init__(self, arrays: dict):
        super().__init__(arrays)
        self.read: set = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)


def decode_section(structure, arrays: dict, make_tensor, path, prefix: str = "",
                   differentiable: bool | None = None):
    """:func:`~s4tf.checkpoint.structure.decode` over one section of a file, which it must use whole.

    ``arrays`` are the section's (``prefix`` removed). A tensor the structure
    never names is refused as an unexpected key, and every error names the file.
    """
    reads = _Reads(arrays)
    try:
        value = decode(structure, reads, make_tensor, differentiable=differentiable)
    except CheckpointError as error:
        raise CheckpointError(f"Cannot load {os.fspath(path)!r}: {error}") from None
    refuse_unexpected(sorted(prefix + key for key in set(arrays) - reads.read), path)
    return value


def refuse_unexpected(keys: list, path) -> None:
    """Raise :class:`CheckpointError` listing ``keys``: tensors of the file nothing reads."""
    if keys:
        raise CheckpointError("\n".join([
            f"The checkpoint {os.fspath(path)!r} holds tensors its recorded structure has no "
            "place for:",
            *mismatch_lines([], keys, [], unexpected_means="in the file, not in the model it "
                            "describes"),
            "s4tf never writes such files: it was edited, damaged or written by another "
            "program. Save the model again with s4tf.save (or s4tf.save_training_state).",
        ]))


def _tensor_on_current_backend(array, key):
    return from_numpy(array)


def _spec(value) -> tuple[tuple[int, ...], str]:
    if isinstance(value, Tensor):
        return tuple(value.shape), value.dtype.name
    array = np.asarray(value)
    return tuple(array.shape), array.dtype.name


def _check_keys(expected: dict, arrays: dict, path, model_name: str) -> None:
    missing = sorted(set(expected) - set(arrays))
    unexpected = sorted(set(arrays) - set(expected))
    misshaped = []
    for key in sorted(set(expected) & set(arrays)):
        want, got = _spec(expected[key]), _spec(arrays[key])
        if want != got:
            misshaped.append(f"{key}: file has {got[1]} {got[0]}, model expects {want[1]} {want[0]}")
    if not (missing or unexpected or misshaped):
        return
    lines = [f"The checkpoint {os.fspath(path)!r} does not fit the {model_name} passed as like=:",
             *mismatch_lines(missing, unexpected, misshaped,
                             missing_means="in the model, not in the file",
                             unexpected_means="in the file, not in the model")]
    lines.append("Build like= with the same architecture and hyperparameters as the saved "
                 "model, or load without like= to rebuild the saved one.")
    raise CheckpointError("\n".join(lines))
