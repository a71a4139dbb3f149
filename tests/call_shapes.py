"""Call shapes for the copy-on-write suites: how a model reaches an update, where the result goes.

The call site itself decides whether an update may consume its argument
(``s4tf.cow.callsite``), so each shape is real source, run inside a function or
at module level (a notebook cell), never through a helper that makes the call.
"""

import numpy as np
from aliasing_models import snapshot, storage_ids

import s4tf

# How each entry point is called; {value} is the expression that passes the model.
ENTRY_CALLS = {
    "update": "opt.update({value}, g)",
    "update-keywords": "opt.update(model={value}, grads=g)",
    "function": "s4tf.moved({value}, along=g)",
    "method": "{value}.moved(along=g)",
}


class Holder:
    """An object holding a model in an attribute (``self.model``)."""


class Shape:
    """One call shape and what it must do.

    ``source`` is where the model is before the call; ``result`` where the
    update's result ends up; ``kept`` the places that must still hold the old
    model, valid and unchanged; ``consumed`` the names that must be consumed;
    ``in_place`` True (must write in place), False (must copy) or None (either).
    """

    def __init__(self, setup, statement, source, result, kept=(), consumed=(), in_place=None):
        self.setup, self.statement, self.source, self.result = setup, statement, source, result
        self.kept, self.consumed, self.in_place = tuple(kept), tuple(consumed), in_place


SHAPES = {
    "rebind-name": Shape("model = make()", "model = {call:model}", "model", "model",
                         in_place=True),
    "new-name": Shape("model = make()", "new = {call:model}", "model", "new",
                      consumed=["model"], in_place=True),
    "same-attribute": Shape("holder = Holder()\nholder.model = make()",
                            "holder.model = {call:holder.model}", "holder.model", "holder.model"),
    "same-item": Shape("models = [make()]\ni = 0", "models[i] = {call:models[i]}", "models[i]",
                       "models[i]"),
    "same-key": Shape("table = {'m': make()}", "table['m'] = {call:table['m']}", "table['m']",
                      "table['m']"),
    "from-list": Shape("models = [make()]", "m = {call:models[0]}", "models[0]", "m",
                       kept=["models[0]"], in_place=False),
    "from-dict": Shape("table = {'m': make()}", "m = {call:table['m']}", "table['m']", "m",
                       kept=["table['m']"], in_place=False),
    "from-attribute": Shape("holder = Holder()\nholder.model = make()",
                            "m = {call:holder.model}", "holder.model", "m",
                            kept=["holder.model"], in_place=False),
    "into-another-item": Shape("models = [make(), None]", "models[1] = {call:models[0]}",
                               "models[0]", "models[1]", kept=["models[0]"], in_place=False),
    "temporary": Shape("", "m = {call:make()}", None, "m"),
}


def source(shape: Shape, entry: str, alias: bool) -> str:
    """The code of one call: set-up, observation of the model, the call."""
    statement, call = shape.statement, ENTRY_CALLS[entry]
    head, _, rest = statement.partition("{call:")
    value, _, tail = rest.partition("}")
    lines = [shape.setup] if shape.setup else []
    if shape.source is not None:
        lines.append(f"before = observe({shape.source})")
        if alias:
            lines.append(f"alias = {shape.source}")
    lines.append(head + call.format(value=value) + tail)
    return "\n".join(lines)


def run(shape: Shape, entry: str, scope: str, alias: bool, make, opt, g) -> dict:
    """Run the call in ``scope`` ("function" or "module"); the names it leaves."""
    code = source(shape, entry, alias)
    names = {"make": make, "opt": opt, "g": g, "Holder": Holder, "s4tf": s4tf,
             "observe": observe}
    if scope == "module":
        exec(code, names)
        return names
    body = "\n".join("    " + line for line in code.splitlines())
    exec(f"def probe(make, opt, g, Holder, s4tf, observe):\n{body}\n    return locals()\n", names)
    return names["probe"](make, opt, g, Holder, s4tf, observe)


def observe(model):
    return snapshot(model), storage_ids(model)


def check(shape: Shape, alias: bool, names: dict, expected) -> None:
    """Everything ``shape`` promises, for a run that left ``names``."""
    values = lambda expression: snapshot(eval(expression, {}, names))  # noqa: E731
    for got, want in zip(values(shape.result), snapshot(expected), strict=True):
        np.testing.assert_array_equal(got, want)
    kept = list(shape.kept) + (["alias"] if alias and shape.source is not None else [])
    before = names.get("before")
    for expression in kept:
        old = eval(expression, {}, names)
        assert not s4tf.cow.consumed.is_consumed(old), f"{expression} was consumed"
        for got, want in zip(snapshot(old), before[0], strict=True):
            np.testing.assert_array_equal(got, want)
    for name in () if alias else shape.consumed:
        assert s4tf.cow.consumed.is_consumed(names[name]), f"{name} was not consumed"
    in_place = False if alias else shape.in_place
    if in_place is not None and before is not None:
        same = storage_ids(eval(shape.result, {}, names)) == before[1]
        assert same == in_place, "updated in place" if same else "copied"
