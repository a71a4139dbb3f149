"""One layer object in two fields: the warning that they will be trained apart.

Models are values: an update returns new layers field by field, so a layer
object placed in two fields (weight tying as PyTorch users write it) becomes
two independent layers after the first update. :func:`warn_shared_layers`,
run when an optimizer is made, finds such objects by identity and warns with
:class:`UntiedParameterWarning`, naming both paths and ``s4tf.tie``, which
keeps one value through updates.
"""

from __future__ import annotations

import warnings

from ..tree import join_path, tree_children, tree_leaves

__all__ = ["UntiedParameterWarning", "warn_shared_layers"]


class UntiedParameterWarning(UserWarning):
    """One layer object sits in two fields of a model: an update unties them.

    Examples
    --------
    >>> import warnings, s4tf
    >>> dense = s4tf.layers.Dense(2, 2)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     opt = s4tf.optimizers.SGD([dense, dense])
    >>> caught[0].category.__name__
    'UntiedParameterWarning'
    """


def warn_shared_layers(model) -> None:
    """Warn (:class:`UntiedParameterWarning`) for each parameter-holding object found at two
    paths of ``model``."""
    seen: dict[int, str] = {}
    for first, second in _repeats(model, "", seen, []):
        warnings.warn(
            f"the same {type(_at(model, first)).__name__} object is both {first!r} and "
            f"{second!r} of this {type(model).__name__}. s4tf models are values: the first "
            "update gives each field its own new layer, so they will be trained apart. To "
            f"keep one value, build the model with one of them and tie the other with "
            f"s4tf.tie(model, {second!r}, {first!r}); to train them apart, give each field its "
            "own layer (copy.deepcopy).",
            UntiedParameterWarning, stacklevel=4)


def _repeats(value, path, seen, out):
    kind, children = tree_children(value)
    if kind is None or kind == "cell":
        return out
    if kind == "node":
        where = seen.get(id(value))
        if where is not None:
            if tree_leaves(value, differentiable=True):  # only parameters can be untied
                out.append((where, path or "value"))
            return out
        seen[id(value)] = path or "value"
    for key, child, differentiable in children:
        if differentiable:
            _repeats(child, join_path(path, key), seen, out)
    return out


def _at(value, path):
    for part in path.split("."):
        kind, children = tree_children(value)
        value = next(child for key, child, _ in children if str(key) == part)
    return value
