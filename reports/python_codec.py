#!/usr/bin/python3
"""What an object collective's payload costs to make and read in one Python process (torch
imported, as in a training job): pickle, and CPython's marshal (as a peer: unchecked, and the
type check that would decide between it and pickle not counted), against the plain format the
package sends plain values in (ranks.dist._dumps; _core.load_payload reads a peer's), with
Python's cyclic collector running as usual and paused while reading (as the collectives do).
Best of 20 calls, ms.

    PYTHONPATH=build/python python3 reports/python_codec.py
"""

import gc
import marshal
import pickle
import time

import torch  # noqa: F401  (its objects are what the collector walks)

from ranks import _core
import ranks.dist as dist


def best(fn, calls=20):
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def paused(fn):
    def run():
        gc.disable()
        try:
            fn()
        finally:
            gc.enable()
    return run


def main():
    payloads = {
        'anchor dict {"k<i>": i}, 10,000 entries': {f"k{i}": i for i in range(10000)},
        "str -> 8 floats, 10,000 entries": {f"k{i}": [0.5 * i + j for j in range(8)]
                                            for i in range(10000)},
    }
    print(f"# {len(gc.get_objects())} objects tracked by the collector")
    print(f"{'payload':42s} {'codec':8s} {'bytes':>8s} {'dump':>7s} {'read':>7s} {'read, paused':>13s}")
    for name, value in payloads.items():
        pickled = pickle.dumps(value)
        marshalled = marshal.dumps(value, 4)
        plain = dist._dumps(value, "report")
        rows = [("pickle", pickled, lambda: pickle.dumps(value), lambda: pickle.loads(pickled)),
                ("marshal", marshalled, lambda: marshal.dumps(value, 4),
                 lambda: marshal.loads(marshalled)),
                ("plain", plain, lambda: dist._dumps(value, "report"),
                 lambda: _core.load_payload(plain))]
        for codec, data, dump, read in rows:
            print(f"{name:42s} {codec:8s} {len(data):8d} {best(dump):7.2f} {best(read):7.2f} "
                  f"{best(paused(read)):13.2f}")


if __name__ == "__main__":
    main()
