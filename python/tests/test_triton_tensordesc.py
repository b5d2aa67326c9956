"""lrrt.triton with Triton 3.6 tensor descriptors (the sm_90 tma_add_kernel
fixture), without a GPU: the argument block against the cubin's own layout
(`lrrt inspect`), the lr_tensor_map_desc_t handed to lr_tensor_map_encode
against what the manifest path encodes (tests/unit/test_tensor_map_manifest.cpp
asserts the same fields for tests/triton/tma_add/manifest.json), and every
refusal naming the parameter. scripts/tensormap-check launches it on a GPU."""
import ctypes
import json
import os
import struct
import subprocess
import types
from pathlib import Path

import numpy as np
import pytest

import lrrt
import lrrt.triton
from lrrt import _tensordesc

ENTRY = Path(__file__).resolve().parents[2] / "tests" / "triton" / "entries" / "sm_90" / "tma_add_kernel"
rng = np.random.default_rng()


@pytest.fixture(scope="module")
def dev():
    return lrrt.Device.select("host")


@pytest.fixture(scope="module")
def layout():
    """The cubin's parameters (offset, size), from lrrt's own code-object reader."""
    cli = os.environ.get("LRRT_CLI")
    if not cli:
        pytest.skip("LRRT_CLI (the lrrt binary) not set: run through ctest")
    out = subprocess.run([cli, "inspect", str(ENTRY / "tma_add_kernel.cubin"), "--format", "json"], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)["objects"][0]["targets"][0]["kernels"][0]["args"]


@pytest.fixture()
def encoded(monkeypatch):
    """lr_tensor_map_encode stood in for (the host backend has no tensor
    maps): each call's descriptor is first checked by the real
    lr_tensor_map_validate (the C ABI's rules), then recorded, and the map
    written as 128 random bytes."""
    calls = []

    def fake(handle, desc_ref, out):
        d = desc_ref._obj
        status = lrrt.lib.lr_tensor_map_validate(ctypes.byref(d))
        assert status == 0, lrrt.lib.lr_last_error_message()
        r = d.rank
        raw = rng.integers(0, 256, 128, dtype=np.uint8).tobytes()
        ctypes.memmove(out, raw, 128)
        calls.append({"dtype": d.dtype, "rank": r, "address": d.global_address, "dims": list(d.global_dims[:r]),
                      "strides": list(d.global_strides[:r - 1]), "box": list(d.box_dims[:r]),
                      "element_strides": list(d.element_strides[:r]), "interleave": d.interleave,
                      "swizzle": d.swizzle, "l2_promotion": d.l2_promotion, "oob_fill": d.oob_fill, "bytes": raw})
        return 0
    monkeypatch.setattr(lrrt.lib, "lr_tensor_map_encode", fake)
    return calls


def kernel(dev, layout):
    """A TritonKernel of the fixture whose code object is described by the
    cubin's layout (the module is loaded only to launch)."""
    k = lrrt.triton.TritonKernel.__new__(lrrt.triton.TritonKernel)
    k.device, k.desc = dev, lrrt.triton.describe(ENTRY)
    k.params, k._scratch = k.desc["params"], {}
    k.kernel = types.SimpleNamespace(args=[a for a in layout if a["kind"] != "hidden"])
    k._build_packer()
    return k


def view(dev, rows, row_stride, dtype=np.float32):
    """A device buffer of rows x row_stride elements."""
    return dev.buffer(rows * row_stride * np.dtype(dtype).itemsize, dtype)


def test_description_desugars_the_descriptors():
    d = lrrt.triton.describe(ENTRY)
    names = [p["name"] for p in d["params"]]
    assert names == ["a_desc", "a_desc.shape0", "a_desc.shape1", "a_desc.stride0", "a_desc.stride1",
                     "b_desc", "b_desc.shape0", "b_desc.shape1", "b_desc.stride0", "b_desc.stride1", "out_ptr", "M", "N"]
    for i in (0, 5):
        assert d["params"][i]["tensordesc"]["block_shape"] == [32, 64]
        assert [p["type"] for p in d["params"][i + 1:i + 5]] == ["i32", "i32", "i64", "i64"]
        assert all(p["part_of"] == i for p in d["params"][i + 1:i + 5])
        # The IR analysis's access for the descriptor (tt.descriptor_load: read):
        # what record() and capture declare over the descriptor's base.
        assert d["params"][i]["access"] == "read" and d["params"][i]["access_source"] == "ttir"
        assert lrrt.triton.derived_mode(d["params"][i]) == lrrt.READ
    assert lrrt.triton.derived_mode(d["params"][10]) == lrrt.WRITE  # out_ptr


