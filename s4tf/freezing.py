"""``s4tf.freeze`` and ``s4tf.unfreeze``: parameters that differentiation and optimizers skip.

A frozen parameter is a field marked ``no_derivative`` on one instance. The
mark lives in the instance's class: freezing fields of a ``Conv2D`` gives the
value a subclass of ``Conv2D`` (made once per class and set of fields, with
the same name, fields, ``__call__`` and ``TangentVector``) whose frozen fields
are declared ``no_derivative``. So everything that works field by field sees
it with no change of its own: differentiation treats the frozen tensors as
constants (their backward pass is not computed at all), an optimizer built on
the model has no slot for them and never writes them, ``parameter_count`` and
``summary`` count them non-trainable, and the mark survives every rebuild
(``moved``, ``replace``, ``s4tf.tree.at``, ``to_backend``, copy-on-write
updates, checkpoints loaded with ``like=`` a frozen model). Paths do not
change, so checkpoints and optimizer states keep their keys; ``isinstance``
holds. :func:`unfreeze` gives the instances their own class back.
"""

from __future__ import annotations

import dataclasses

from .differentiable import Differentiable, no_derivative
from .tree import at, get, is_leaf, join_path, tree_children
from .tree.registry import new_instance

__all__ = ["freeze", "frozen_paths", "unfreeze"]

# (unfrozen class, frozen field names) -> the frozen subclass. Classes live as long as
# the program; so do these.
_CLASSES: dict = {}


def _base(cls: type) -> type:
    return cls.__dict__.get("_s4tf_unfrozen", cls)


def _frozen_fields(cls: type) -> frozenset:
    return cls.__dict__.get("_s4tf_frozen_fields", frozenset())


def _frozen_class(base: type, fields: frozenset) -> type:
    cls = _CLASSES.get((base, fields))
    if cls is not None:
        return cls
    by_name = {field.name: field for field in dataclasses.fields(base)}
    namespace = {"__annotations__": {}, "__module__": base.__module__,
                 # Its own qualified name, so that checkpoints name it and find it again.
                 "__qualname__": f"{base.__qualname__}.frozen[{','.join(sorted(fields))}]",
                 "TangentVector": base.TangentVector,  # gradients keep their type
                 "_s4tf_frozen_fields": fields, "_s4tf_unfrozen": base}
    for name in fields:
        field = by_name[name]
        namespace["__annotations__"][name] = field.type
        namespace[name] = no_derivative(default=field.default,
                                        default_factory=field.default_factory,
                                        init=field.init, repr=field.repr)
    cls = _CLASSES[(base, fields)] = type(base.__name__, (base,), namespace)
    return cls


def _with_frozen(node, fields: frozenset):
    """``node`` (a Differentiable) as an instance whose frozen fields are ``fields``."""
    base = _base(type(node))
    cls = _frozen_class(base, fields) if fields else base
    return node if cls is type(node) else new_instance(cls, node.__dict__)


def _trainable_fields(cls: type) -> frozenset:
    return frozenset(name for name in cls._s4tf_all_fields
                     if name not in _base(cls)._s4tf_no_derivative)


