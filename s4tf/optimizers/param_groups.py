"""Which parameters an optimizer trains, and with which hyperparameters.

Every optimizer takes ``trainable=`` (a predicate on the dotted parameter
path, or path prefixes) and ``param_groups=`` (a list of dicts, each with
``"params"`` (prefixes or a predicate) and the hyperparameters that differ
for those parameters). :func:`select` turns them into one entry per parameter,
made once at construction: whether it is trained, and its group (0 for the
optimizer's own hyperparameters). A parameter that is not trained is never
written (no update, no weight decay) and gets no slots; the update hands it
back as it was. A group's hyperparameters are in force, as attributes of the
optimizer, while its ``step_constants`` and its parameters' rule run
(:func:`overridden`), so a rule that reads ``self.weight_decay`` sees the
group's value too.
"""

from __future__ import annotations

import contextlib

from .hyperparameters import number

__all__ = ["Selection", "matches", "overridden", "select"]


def matches(path: str, prefixes) -> bool:
    """Whether dotted ``path`` lies under one of ``prefixes`` (``"head"`` or ``"head."``).

    A prefix names whole path components: ``"head"`` holds ``"head"`` and
    ``"head.weight"`` but not ``"header.weight"``.

    Examples
    --------
    >>> from s4tf.optimizers.param_groups import matches
    >>> matches("head.weight", ["head."]), matches("header.weight", ["head"])
    (True, False)
    """
    for prefix in prefixes:
        prefix = prefix.rstrip(".")
        if not prefix or path == prefix or path.startswith(prefix + "."):
            return True
    return False


def _predicate(owner: str, what: str, spec, paths: list[str]):
    """``spec`` (prefixes, one prefix, or a predicate on the path) as a predicate."""
    if callable(spec):
        return spec
    prefixes = [spec] if isinstance(spec, str) else spec
    if not isinstance(prefixes, list | tuple) or not all(isinstance(p, str) for p in prefixes):
        raise TypeError(
            f"{owner}: {what} must be a function of the parameter's dotted path returning a "
            f"bool, or a list of path prefixes such as ['head.']; received {spec!r}."
        )
    for prefix in prefixes:
        if not any(matches(path, [prefix]) for path in paths):
            tops = sorted({path.split(".")[0] for path in paths})
            raise ValueError(
                f"{owner}: {what} names {prefix!r}, which is no parameter's path or path prefix. "
                f"The model's parameters start with: {', '.join(tops)} (paths as in "
                "s4tf.tree.tree_leaf_paths(model, differentiable=True))."
            )
    return lambda path: matches(path, prefixes)


class Selection:
    """Per parameter: ``trainable[i]`` and ``group_of[i]`` (0: the optimizer's own settings)."""

    __slots__ = ("group_of", "trainable")

    def __init__(self, trainable: list[bool], group_of: list[int]) -> None:
        self.trainable, self.group_of = trainable, group_of


def select(optimizer, paths: list[str], trainable, param_groups) -> Selection | None:
    """The :class:`Selection` of ``optimizer``'s parameters; None when every one is trained
    with the optimizer's own settings (the common case costs nothing per update).

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.optimizers.param_groups import select
    >>> opt = s4tf.optimizers.SGD({"a": s4tf.ones([1]), "b": s4tf.ones([1])})
    >>> chosen = select(opt, ["a", "b"], ["b"], [{"params": "b", "learning_rate": 0.5}])
    >>> chosen.trainable, chosen.group_of
    ([False, True], [0, 1])
    """
    owner = type(optimizer).__name__
    if trainable is None and not param_groups:
        return None
    keep = [True] * len(paths)
    if trainable is not None:
        predicate = _predicate(owner, "trainable", trainable, paths)
        keep = [_answer(owner, "trainable", predicate, path) for path in paths]
        if not any(keep):
            raise ValueError(
                f"{owner}: trainable= selects none of the model's {len(paths)} parameters "
                f"(the first is {paths[0]!r}); select at least one, or freeze less."
            )
    group_of = [0] * len(paths)
    for k, group in enumerate(_checked_groups(optimizer, param_groups or []), start=1):
        predicate = _predicate(owner, f"param_groups[{k - 1}]['params']", group["params"], paths)
        for i, path in enumerate(paths):
            if _answer(owner, "a param_groups predicate", predicate, path):
                if group_of[i]:
                    raise ValueError(
                        f"{owner}: parameter {path!r} is in param_groups[{group_of[i] - 1}] and "
                        f"param_groups[{k - 1}]; put each parameter in at most one group."
                    )
                group_of[i] = k
    return Selection(keep, group_of)


def _answer(owner, what, predicate, path) -> bool:
    answer = predicate(path)
    if not isinstance(answer, bool):
        raise TypeError(f"{owner}: {what} returned {answer!r} for {path!r}; it must return a bool.")
    return answer


def _checked_groups(optimizer, groups) -> list[dict]:
    owner = type(optimizer).__name__
    if not isinstance(groups, list | tuple):
        raise TypeError(f"{owner}: param_groups must be a list of dicts such as "
                        f"[{{'params': 'head.', 'learning_rate': 1e-3}}]; received {groups!r}.")
    for k, group in enumerate(groups):
        if not isinstance(group, dict) or "params" not in group:
            raise TypeError(f"{owner}: param_groups[{k}] must be a dict with a 'params' entry "
                            f"(path prefixes or a predicate); received {group!r}.")
        for name, value in group.items():
            if name == "params":
                continue
            if name not in optimizer.hyperparameters:
                raise ValueError(
                    f"{owner}: param_groups[{k}] sets {name!r}, which is not one of its "
                    f"hyperparameters ({', '.join(optimizer.hyperparameters)})."
                )
            if not callable(value):  # a schedule is checked when it is read
                number(owner, f"param_groups[{k}]['{name}']", value)
                check = optimizer._fields[name].check
                if check is not None:
                    check(owner, f"param_groups[{k}]['{name}']", value)
    return list(groups)


@contextlib.contextmanager
def overridden(optimizer, group: dict):
    """``optimizer``'s hyperparameters set to ``group``'s (all but ``"params"``) meanwhile.

    Written straight into the instance's ``__dict__``, where the scheduled
    attributes read them (see :mod:`.hyperparameters`), and put back after.
    """
    state = optimizer.__dict__
    names = [name for name in group if name != "params"]
    saved = {name: state[name] for name in names if name in state}
    for name in names:
        state[name] = group[name]
    try:
        yield
    finally:
        for name in names:
            if name in saved:
                state[name] = saved[name]
            else:
                del state[name]
