"""The cuda client's constant arena (info words uploaded once per content), on a stand-in
driver that copies into host memory: no GPU needed. The GPU tests in test_cuda_runtime.py run
the same paths on the device."""
from __future__ import annotations

import numpy as np
import pytest

import lazyt.backends.cuda.client as cc

BASE = 4096   # the stand-in arena's "device address"


class _Driver:
    def __init__(self, memory: bytearray):
        self.memory = memory
        self.copies = 0

    def memcpy_htod_async(self, dst, src, stream):
        data = bytes(src)
        self.memory[dst - BASE:dst - BASE + len(data)] = data
        self.copies += 1


class _Stream:
    def __init__(self):
        self.waits = 0

    def synchronize(self):
        self.waits += 1


@pytest.fixture
def client(monkeypatch):
    monkeypatch.setattr(cc, "CONST_ARENA_BYTES", 64)   # room for four 16-byte slots
    c = cc.CudaClient.__new__(cc.CudaClient)
    c._memory = bytearray(64)
    c._drv, c.stream, c._graph = _Driver(c._memory), _Stream(), None
    c._const_host = np.zeros(64, np.uint8)
    c._const_base, c._const_at, c._consts = BASE, 0, {}
    return c


def _words(*v) -> np.ndarray:
    return np.array(v, np.uint32)


def _read(c, ptr) -> list:
    return np.frombuffer(bytes(c._memory[ptr - BASE:ptr - BASE + 16]), np.uint32).tolist()


def test_the_same_content_is_uploaded_once(client):
    first, again = [None], [None]
    client._upload_host_data("k", [_words(1, 2, 3, 4)], first)
    client._upload_host_data("k", [_words(1, 2, 3, 4).tobytes()], again)   # bytes alike
    assert first == again and client._drv.copies == 1
    assert _read(client, first[0]) == [1, 2, 3, 4]


def test_a_full_arena_starts_over_before_the_launch_takes_any_address(client):
    a = _words(1, 2, 3, 4)
    ptr_a = [None]
    client._upload_host_data("k", [a], ptr_a)
    for i in range(3):                                  # the arena is full
        client._upload_host_data("k", [_words(9, 9, 9, i)], [None])
    ptrs = [None, None]
    client._upload_host_data("k", [a, _words(7, 7, 7, 7)], ptrs)   # a cached, b new
    assert client.stream.waits == 1                     # the queued kernels finished first
    assert _read(client, ptrs[0]) == [1, 2, 3, 4]       # a was uploaded again, not clobbered
    assert _read(client, ptrs[1]) == [7, 7, 7, 7]
    assert ptrs[0] != ptrs[1]


def test_library_host_data_is_never_shared(client, monkeypatch):
    ring = []
    monkeypatch.setattr(client, "_ring_at", 0, raising=False)

    def ring_upload(name, bindings, ptrs, shared=True):
        assert not shared
        ring.append(bindings)
    monkeypatch.setattr(client, "_upload_host_data", ring_upload)
    monkeypatch.setattr(client, "context", type("C", (), {"activate": lambda self: None})(),
                        raising=False)
    monkeypatch.setattr(client, "_lock", __import__("threading").RLock(), raising=False)
    cc.CudaClient.host_data(client, _words(5, 6))
    assert len(ring) == 1
