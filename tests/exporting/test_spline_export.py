"""``examples/spline_personalization.py --export``: the personalisation step runs without s4tf."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

import s4tf

pytest.importorskip("jax")

_EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "spline_personalization.py"


def _load_example():
    spec = importlib.util.spec_from_file_location("example_spline_export", _EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defining classes
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("export_format", ["stablehlo", "onnx"])
def test_the_exported_personalisation_matches_s4tf_outside_it(tmp_path, export_format):
    if export_format == "onnx":
        pytest.importorskip("onnxruntime")
    example = _load_example()
    with s4tf.backend("naive"):
        errors = example.main(["--epochs", "20", "--no-progress", "--output",
                               str(tmp_path / "spline.safetensors"), "--export",
                               str(tmp_path / "device"), "--export-format", export_format])
    exported = errors["exported"]
    assert exported["device_imported_s4tf"] is False
    # Twenty gradient steps on the user's data, on the device and in s4tf: one result.
    assert exported["largest_point_difference"] < 1e-5
    assert abs(exported["device_held_out_error"] - exported["s4tf_held_out_error"]) < 1e-6
    # And they personalise: the held-out error falls below the global spline's.
    assert exported["device_held_out_error"] < errors["global"] / 3


def test_the_device_spline_is_the_float_spline(tmp_path):
    example = _load_example()
    points = [0.1, 0.7, 0.3, 0.9, 0.2]
    xs = [0.0, 0.05, 0.3, 0.5, 0.77, 1.0, -0.2, 1.3]
    device = example.DeviceSpline(control_points=s4tf.Tensor(points))(s4tf.Tensor(xs))
    expected = [example.Spline(control_points=points)(x) for x in xs]
    assert device.tolist() == pytest.approx(expected, abs=1e-6)