def test_block_matches_the_cubins_layout_and_the_manifest_encoding(dev, layout, encoded):
    k = kernel(dev, layout)
    assert [p["name"] for p in k.user_params] == ["a_desc", "b_desc", "out_ptr", "M", "N"]
    for trial in range(4):
        rows, cols = int(rng.integers(1, 400)), 4 * int(rng.integers(1, 80))
        pitch = cols + 4 * int(rng.integers(0, 5))  # b is a strided view: rows of `pitch` elements
        a, b = view(dev, rows, cols), view(dev, rows, pitch)
        out = dev.buffer(rows * cols * 4, np.float32)
        # lrrt's own form for a, Triton's attribute names (duck-typed) for b.
        da = lrrt.triton.TensorDescriptor(a, [rows, cols], None, [32, 64])
        db = types.SimpleNamespace(base=b, shape=(rows, cols), strides=(pitch, 1), block_shape=[32, 64],
                                   padding="nan" if trial % 2 else "zero")
        m, n = int(rng.integers(-2**31, 2**31)), int(rng.integers(-2**31, 2**31))
        encoded.clear()
        data = k.pack((4, 4), (da, db, out, m, n))
        assert len(encoded) == 2
        for call, buf, stride, oob in ((encoded[0], a, cols, 0), (encoded[1], b, pitch, trial % 2)):
            # The fields tests/unit/test_tensor_map_manifest.cpp checks for the manifest path.
            assert call["dtype"] == 7 and call["rank"] == 2  # LR_TENSOR_MAP_F32, from tensordesc_meta's elem_type
            assert call["address"] == buf.ptr
            assert call["dims"] == [cols, rows] and call["strides"] == [stride * 4]
            assert call["box"] == [32, 32] and call["element_strides"] == [1, 1]
            assert call["swizzle"] == 3 and call["l2_promotion"] == 2 and call["interleave"] == 0
            assert call["oob_fill"] == oob
        want = [encoded[0]["bytes"], struct.pack("<iiqq", rows, cols, cols, 1),
                encoded[1]["bytes"], struct.pack("<iiqq", rows, cols, pitch, 1),
                struct.pack("<Q", out.ptr), struct.pack("<i", m), struct.pack("<i", n)]
        slots = [layout[0], layout[1:5], layout[5], layout[6:10], layout[10], layout[11], layout[12]]
        covered = bytearray(len(data))
        for want_bytes, slot in zip(want, slots):
            first, last = (slot[0], slot[-1]) if isinstance(slot, list) else (slot, slot)
            start, end = first["offset"], last["offset"] + last["size"]
            assert data[start:end] == want_bytes, (first, last)
            covered[start:end] = b"\x01" * (end - start)
        # The hidden scratch pointers after the parameters; the padding is zeros.
        hidden = k._config_for((4, 4))[1]
        assert len(layout) == 13 + len(hidden)
        for slot, ptr in zip(layout[13:], hidden):
            assert data[slot["offset"]:slot["offset"] + 8] == struct.pack("<Q", ptr)
            covered[slot["offset"]:slot["offset"] + 8] = b"\x01" * 8
        assert len(data) == max(a["offset"] + a["size"] for a in layout if a["kind"] != "hidden")
        assert all(data[i] == 0 for i in range(len(data)) if not covered[i])


def test_refusals_name_the_parameter(dev, layout, encoded):
    k = kernel(dev, layout)
    a = view(dev, 64, 64)
    out = dev.buffer(64 * 64 * 4, np.float32)
    good = lrrt.triton.TensorDescriptor(a, [64, 64], None, [32, 64])

    def refused(desc, match, param="b_desc"):
        with pytest.raises(lrrt.Error) as e:
            k.pack((1,), (good, desc, out, 64, 64))
        assert param in str(e.value) and match in str(e.value), str(e.value)

    refused(lrrt.triton.TensorDescriptor(a, [64, 64], None, [64, 64]), "compiled for block_shape [32, 64]")
    refused(lrrt.triton.TensorDescriptor(a, [64, 64, 1], None, [32, 64]), "2-D")
    refused(lrrt.triton.TensorDescriptor(a, [64, 64], [64, 2], [32, 64]), "innermost stride must be 1")
    refused(lrrt.triton.TensorDescriptor(a, [64, 64], None, [32, 64], padding="wrap"), "padding 'wrap'")
    refused(lrrt.triton.TensorDescriptor(a, [64, 2**31], None, [32, 64]), "shape[1]")
    refused(lrrt.triton.TensorDescriptor(np.zeros((64, 64), np.float32), [64, 64], None, [32, 64]), "host memory")
    refused(lrrt.triton.TensorDescriptor(dev.buffer(64 * 64 * 8, np.float64), [64, 64], None, [32, 64]), "float64")
    refused(a, "expected a tensor descriptor")
    # The C ABI's own rules (lr_tensor_map_validate, which the stand-in runs
    # first and asserts on): a row stride of 63 floats is not a multiple of 16 bytes.
    with pytest.raises(AssertionError, match="global_strides"):
        k.pack((1,), (good, lrrt.triton.TensorDescriptor(a, [64, 63], [63, 1], [32, 64]), out, 64, 64))
    with pytest.raises(TypeError, match="takes 5 argument"):
        k.pack((1,), (good, good, out, 64))


def test_host_backend_refuses_the_entry_naming_the_parameter(dev):
    with pytest.raises(lrrt.Error) as e:
        lrrt.triton.load(dev, ENTRY)
    assert e.value.status_name == "LR_ERROR_NOT_SUPPORTED"
    assert "parameter a_desc is a tensor descriptor" in str(e.value) and "cuda sm_90+" in str(e.value)


