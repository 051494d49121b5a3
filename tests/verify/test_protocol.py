"""The child-to-parent payload format: what goes in comes out, and nothing malformed is decoded into anything."""

import io
import json

import pytest
import torch

from tritonrl.verify import protocol


def test_round_trip_keeps_structure_dtypes_shapes_and_values(tmp_path):
    obj = {"outputs": [torch.randn(3, 4).t(), "mod.LazyTensor", torch.tensor(2.5, dtype=torch.bfloat16),
                       torch.zeros(0, 5), torch.tensor([True, False]), torch.arange(6, dtype=torch.int64)],
           "devices": ["cpu", None], "numbers": [1, 2.5, float("inf"), None, True], "nested": {"k": [[]]}}
    digest = protocol.write_payload(str(tmp_path / "p.pt"), obj)
    data = bytearray((tmp_path / "p.pt").read_bytes())
    assert digest == protocol.digest(data) == protocol.digest(protocol.tensors_to_bytes(obj))
    back = protocol.tensors_from_bytes(data)
    for want, got in zip(obj["outputs"], back["outputs"]):
        if isinstance(want, torch.Tensor):
            assert type(got) is torch.Tensor and got.dtype == want.dtype and got.shape == want.shape
            assert torch.equal(got, want)
        else:
            assert got == want
    assert back["devices"] == obj["devices"] and back["numbers"] == obj["numbers"] and back["nested"] == obj["nested"]


def test_decoded_tensors_share_a_writable_buffer_and_copy_a_readonly_one():
    payload = protocol.tensors_to_bytes({"x": torch.ones(4)})
    shared = bytearray(payload)
    x = protocol.tensors_from_bytes(shared)["x"]
    shared[-4:] = torch.tensor([7.0]).numpy().tobytes()
    assert float(x[-1]) == 7.0  # no copy
    y = protocol.tensors_from_bytes(payload)["x"]  # bytes: copied once, no warning about a read-only buffer
    assert torch.equal(y, torch.ones(4))


def _header_payload(header: dict, body: bytes = b"") -> bytes:
    text = json.dumps(header).encode()
    return protocol.PAYLOAD_MAGIC + len(text).to_bytes(8, "little") + text + body


@pytest.mark.parametrize("data", [
    b"",
    b"not a payload at all",
    protocol.PAYLOAD_MAGIC + (1 << 40).to_bytes(8, "little"),                                   # header too long
    _header_payload({"root": {"t": 0}, "tensors": [{"dtype": "float32", "shape": [4], "offset": 0,
                                                    "nbytes": 16}]}),                          # bytes missing
    _header_payload({"root": {"t": 0}, "tensors": [{"dtype": "object", "shape": [1], "offset": 0,
                                                    "nbytes": 8}]}, b"\0" * 8),                # unknown dtype
    _header_payload({"root": {"t": 0}, "tensors": [{"dtype": "float32", "shape": [2], "offset": -4,
                                                    "nbytes": 8}]}, b"\0" * 8),                # before the data
    _header_payload({"root": {"t": 0}, "tensors": [{"dtype": "float32", "shape": [3], "offset": 0,
                                                    "nbytes": 8}]}, b"\0" * 12),               # size disagrees
    _header_payload({"root": {"x": 1}, "tensors": []}),                                         # unknown node
    _header_payload({"root": {"v": {"a": 1}}, "tensors": []}),                                  # not a scalar
])
def test_malformed_payloads_are_refused(data):
    with pytest.raises((ValueError, KeyError, TypeError, IndexError)):
        protocol.tensors_from_bytes(data)


def test_a_pickle_is_not_a_payload():
    buffer = io.BytesIO()
    torch.save({"outputs": [torch.ones(2)]}, buffer)
    with pytest.raises(ValueError, match="not a payload"):
        protocol.tensors_from_bytes(buffer.getvalue())


def test_only_plain_data_can_be_sent():
    with pytest.raises(TypeError):
        protocol.tensors_to_bytes({"f": print})
    with pytest.raises(TypeError):
        protocol.tensors_to_bytes({1: torch.ones(1)})


def test_tensor_digest_sees_values_dtype_and_shape_not_layout():
    x = torch.arange(6.0).reshape(2, 3)
    assert protocol.tensor_digest(x) == protocol.tensor_digest(x.clone())
    assert protocol.tensor_digest(x.t().contiguous().t()) == protocol.tensor_digest(x)  # same values, other strides
    changed = x.clone()
    changed[1, 2] = 5.0000005  # one float32 step from 5.0
    assert protocol.tensor_digest(changed) != protocol.tensor_digest(x)
    assert protocol.tensor_digest(x.reshape(3, 2)) != protocol.tensor_digest(x)
    assert protocol.tensor_digest(x.double()) != protocol.tensor_digest(x)
    assert protocol.tensor_digest("x") is None
