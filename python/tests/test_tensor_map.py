"""Device.tensor_map (lr_tensor_map_encode): a CUDA sm_90+ feature, so on the
host backend a clear lrrt.Error (LR_ERROR_NOT_SUPPORTED naming the feature);
a malformed descriptor is refused naming the field first, on every backend."""
import numpy as np
import pytest

import lrrt

rng = np.random.default_rng()


@pytest.fixture
def host():
    return lrrt.Device.select("host")


def random_view():
    rows, cols = int(rng.integers(1, 300)), 4 * int(rng.integers(1, 100))
    return rows, cols


def test_host_raises_not_supported(host):
    rows, cols = random_view()
    buf = host.buffer(rows * cols * 4, np.float32)
    with pytest.raises(lrrt.Error) as e:
        host.tensor_map(buf, "f32", (rows, cols), (8, 32), swizzle="128B")
    assert e.value.status_name == "LR_ERROR_NOT_SUPPORTED"
    assert "tensor maps are a CUDA sm_90+ feature" in str(e.value)


def test_malformed_descriptor_names_the_field(host):
    rows, cols = random_view()
    buf = host.buffer(rows * cols * 4, np.float32)
    with pytest.raises(lrrt.Error) as e:
        host.tensor_map(buf, np.float32, (rows, cols), (8, 300))  # box > 256
    assert e.value.status_name == "LR_ERROR_INVALID_ARGUMENT"
    assert "box_dims[0]" in str(e.value)


def test_python_side_errors(host):
    buf = host.buffer(4096, np.float32)
    with pytest.raises(ValueError, match="dtype"):
        host.tensor_map(buf, "complex64", (32, 32), (8, 8))
    with pytest.raises(ValueError, match="swizzle"):
        host.tensor_map(buf, "f32", (32, 32), (8, 8), swizzle="16B")
    with pytest.raises(ValueError, match="innermost stride"):
        host.tensor_map(buf, "f32", (32, 32), (8, 8), strides=(32, 2))
