"""Hyperparameters declared as fields: the constructors they build, their checks, their saving."""

import inspect

import numpy as np
import pytest

import s4tf
from s4tf import optimizers
from s4tf.optimizers.hyperparameters import flag, hyperparameter, non_negative, unit_interval

# S4TF's names and defaults, in S4TF's order (docs/api/optimizers.md).
SIGNATURES = {
    "SGD": "(model, learning_rate: 'float' = 0.01, momentum: 'float' = 0.0, "
           "nesterov: 'bool' = False, decay: 'float' = 0.0) -> 'None'",
    "RMSProp": "(model, learning_rate: 'float' = 0.001, rho: 'float' = 0.9, "
               "epsilon: 'float' = 1e-08, decay: 'float' = 0.0) -> 'None'",
    "AdaGrad": "(model, learning_rate: 'float' = 0.001, initial_accumulator_value: 'float' = 0.1, "
               "epsilon: 'float' = 1e-08) -> 'None'",
    "AdaDelta": "(model, learning_rate: 'float' = 1.0, rho: 'float' = 0.95, "
                "epsilon: 'float' = 1e-06, decay: 'float' = 0.0) -> 'None'",
    "Adam": "(model, learning_rate: 'float' = 0.001, beta1: 'float' = 0.9, beta2: 'float' = 0.999, "
            "epsilon: 'float' = 1e-08, decay: 'float' = 0.0) -> 'None'",
    "AdamW": "(model, learning_rate: 'float' = 0.001, beta1: 'float' = 0.9, "
             "beta2: 'float' = 0.999, epsilon: 'float' = 1e-08, decay: 'float' = 0.0, "
             "weight_decay: 'float' = 0.01) -> 'None'",
}
SIGNATURES["AMSGrad"] = SIGNATURES["RAdam"] = SIGNATURES["Adam"]
SIGNATURES["AdaMax"] = SIGNATURES["Adam"].replace("0.001", "0.002", 1)
# Every optimizer also takes the parameters it trains, keyword-only (param_groups.py).
SIGNATURES = {name: signature.replace(") -> 'None'",
                                      ", *, trainable=None, param_groups=None) -> 'None'")
              for name, signature in SIGNATURES.items()}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_constructors_keep_s4tf_signatures(name):
    cls = getattr(optimizers, name)
    assert str(inspect.signature(cls)) == SIGNATURES[name]
    saved = tuple(p for p in inspect.signature(cls).parameters
                  if p not in ("model", "nesterov", "trainable", "param_groups"))
    assert cls.hyperparameters == saved


def test_arguments_bind_positionally_and_by_keyword_as_written():
    model = [s4tf.ones([2])]
    opt = optimizers.SGD(model, 0.1, 0.9, True, 0.5)
    assert (opt.learning_rate, opt.momentum, opt.nesterov, opt.decay) == (0.1, 0.9, True, 0.5)
    with pytest.raises(TypeError, match=r"SGD.__init__\(\) got an unexpected keyword argument 'lr'"):
        optimizers.SGD(model, lr=0.1)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'model'"):
        optimizers.Adam()


def test_a_subclass_adds_fields_after_its_bases_and_keeps_their_checks():
    class Decoupled(optimizers.SGD):
        shrink: float = hyperparameter(0.1, check=unit_interval)
        lookahead: bool = flag(False)

        def update_parameter(self, param, grad, state, constants):
            param *= 1 - self.shrink
            super().update_parameter(param, grad, state, constants)

    assert list(inspect.signature(Decoupled).parameters) == [
        "model", "learning_rate", "momentum", "nesterov", "decay", "shrink", "lookahead",
        "trainable", "param_groups"]
    assert Decoupled.hyperparameters == ("learning_rate", "momentum", "decay", "shrink")
    assert optimizers.SGD.hyperparameters == ("learning_rate", "momentum", "decay")
    with pytest.raises(ValueError, match="Decoupled: shrink must be between 0 and 1, got 2"):
        Decoupled([s4tf.ones([2])], shrink=2)
    with pytest.raises(ValueError, match="Decoupled: momentum must be >= 0"):
        Decoupled([s4tf.ones([2])], momentum=-1)
    opt = Decoupled([s4tf.ones([2])], learning_rate=1.0, shrink=0.5, lookahead=1)
    assert opt.lookahead is True and "hyper.lookahead" not in opt.state_dict()
    out = opt.update([s4tf.ones([2])], [s4tf.ones([2])], consume=False)
    assert out[0].tolist() == [-0.5, -0.5]
    opt.shrink = 0.25  # plain attributes: assignable between steps, saved as they are then
    assert opt.state_dict()["hyper.shrink"] == 0.25


def test_a_hand_written_init_over_declared_fields_still_works():
    class Fixed(optimizers.Adam):
        def __init__(self, model, rate=0.5):
            super().__init__(model, rate, beta1=0.0)

    opt = Fixed([s4tf.ones([2])])
    assert (opt.learning_rate, opt.beta1, opt.beta2) == (0.5, 0.0, 0.999)
    with pytest.raises(ValueError, match="Fixed: learning_rate must be >= 0"):
        Fixed([s4tf.ones([2])], rate=-1.0)


def test_a_hyperparameter_restored_from_a_state_dict_overrides_the_constructor():
    saved = optimizers.AdamW([s4tf.ones([2])], weight_decay=0.3).state_dict()
    opt = optimizers.AdamW([s4tf.ones([2])])
    opt.load_state_dict(saved)
    assert opt.weight_decay == pytest.approx(0.3)


def test_an_own_check_runs_after_the_number_check():
    def odd(owner, name, value):
        if int(value) % 2 == 0:
            raise ValueError(f"{owner}: {name} must be odd, got {value!r}.")

    class Odd(optimizers.SGD):
        window: float = hyperparameter(3, check=odd)

    assert Odd([s4tf.ones([2])], window=5).window == 5
    with pytest.raises(ValueError, match="Odd: window must be odd, got 4"):
        Odd([s4tf.ones([2])], window=4)
    with pytest.raises(TypeError, match="Odd: window must be a number, got '5'"):
        Odd([s4tf.ones([2])], window="5")


def test_checks_name_the_value_and_the_bound():
    with pytest.raises(ValueError, match=r"X: rate must be >= 0, got -0.5\."):
        non_negative("X", "rate", -0.5)
    with pytest.raises(TypeError, match="X: rate must be a number, got None"):
        unit_interval("X", "rate", None)
    assert non_negative("X", "rate", np.float32(0.5)) is None


def test_an_old_style_hyperparameters_tuple_is_refused_with_the_declarative_fix():
    # Issue 19: hyperparameters are declared as fields, one way only.
    with pytest.raises(TypeError, match=r"OldStyle lists its hyperparameters in a "
                                        r"`hyperparameters` tuple; declare each one as a field"):
        class OldStyle(optimizers.Optimizer):
            hyperparameters = ("learning_rate",)

            def __init__(self, model, learning_rate=0.5):
                self.learning_rate = learning_rate
                super().__init__(model)