def freeze(model, *paths: str):
    """``model`` with the parameters under ``paths`` frozen: a new value.

    A path names a layer (everything in it is frozen), a field holding a
    list or dict of layers, or one parameter (``"head.bias"``); with no
    paths, the whole model. Frozen parameters are constants to
    differentiation (their gradient is not computed), optimizers made on the
    frozen model have no slots for them and never write them, and
    :func:`parameter_count` and :func:`summary` count them as
    non-trainable. Paths, values and classes (for ``isinstance``) stay as
    they were; ``model`` itself is unchanged. :func:`unfreeze` undoes it.
    Make a new optimizer after freezing or unfreezing: it is built for the
    parameters it trains.

    Parameters
    ----------
    model : Differentiable
    *paths : str
        Dotted paths (``"backbone"``, ``"blocks.3"``, ``"head.weight"``); a
        trailing dot is allowed.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf import layers
    >>> model = layers.Sequential(layers.Dense(4, 3), layers.Dense(3, 2))
    >>> frozen = s4tf.freeze(model, "layers.0")
    >>> s4tf.parameter_count(model), s4tf.parameter_count(frozen)
    (23, 8)
    >>> isinstance(frozen.layers[0], layers.Dense), s4tf.frozen_paths(frozen)
    (True, ['layers.0.weight', 'layers.0.bias'])
    """
    if not isinstance(model, Differentiable):
        raise TypeError(f"freeze() takes a model (an s4tf.Differentiable), got "
                        f"{type(model).__name__}.")
    for path in paths or ("",):
        if not isinstance(path, str):
            raise TypeError(f"freeze(): paths are dotted strings such as 'backbone'; "
                            f"received {path!r}.")
        path = path.rstrip(".")
        target = get(model, path)
        if isinstance(target, Differentiable) and tree_children(target)[0] == "node":
            fields = _frozen_fields(type(target)) | _trainable_fields(type(target))
            model = at(model, path, _with_frozen(target, fields))
            continue
        parent_path, _, name = path.rpartition(".")
        parent = get(model, parent_path)
        if not (isinstance(parent, Differentiable) and name in type(parent)._s4tf_all_fields):
            raise ValueError(
                f"freeze(): {path!r} is {'a parameter' if is_leaf(target) else 'a value'} "
                f"inside a {type(parent).__name__}, not a field of a layer; freeze the layer "
                f"that holds it ({parent_path or 'the whole model'!r}) instead."
            )
        if name in _base(type(parent))._s4tf_no_derivative:
            continue  # never differentiated: nothing to freeze
        model = at(model, parent_path, _with_frozen(parent, _frozen_fields(type(parent)) | {name}))
    return model


def unfreeze(model, *paths: str):
    """``model`` with the parameters under ``paths`` (all, with none) trainable again.

    Undoes :func:`freeze`: a path unfreezes every frozen parameter at or
    under it. Returns a new value; ``model`` is unchanged.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf import layers
    >>> frozen = s4tf.freeze(layers.Sequential(layers.Dense(4, 3), layers.Dense(3, 2)))
    >>> s4tf.parameter_count(frozen), s4tf.parameter_count(s4tf.unfreeze(frozen, "layers.1"))
    (0, 8)
    >>> type(s4tf.unfreeze(frozen).layers[0]) is layers.Dense
    True
    """
    prefixes = [p.rstrip(".") for p in paths] or None
    for prefix in prefixes or ():
        get(model, prefix)  # a KeyError naming a misspelt part
        # A prefix inside a field frozen whole: freeze that field's parts one by one
        # instead, one level at a time, until the prefix is one of them.
        while (outer := next((f for f in frozen_paths(model) if prefix.startswith(f + ".")),
                             None)) is not None:
            parts = [join_path(outer, key) for key, _, _ in tree_children(get(model, outer))[1]]
            model = freeze(_thaw(model, "", [outer]), *parts)
    return _thaw(model, "", prefixes)


def _under(path: str, prefixes) -> bool:
    return prefixes is None or any(not p or path == p or path.startswith(p + ".")
                                   for p in prefixes)


def _thaw(value, path, prefixes):
    kind, children = tree_children(value)
    if kind is None or kind == "cell":
        return value
    new = [(key, _thaw(child, join_path(path, key), prefixes)) for key, child, _ in children]
    changed = any(n is not c for (_, n), (_, c, _) in zip(new, children, strict=True))
    if kind == "node":
        cls = type(value)
        frozen = _frozen_fields(cls)
        keep = frozenset(f for f in frozen if not _under(join_path(path, f), prefixes))
        target = _frozen_class(_base(cls), keep) if keep else _base(cls)
        if target is cls and not changed:
            return value
        return new_instance(target, new)
    if not changed:
        return value
    items = [child for _, child in new]
    if kind == "list":
        return items
    if kind == "tuple":
        return tuple(items) if type(value) is tuple else type(value)(*items)
    return dict(new)


def frozen_paths(model) -> list[str]:
    """The dotted paths of ``model``'s frozen parameters (and frozen fields), in field order.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.frozen_paths(s4tf.freeze(s4tf.layers.Dense(2, 2), "bias"))
    ['bias']
    """
    out: list[str] = []
    _collect(model, "", out)
    return out


def _collect(value, path, out):
    kind, children = tree_children(value)
    if kind is None or kind == "cell":
        return
    frozen = _frozen_fields(type(value)) if kind == "node" else frozenset()
    for key, child, _ in children:
        child_path = join_path(path, key)
        if key in frozen:
            out.append(child_path)
        else:
            _collect(child, child_path, out)
