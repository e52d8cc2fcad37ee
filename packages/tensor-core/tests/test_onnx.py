"""ember.onnx: importable as torch.onnx is, and an export names what is missing."""

import pytest

import ember
import ember.onnx


def test_export_says_that_ember_has_no_onnx_exporter():
    with pytest.raises(NotImplementedError, match="ember.onnx.export: ember has no ONNX exporter"):
        ember.onnx.export(object(), (ember.zeros(1),), "model.onnx")
    assert ember.onnx.is_in_onnx_export() is False
