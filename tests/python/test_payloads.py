"""The bytes an object collective carries for a Python object: marshal for plain values, pickle
for the rest, and a peer's marshal stream checked before CPython reads it (marshal.loads trusts
its lengths). Expected values are the objects themselves; corrupt streams are made here by
mutating valid ones with a fixed seed."""

import collections
import marshal
import pickle
import random

import numpy as np
import pytest

from ranks import _core
import ranks.dist as dist
from ranks.errors import Error

Point = collections.namedtuple("Point", "x y")
PLAIN = [None, True, 7, -2**70, 0.25, -0.0, 1j, "text é", b"\x00\xff", (1, "a"), [1, [2]],
         {"k": [1.5, None]}, {1, 2}, frozenset({"x"})]
PICKLED = [np.float64(2.5), np.arange(3), bytearray(b"ab"), collections.OrderedDict(a=1),
           Point(1, 2), {"nested": np.int64(3)}]


@pytest.mark.parametrize("value", PLAIN, ids=repr)
def test_plain_values_travel_marshalled_and_come_back_equal(value):
    payload = dist._dumps(value, "test")
    assert payload == marshal.dumps(value, 4)
    back = _core.load_payload(payload)
    assert type(back) is type(value) and back == value


@pytest.mark.parametrize("value", PICKLED, ids=lambda v: type(v).__name__)
def test_other_values_travel_pickled_and_keep_their_types(value):
    payload = dist._dumps(value, "test")
    assert payload[0] == 0x80  # pickle's PROTO opcode
    back = _core.load_payload(payload)
    assert type(back) is type(value)
    assert pickle.dumps(back) == pickle.dumps(value)


def test_nesting_deeper_than_the_plain_limit_is_left_to_pickle():
    nested = []
    for _ in range(999):
        nested = [nested]
    back = _core.load_payload(_core.marshal_plain(nested))
    depth = 0
    while back:
        back, depth = back[0], depth + 1
    assert depth == 999
    assert _core.marshal_plain([nested]) is None


def test_a_list_announcing_more_items_than_bytes_is_refused_before_allocating():
    # Six bytes that make marshal.loads allocate a 16 GiB list before it finds the items missing.
    payload = b"[" + (2**31 - 1).to_bytes(4, "little") + b"N"
    with pytest.raises(Error, match="announces a container of 2147483647 items at byte 5 with "
                                    "1 bytes left"):
        _core.load_payload(payload)


@pytest.mark.parametrize("payload,why", [
    (marshal.dumps((lambda: 0).__code__), "type code 99"),
    (marshal.dumps([1, 2]) + b"N", "1 bytes after its value"),
    (marshal.dumps({"a": 1})[:-1], "ends early"),
    (b"0", "a null at byte 0"),
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


def test_shared_and_cyclic_containers_go_by_pickle_shared_leaves_by_marshal():
    shared = [1, 2]
    cyclic = [0]
    cyclic.append(cyclic)
    assert _core.marshal_plain([shared, shared]) is None
    assert _core.marshal_plain(cyclic) is None
    text = "a string long enough not to be cached" * 2
    assert _core.marshal_plain([text, text]) is not None


def test_a_reference_to_a_container_still_being_read_is_refused():
    # A tuple (flagged: object 0) whose one item is a set holding a reference to object 0: CPython
    # would hash the tuple while its slot is still empty, and crash.
    payload = b"\xa9\x01" + b"<\x01\x00\x00\x00" + b"r\x00\x00\x00\x00"
    with pytest.raises(Error, match="refers at byte 7 to object 0, which is still being read"):
        _core.load_payload(payload)
