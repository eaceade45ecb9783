#pragma once
// The plain format: how an object collective carries an object made only of Python's plain
// built-in values, instead of pickle. Written in one pass over the object (no opcode machinery,
// no memo) and read in one pass that makes each object once, with every dict presized from the
// count it announces: both several times cheaper than pickle for an evaluation's metrics dicts
// (reports/python.md).
//
// Faithful for the exact types below only: an object goes this way when every value reachable
// from it has one of them and no container is reached twice (shared, or part of a cycle, which
// pickle keeps as they were); anything else goes through pickle, as in MMEngine and torch.
//
// value := tag, then (all integers little-endian; n, counts: u32)
//   'N' None        'T' True         'F' False
//   'i' int in i32  'q' int in i64   'l' n, n bytes: any other int, two's complement
//   'g' float: f64  'y' complex: f64 real, f64 imaginary
//   's' u8 n, n bytes: str of ASCII characters    'S' n, n bytes: the same, longer
//   'u' n, n bytes: str in UTF-8 (lone surrogates encoded as themselves, as pickle does)
//   'b' n, n bytes: bytes
//   '(' tuple, '[' list, '<' set, '>' frozenset: n, n values
//   '{' dict: n, n pairs of key and value, in the dict's order
// Every tag is ASCII, so a payload's first byte tells plain from pickle, whose protocol 2 and
// up opens with PROTO (0x80).
//
// A peer's bytes are read as untrusted: a stream that is cut short, has bytes after its value,
// a tag not above, text that is not what its tag says, an unhashable key, or containers nested
// deeper than kMaxPlainDepth is refused with the reason. Nothing is allocated for items that
// the bytes left cannot hold (every item takes at least one byte, counted over all the
// containers still open), so what reading allocates is a small multiple of the payload's size.

#include <Python.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ranks::python {

// Containers nested deeper than this go through pickle; the reader refuses them.
inline constexpr int kMaxPlainDepth = 1000;

inline constexpr uint8_t kPickleProto = 0x80;

// Appends value in the plain format to out and returns true when value is plain; otherwise
// leaves out as it was and returns false. Runs no Python code and leaves no Python error set.
bool write_plain(PyObject* value, std::vector<uint8_t>& out);

// The value of one plain stream (a new reference), or null with `problem` saying what is
// wrong ("ends early at byte 7"). Leaves no Python error set either way.
PyObject* read_plain(std::span<const uint8_t> stream, std::string& problem);

}  // namespace ranks::python
