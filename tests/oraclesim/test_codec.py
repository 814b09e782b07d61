"""TTC primitives."""

from __future__ import annotations

import pytest

from app.oraclesim.wire.codec import NeedMoreData, Reader, Writer, encode_number


@pytest.mark.parametrize("value", [0, 1, 255, 256, 65535, 65536, 2**32 - 1, 2**32, -5])
def test_universal_integers_round_trip(value):
    assert Reader(Writer().uint(value).getvalue()).uint() == value


def test_integer_encoding_is_length_then_big_endian():
    assert Writer().uint(0).uint(1).uint(300).getvalue() == b"\x00\x01\x01\x02\x01\x2c"


@pytest.mark.parametrize("size", [0, 1, 252, 253, 40000])
def test_byte_strings_round_trip_short_and_chunked(size):
    data = bytes(range(256)) * (size // 256 + 1)
    data = data[:size]
    r = Reader(Writer().bytes_(data).bytes_two_lengths(data).getvalue())
    expected = data or None
    assert r.bytes_() == expected
    assert r.bytes_two_lengths() == expected
    assert r.at_end()


def test_chunked_strings_use_the_long_length_marker():
    assert Writer().bytes_(b"x" * 300).getvalue()[0] == 0xFE


def test_truncated_input_asks_for_more():
    with pytest.raises(NeedMoreData):
        Reader(b"\x02\x01").uint()
    with pytest.raises(NeedMoreData):
        Reader(b"ab").null_terminated()


@pytest.mark.parametrize(
    "value,encoded",
    [
        (0, "80"),
        (1, "c102"),
        (100, "c202"),
        (123, "c20218"),
        (10**6, "c402"),
        (-1, "3e6466"),
        (-123, "3d644e66"),
    ],
)
def test_oracle_number_encoding(value, encoded):
    assert encode_number(value).hex() == encoded
