"""Data augmentation and preprocessing on NumPy image batches (NHWC), or one image (HWC).

Every transform works on a whole batch at once: crops are strided views
gathered in one copy, flips one masked copy, resizes one vectorised bilinear
gather, with no Python loop over the images; so augmenting keeps up with
training on one core (``benchmarks/augmentation.py``). The same object
applies to a single ``(height, width, channels)`` image, which makes the
training preprocessing reusable at inference::

    augment = transforms.Compose([transforms.RandomCrop(32, padding=4),
                                  transforms.RandomFlip(),
                                  transforms.Normalize(mean, std)])
    data = datasets.Batches.from_arrays(x, y, batch_size=128, shuffle=True,
                                        transform=augment)
    preprocess = augment.deterministic()      # only Normalize is left
    logits = model(s4tf.Tensor(preprocess(image)[None]))

Randomness: a transform made with ``seed=n`` draws from its own stream
started from ``n``, so two runs see the same augmentations in the same order
and successive calls (epochs) differ; ``seed=None`` starts the stream from
fresh entropy, as :class:`~s4tf.datasets.Batches` does for its shuffle.
Inside :class:`~s4tf.datasets.Batches`, a transform is handed a generator
made from the Batches' seed, the epoch and the batch's index instead, so a
resumed run augments exactly as the uninterrupted one and the prefetch
thread never touches a shared stream.

Transforms expect float images in ``[0, 1]`` (what the data sets give unless
``normalize=`` says otherwise; for a picture of your own,
``np.asarray(pil_image, np.float32) / 255``); put :class:`Normalize` last.
Crops and flips keep the dtype, so they also work on stored uint8 images.
"""

from .base import Compose, Transform, validation_transform
from .color import ColorJitter, Normalize
from .crops import CenterCrop, RandomCrop, RandomFlip
from .resizing import RandomResizedCrop, Resize

__all__ = [
    "CenterCrop", "ColorJitter", "Compose", "Normalize", "RandomCrop", "RandomFlip",
    "RandomResizedCrop", "Resize", "Transform", "validation_transform",
]