def test_real_encode_on_host_names_the_parameter(dev, layout):
    """Without the stand-in: lr_tensor_map_encode's own refusal on host,
    with the parameter in front of it."""
    k = kernel(dev, layout)
    a = view(dev, 64, 64)
    d = lrrt.triton.TensorDescriptor(a, [64, 64], None, [32, 64])
    with pytest.raises(lrrt.Error) as e:
        k.pack((1,), (d, d, dev.buffer(64 * 64 * 4, np.float32), 64, 64))
    assert e.value.status_name == "LR_ERROR_NOT_SUPPORTED"
    assert "parameter a_desc" in str(e.value) and "tensor maps are a CUDA sm_90+ feature" in str(e.value)


def test_declared_layout_mismatch_is_refused(layout):
    params = lrrt.triton.describe(ENTRY)["params"]
    with pytest.raises(lrrt.Error, match="declares 12 parameter"):
        _tensordesc.declared_struct(params, 0, layout[:12], "tma_add_kernel")
    shifted = [dict(a) for a in layout[:13]]
    shifted[0]["size"] = 64
    with pytest.raises(lrrt.Error, match="parameter a_desc is 128 bytes"):
        _tensordesc.declared_struct(params, 0, shifted, "tma_add_kernel")


def test_descriptor_numbers_are_whole_never_cut(dev, layout, encoded):
    """A float shape, stride or block size was cut to an int (a stride of
    64.7 encoded as 64), a numeric string read as its number: both refused,
    naming the field, whether the descriptor is lrrt's or duck-typed."""
    k = kernel(dev, layout)
    a = view(dev, 64, 64)
    out = dev.buffer(64 * 64 * 4, np.float32)
    good = lrrt.triton.TensorDescriptor(a, [64, 64], None, [32, 64])
    for field, value in (("shape", [64.9, 64]), ("strides", [64, 1.0]), ("block_shape", [32, 64.0]),
                         ("shape", ["64", 64]), ("strides", [True, 1]), ("shape", "64")):
        parts = {"base": a, "shape": [64, 64], "strides": [64, 1], "block_shape": [32, 64], field: value}
        with pytest.raises(TypeError, match=field):
            lrrt.triton.TensorDescriptor(**parts)
        with pytest.raises(lrrt.Error) as e:
            k.pack((1,), (good, types.SimpleNamespace(**parts), out, 64, 64))
        assert "parameter b_desc" in str(e.value) and field in str(e.value), str(e.value)
    # numpy integers are whole numbers (operator.index): accepted.
    encoded.clear()
    k.pack((1,), (good, lrrt.triton.TensorDescriptor(a, np.array([64, 64]), None, (np.int64(32), 64)), out, 64, 64))
    assert len(encoded) == 2 and encoded[1]["dims"] == [64, 64]


def test_descriptor_view_past_its_allocation_is_refused(dev, layout, encoded):
    """A view whose last element lies past its base's allocation (an lrrt
    buffer, or a raw address inside one) was encoded: a TMA copy through it
    reads or writes memory the tensor does not own. The manifest path
    refused it already (buffer "..." is too small)."""
    k = kernel(dev, layout)
    rows, cols = 48, 64
    a = view(dev, rows, cols)
    out = dev.buffer(rows * cols * 4, np.float32)
    good = lrrt.triton.TensorDescriptor(a, [rows, cols], None, [32, 64])

    def refused(desc, match="reaches byte"):
        with pytest.raises(lrrt.Error) as e:
            k.pack((1,), (good, desc, out, rows, cols))
        assert "parameter b_desc" in str(e.value) and match in str(e.value), str(e.value)

    refused(lrrt.triton.TensorDescriptor(a, [rows + 1, cols], None, [32, 64]))          # one row too many
    refused(lrrt.triton.TensorDescriptor(a, [rows, cols], [cols + 4, 1], [32, 64]))    # a pitch past the end
    refused(lrrt.triton.TensorDescriptor(a.ptr + 16, [rows, cols], None, [32, 64]))    # inside a, 16 bytes short
    refused(lrrt.triton.TensorDescriptor(2**64, [rows, cols], None, [32, 64]), "does not fit")
    freed = view(dev, rows, cols)
    freed.free()
    refused(lrrt.triton.TensorDescriptor(freed, [rows, cols], None, [32, 64]), "the buffer was freed")
    # Exactly the allocation, or a strided view ending inside it: encoded.
    for desc in (lrrt.triton.TensorDescriptor(a, [rows, cols], None, [32, 64]),
                 lrrt.triton.TensorDescriptor(a, [rows // 2, cols - 4], [2 * cols, 1], [32, 64]),
                 lrrt.triton.TensorDescriptor(a.ptr + cols * 4, [rows - 1, cols], None, [32, 64])):
        encoded.clear()
        k.pack((1,), (good, desc, out, rows, cols))
        assert len(encoded) == 2
