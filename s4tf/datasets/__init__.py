"""Data sets and batching: ``for images, labels in datasets.MNIST().training:``.

Every data set has ``training`` (reshuffled on every pass, one pass per epoch)
and ``validation`` (ordered), both yielding :class:`LabeledBatch` named tuples
of s4tf Tensors: images float32 NHWC in [0, 1] (unless ``normalize=``), labels int32.
Files live under ``$S4TF_DATA_DIR/<name>`` (default ``~/.cache/s4tf``) or an
explicit ``root=``, under their original names; missing ones are downloaded
with SHA-256 verification. :class:`Digits` ships with s4tf and :class:`Shapes` is drawn on the spot;
neither needs a download.

Examples
--------
>>> from s4tf import datasets
>>> digits = datasets.Digits(batch_size=64, seed=0)
>>> for epoch in range(2):
...     for images, labels in digits.training:
...         pass
"""

from . import transforms
from .batching import Batches, LabeledBatch
from .cifar import CIFAR10, CIFAR100
from .dataset import Dataset
from .digits import Digits
from .download import CorruptDataError, MissingDataError
from .image_folder import ImageFolder
from .imagenette import Imagenette
from .mnist import MNIST, FashionMNIST, KuzushijiMNIST, read_idx
from .shapes import Shapes

__all__ = [
    "Batches",
    "CIFAR10",
    "CIFAR100",
    "CorruptDataError",
    "Dataset",
    "Digits",
    "FashionMNIST",
    "ImageFolder",
    "Imagenette",
    "KuzushijiMNIST",
    "LabeledBatch",
    "MNIST",
    "MissingDataError",
    "Shapes",
    "read_idx",
    "transforms",
]
