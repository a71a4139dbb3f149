"""s4tf: Swift for TensorFlow's ideas in Python.

Immutable value-semantic layers, automatic differentiation of any Differentiable
value, copy-on-write optimizers, and one Tensor API over NumPy, CuPy and a lazy
XLA tensor. The documentation site (``docs/``) is the public contract this
package keeps; ``HOW_IT_WORKS.md`` beside this file explains the machinery.
"""

import sys as _sys
from types import ModuleType as _ModuleType

# Tensor first: the op library and the AD engine are built on it.
from .tensor import Tensor

# isort: split
from . import (
    capture,
    checkpoint,
    datasets,
    distributed,
    exporting,
    initializers,
    interop,
    layers,
    models,
    nn,
    optimizers,
    precision,
    random,
)
from .activations import (
    elu,
    gelu,
    hard_sigmoid,
    hard_swish,
    identity,
    leaky_relu,
    log_sigmoid,
    mish,
    relu,
    relu6,
    selu,
    softplus,
    softsign,
    swish,
)
from .autodiff import (
    CustomDerivative,
    NonDifferentiableError,
    ZeroDerivativeWarning,
    derivative,
    differential,
    gradient,
    hessian,
    jacobian,
    linear_transpose,
    pullback,
    remat,
    value_with_derivative,
    value_with_differential,
    value_with_gradient,
    value_with_pullback,
    vmap,
    without_derivative,
)
from .backends import xla
from .backends.base import backend, barrier, get_backend, set_backend
from .checkpoint import CheckpointError, load, load_training_state, save, save_training_state
from .cow.consumed import ConsumedValueError
from .creation import arange, eye, full, ones, ones_like, zeros, zeros_like
from .differentiable import Differentiable, State, moved, no_derivative, replace
from .dtypes import DType, bfloat16, float16, float32, float64, int32, int64
from .dtypes import bool_ as bool  # noqa: A001  (s4tf.bool, as in the contract)
from .exporting import export
from .freezing import freeze, frozen_paths, unfreeze
from .interop import from_dlpack, from_jax, to_jax
from .layers import Layer
from .learning_phase import (
    InferencePhaseWarning,
    current_learning_phase,
    inference,
    learning_phase,
    training,
)
from .losses import (
    categorical_hinge_loss,
    cosine_similarity,
    hinge_loss,
    huber_loss,
    kullback_leibler_divergence,
    l1_loss,
    l2_loss,
    log_cosh_loss,
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_squared_error,
    mean_squared_logarithmic_error,
    poisson_loss,
    sigmoid_cross_entropy,
    softmax_cross_entropy,
    squared_hinge_loss,
)
from .ops import (
    abs,
    argmax,
    argmin,
    broadcast_to,
    cast,
    ceil,
    clip,
    concat,
    cos,
    exp,
    expand_dims,
    expm1,
    floor,
    gather,
    log,
    log1p,
    log_softmax,
    logical_and,
    logical_not,
    logical_or,
    matmul,
    maximum,
    mean,
    minimum,
    one_hot,
    pad,
    reduce_logsumexp,
    reshape,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    softmax,
    split,
    sqrt,
    square,
    squeeze,
    stack,
    tan,
    tanh,
    transpose,
    variance,
    where,
)
from .optimizers.sharing import UntiedParameterWarning
from .summary import parameter_count, summary
from .training_loop import TrainingLoop
from .transfer import to_backend
from .tree import tree_flatten, tree_leaves, tree_map, tree_unflatten
from .tying import tie

# isort: split
# s4tf.callbacks is its own module (so `from s4tf.callbacks import EarlyStopping` works),
# re-exporting s4tf.training_loop.callbacks.
from . import callbacks

# Importing the submodule s4tf.differentiable (above) bound that name to the module;
# the contract's s4tf.differentiable is the custom-derivative decorator.
from .autodiff import differentiable  # noqa: F811

# s4tf.xla is the lazy backend's package (as os.path is posixpath): registered
# under its public name too, so `import s4tf.xla` and warning filters such as
# "ignore::s4tf.xla.RecompilationWarning" find it.
_sys.modules[f"{__name__}.xla"] = xla
# Captured steps know models and optimizers, so they live above the backend
# (s4tf.capture); s4tf.xla names them, attached here where both are below.
xla.compile, xla.CaptureMismatchWarning = capture.compile, capture.CaptureMismatchWarning
xla.CaptureError = capture.CaptureError
xla.__all__ = sorted([*xla.__all__, "CaptureError", "CaptureMismatchWarning", "compile"])

__version__ = "0.1.0"

# The public names are those imported above: __all__ is read from them, so no list
# repeats them. Importing from a submodule also binds that submodule here
# (s4tf.ops, s4tf.tensor, ...); of the modules, only these are public.
_PUBLIC_MODULES = (callbacks, checkpoint, datasets, distributed, exporting, initializers, interop,
                   layers, models, nn, optimizers, precision, random, xla)
__all__ = sorted(
    name for name, value in globals().items()
    if not name.startswith("_")
    and (not isinstance(value, _ModuleType) or value in _PUBLIC_MODULES)
)
