"""Fine-tune a torchvision ResNet-18 on a folder of images: head first, then everything.

    python examples/finetune_imagefolder.py --weights resnet18.safetensors --data pets/
    python examples/finetune_imagefolder.py ... --predict pets/val/cat/001.jpg

``--weights`` is any torchvision-layout ResNet-18 saved as safetensors, e.g.
on the PyTorch side::

    import torchvision, safetensors.torch
    net = torchvision.models.resnet18(weights="IMAGENET1K_V1")
    safetensors.torch.save_file(net.state_dict(), "resnet18.safetensors")

(its base width and class count are read from the file). ``--data`` is a
folder that :class:`s4tf.datasets.ImageFolder` reads: ``train/`` and ``val/``
with one sub-folder per class, or just the class folders. Nothing is
downloaded.

The recipe:

1. Load the weights (``models.load_torchvision``) and put a new classifier
   for the folder's classes in place of torchvision's (``s4tf.tree.at``).
2. Freeze the backbone (``s4tf.freeze``: its gradient is not even computed,
   the optimizer keeps no state for it, ``s4tf.summary`` counts it as
   non-trainable) and train the head on augmented images
   (``RandomResizedCrop``, ``RandomFlip``, ImageNet's ``Normalize``), applied
   to each training batch in the loader's thread.
3. Unfreeze everything and train on at a tenth of the rate, the head keeping
   its own rate (``param_groups=``).
4. Predict one image with the same preprocessing
   (``transform.deterministic()``: the resize instead of the random crop,
   the same normalisation).

Both stages train under a mixed-precision policy (``--precision``, default
``mixed_bfloat16``, :mod:`s4tf.precision`): layers compute in bfloat16 while
the weights, the optimizer's slots and its updates stay float32;
``mixed_float16`` adds a dynamic loss scale; ``float32`` turns it off.
"""

from __future__ import annotations

import argparse
import importlib.util

import numpy as np
from PIL import Image, ImageOps
from safetensors import safe_open

import s4tf
from s4tf import datasets, layers, models, optimizers
from s4tf.datasets import transforms

# ImageNet's per-channel statistics: what torchvision's weights were trained on.
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
BACKBONE = ("conv1", "bn1", "blocks")  # every ResNet field but the pooling and ``fc``


def _default_backend() -> str:
    return "xla" if importlib.util.find_spec("jax") is not None else "naive"


def parse_arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", required=True,
                        help="a torchvision ResNet-18 state dict saved as safetensors")
    parser.add_argument("--data", required=True, help="an image folder (see ImageFolder)")
    parser.add_argument("--image-size", type=int, default=160)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--head-epochs", type=int, default=3,
                        help="epochs with the backbone frozen")
    parser.add_argument("--epochs", type=int, default=3, help="epochs with everything trained")
    parser.add_argument("--learning-rate", type=float, default=1e-3,
                        help="the head's rate; the unfrozen backbone trains at a tenth of it")
    parser.add_argument("--predict", default=None, help="an image file to classify at the end")
    parser.add_argument("--output", default="finetuned.safetensors")
    parser.add_argument("--backend", default=_default_backend(), choices=("naive", "xla"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--precision", default="mixed_bfloat16",
                        choices=("float32", "mixed_bfloat16", "mixed_float16"),
                        help="the precision policy layers compute under (default mixed_bfloat16)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    return parser.parse_args(argv)


def pretrained_resnet18(weights: str, classes: int):
    """torchvision's ResNet-18 from ``weights``, with a new ``classes``-way head."""
    with safe_open(weights, framework="numpy") as file:
        width = file.get_slice("conv1.weight").get_shape()[0]
        file_classes, features = file.get_slice("fc.weight").get_shape()
    model = models.load_torchvision(
        models.ResNet(depth=18, width=width, classes=file_classes), weights)
    return s4tf.tree.at(model, "fc", layers.Dense(features, classes))


def augmentation(image_size: int, seed: int) -> transforms.Transform:
    """Training preprocessing; its ``deterministic()`` is the inference preprocessing."""
    return transforms.Compose([
        transforms.RandomResizedCrop(image_size, scale=(0.35, 1.0)),
        transforms.RandomFlip(horizontal=True),
        transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD),
    ], seed=seed)


def load_image(path, image_size: int) -> np.ndarray:
    """One image as ImageFolder decodes it: RGB, shorter side scaled, centre crop, in [0, 1]."""
    with Image.open(path) as image:
        image = ImageOps.fit(image.convert("RGB"), (image_size, image_size),
                             Image.Resampling.BILINEAR)
        return np.asarray(image, dtype=np.float32) / 255.0


def predict(model, path, transform, class_names, image_size: int):
    """``(class name, probability)`` of one image file, preprocessed as validation images."""
    image = transform.deterministic()(load_image(path, image_size))
    with s4tf.inference():
        probabilities = s4tf.softmax(model(s4tf.Tensor(image[np.newaxis]))).numpy()[0]
    best = int(np.argmax(probabilities))
    return class_names[best], float(probabilities[best])


def _loop(data, optimizer, arguments) -> s4tf.TrainingLoop:
    return s4tf.TrainingLoop(training=data.training, validation=data.validation,
                             optimizer=optimizer, loss=s4tf.softmax_cross_entropy,
                             metrics=("loss", "accuracy"), progress=not arguments.no_progress,
                             loss_scale="dynamic" if arguments.precision == "mixed_float16"
                             else None)


def main(argv=None) -> dict:
    """Fine-tune, report and save; returns both stages' histories and the prediction."""
    arguments = parse_arguments(argv)
    s4tf.set_backend(arguments.backend)
    s4tf.random.seed(arguments.seed)
    transform = augmentation(arguments.image_size, arguments.seed)
    data = datasets.ImageFolder(arguments.data, image_size=arguments.image_size,
                                batch_size=arguments.batch_size, seed=arguments.seed,
                                transform=transform)
    model = pretrained_resnet18(arguments.weights, data.num_classes)

    # Stage 1: the backbone frozen, only the new head trains.
    model = s4tf.freeze(model, *BACKBONE)
    s4tf.summary(model, (1, arguments.image_size, arguments.image_size, 3))
    head_loop = _loop(data, optimizers.Adam(model, learning_rate=arguments.learning_rate),
                      arguments)
    with s4tf.precision.policy(arguments.precision):
        model = head_loop.fit(model, epochs=arguments.head_epochs)

    # Stage 2: everything trains, the backbone at a tenth of the head's rate. A new
    # optimizer: the old one was made for the head's parameters only.
    model = s4tf.unfreeze(model)
    optimizer = optimizers.Adam(model, learning_rate=arguments.learning_rate / 10, param_groups=[
        {"params": "fc", "learning_rate": arguments.learning_rate}])
    full_loop = _loop(data, optimizer, arguments)
    with s4tf.precision.policy(arguments.precision):
        model = full_loop.fit(model, epochs=arguments.epochs)

    s4tf.save(model, arguments.output)
    print(f"Saved the fine-tuned model to {arguments.output}")
    result = {"head": head_loop.history, "full": full_loop.history, "model": model,
              "class_names": data.class_names}
    if arguments.predict is not None:
        name, probability = predict(model, arguments.predict, transform, data.class_names,
                                    arguments.image_size)
        print(f"{arguments.predict}: {name} ({probability:.1%})")
        result["prediction"] = (name, probability)
    return result


if __name__ == "__main__":
    main()
