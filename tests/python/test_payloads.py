"""The bytes an object collective carries for a Python object: ranks' plain format for plain
values, pickle for the rest, and a peer's plain stream checked as it is read. Expected values are
the objects themselves and byte strings written out here from the format's description
(python/src/plain_format.hpp); corrupt streams are made here by mutating valid ones with a fixed
seed."""

import collections
import math
import pickle
import random
import struct

import numpy as np
import pytest

from ranks import _core
import ranks.dist as dist
from ranks.errors import Error, InvalidArgument

Point = collections.namedtuple("Point", "x y")
PLAIN = [None, True, False, 7, -1, 2**31 - 1, -2**31, 2**31, 2**63 - 1, -2**63, 2**63, -2**70,
         0.25, -0.0, float("inf"), 1j, "", "text", "x" * 256, "text é", "lone \ud800 surrogate",
         b"", b"\x00\xff", (), (1, "a"), [1, [2]], {}, {"k": [1.5, None]}, {(1, "a"): "tuple key"},
         set(), {1, 2}, frozenset({"x"}), frozenset({(1, 2)})]
PICKLED = [np.float64(2.5), np.arange(3), bytearray(b"ab"), collections.OrderedDict(a=1),
           Point(1, 2), {"nested": np.int64(3)}, True.__class__, [1, 2.5, object]]


def u32(n):
    return struct.pack("<I", n)


@pytest.mark.parametrize("value", PLAIN, ids=repr)
def test_plain_values_travel_in_the_plain_format_and_come_back_equal(value):
    payload = dist._dumps(value, "test")
    assert payload == _core.plain_payload(value) and payload[0] != 0x80
    back = _core.load_payload(payload)
    assert type(back) is type(value) and back == value
    if isinstance(value, float):
        assert math.copysign(1, back) == math.copysign(1, value)


@pytest.mark.parametrize("value,payload", [
    (None, b"N"),
    ([True, False], b"[" + u32(2) + b"TF"),
    (-5, b"i" + struct.pack("<i", -5)),
    (2**40, b"q" + struct.pack("<q", 2**40)),
    (2**64, b"l" + u32(9) + (2**64).to_bytes(9, "little", signed=True)),
    (-2**64, b"l" + u32(9) + (-2**64).to_bytes(9, "little", signed=True)),
    (0.5, b"g" + struct.pack("<d", 0.5)),
    (complex(1, -2), b"y" + struct.pack("<dd", 1, -2)),
    ("ab", b"s\x02ab"),
    ("x" * 300, b"S" + u32(300) + b"x" * 300),
    ("é", b"u" + u32(2) + "é".encode()),
    (b"\x00", b"b" + u32(1) + b"\x00"),
    ({"k": (1,)}, b"{" + u32(1) + b"s\x01k" + b"(" + u32(1) + b"i" + struct.pack("<i", 1)),
    ({3}, b"<" + u32(1) + b"i" + struct.pack("<i", 3)),
    (frozenset(), b">" + u32(0)),
], ids=repr)
def test_the_format_is_the_one_described(value, payload):
    assert _core.plain_payload(value) == payload
    back = _core.load_payload(payload)
    assert type(back) is type(value) and back == value


@pytest.mark.parametrize("value", PICKLED, ids=lambda v: type(v).__name__)
def test_other_values_travel_pickled_and_keep_their_types(value):
    payload = dist._dumps(value, "test")
    assert payload[0] == 0x80  # pickle's PROTO opcode
    back = _core.load_payload(payload)
    assert type(back) is type(value)
    assert pickle.dumps(back) == pickle.dumps(value)


def test_an_unpicklable_value_is_an_invalid_argument_naming_the_call():
    with pytest.raises(InvalidArgument, match="all_gather_object: the object cannot be pickled"):
        dist._dumps([1, lambda: 0], "all_gather_object")


def test_nesting_deeper_than_the_plain_limit_is_left_to_pickle():
    nested = []
    for _ in range(999):
        nested = [nested]
    back = _core.load_payload(_core.plain_payload(nested))
    depth = 0
    while back:
        back, depth = back[0], depth + 1
    assert depth == 999
    assert _core.plain_payload([nested]) is None
    with pytest.raises(Error, match="nests containers more than 1000 deep at byte 5000"):
        _core.load_payload(b"[" + u32(1) + _core.plain_payload(nested))


def test_a_list_announcing_more_items_than_bytes_is_refused_before_allocating():
    payload = b"[" + u32(2**31 - 1) + b"N"
    with pytest.raises(Error, match="announces a container of 2147483647 items at byte 0 with "
                                    "1 bytes left"):
        _core.load_payload(payload)


def test_items_owed_by_outer_containers_count_against_the_bytes_left():
    # The inner list's 4 items would fit in the 4 bytes left, but the outer list still owes
    # one more item after it: 5 items, 4 bytes.
    payload = b"[" + u32(2) + b"[" + u32(4) + b"NNNN"
    with pytest.raises(Error, match="announces a container of 4 items at byte 5 with 4 bytes"):
        _core.load_payload(payload)
    assert _core.load_payload(payload + b"N") == [[None] * 4, None]


@pytest.mark.parametrize("payload,why", [
    (b"c", "type code 99 at byte 0"),
    (_core.plain_payload([1, 2]) + b"N", "1 bytes after its value"),
    (_core.plain_payload({"a": 1})[:-1], "ends early at byte 9"),
    (b"s\x05ab", "announces 5 bytes at byte 2 with 2 left"),
    (b"s\x01\xe9", "at byte 0: 'ascii' codec can't decode byte 0xe9"),
    (b"u" + u32(1) + b"\xff", "at byte 0: 'utf-8' codec can't decode byte 0xff"),
    (b"{" + u32(1) + b"[" + u32(0) + b"N", "unhashable type: 'list'"),
    (b"<" + u32(1) + b"{" + u32(0), "unhashable type: 'dict'"),
    (b"", "ends early at byte 0"),
])
def test_streams_plain_values_never_make_are_refused(payload, why):
    with pytest.raises(Error, match=why):
        _core.load_payload(payload)


def test_mutated_streams_give_an_object_or_an_error():
    rng = random.Random(1)
    base = bytearray(dist._dumps({"k": [1, 2.5, "x", (None, True)], "b": b"xy", "s": {1, 2},
                                  "n": 2**80, "c": 1j}, "test"))
    outcomes = collections.Counter()
    for _ in range(20000):
        mutated = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(mutated))
            kind = rng.random()
            if kind < 0.6:
                mutated[at] = rng.randrange(256)
            elif kind < 0.8:
                del mutated[at]
            else:
                mutated.insert(at, rng.randrange(256))
        if not mutated or mutated[0] == 0x80:
            continue  # a pickle: trusted as pickle.loads trusts its input
        try:
            _core.load_payload(bytes(mutated))
            outcomes["object"] += 1
        except (Error, ValueError, EOFError, TypeError) as error:
            outcomes[type(error).__name__] += 1
    assert outcomes["Error"] > 0 and outcomes["object"] > 0, outcomes


def test_shared_and_cyclic_containers_go_by_pickle_shared_leaves_in_the_plain_format():
    shared = [1, 2]
    cyclic = [0]
    cyclic.append(cyclic)
    assert _core.plain_payload([shared, shared]) is None
    assert _core.plain_payload(cyclic) is None
    assert _core.plain_payload([[], []]) is not None and _core.plain_payload([(), ()]) is not None
    empty = []
    assert _core.plain_payload([empty, empty]) is None
    text = "a string long enough not to be cached" * 2
    assert _core.load_payload(_core.plain_payload([text, text])) == [text, text]
