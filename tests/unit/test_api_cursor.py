"""Cursor decoding is strict: exact types, bounded sizes, anything else a 400."""

from __future__ import annotations

import base64

import pytest
from fastapi import HTTPException

from api.pagination import MAX_INT, decode_cursor, decode_seq_cursor, encode_cursor


def _raw(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def test_a_cursor_round_trips():
    position = (1_700_000_000, 123_456, "inc-abc")
    assert decode_cursor(encode_cursor(position), (int, int, str)) == position
    assert decode_seq_cursor(encode_cursor((MAX_INT,))) == MAX_INT
    assert decode_cursor(None, (int,)) is None and decode_cursor("", (int,)) is None


@pytest.mark.parametrize(
    "raw",
    [
        '[true,0,"x"]',  # a boolean is not an integer
        '[1.0,0,"x"]',  # nor is a float
        "[1,0,1]",  # an integer is not a string
        '[-1,0,"x"]',  # positions are never negative
        f'[{MAX_INT + 1},0,"x"]',  # nor past Int64
        "[" + "9" * 5000 + ',0,"x"]',  # nor thousands of digits
        '[NaN,0,"x"]',
        '[1,0,"\\ud800"]',  # a lone surrogate UTF-8 cannot carry
        '[1,0,"' + "x" * 300 + '"]',  # a string past MAX_TEXT
        "[1,0]",
        '[1,0,"x",4]',
        '{"a":1}',
        '[[1],0,"x"]',
        "[" * 400 + "]" * 400,
        "null",
    ],
)
def test_a_crafted_cursor_is_a_400(raw):
    with pytest.raises(HTTPException) as caught:
        decode_cursor(_raw(raw), (int, int, str))
    assert caught.value.status_code == 400


@pytest.mark.parametrize("cursor", ["not-a-cursor!", "é", "A" * 2000, "=" * 8, "AAAA"])
def test_a_cursor_that_is_not_base64_json_is_a_400(cursor):
    with pytest.raises(HTTPException) as caught:
        decode_seq_cursor(cursor)
    assert caught.value.status_code == 400


def test_a_boolean_is_not_a_sequence_number():
    with pytest.raises(HTTPException):
        decode_seq_cursor(_raw("[true]"))
