#pragma once
// SLURM's compressed host-list syntax ("node[001-003,010],login-1"), expanded by our own parser
// so that no scontrol is needed on the compute nodes.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ranks::launch {

// More hosts than any real allocation; a typo such as "n[0-99999999]" fails instead of
// exhausting memory.
inline constexpr size_t kMaxHosts = size_t{1} << 20;

// Expands a host list in SLURM's order, duplicates kept:
// - items are separated by commas outside brackets; whitespace around an item is ignored;
// - a bracket holds comma-separated numbers and ranges "lo-hi"; the width of lo's text sets the
//   zero padding ("[08-10]" gives 08 09 10, "[8-10]" gives 8 9 10);
// - text may surround brackets, and one name may hold several bracket groups. SLURM expands
//   the last group innermost and the earlier groups from right to left around it, so
//   "r[1-2]n[1-2]" gives r1n1 r1n2 r2n1 r2n2, and "a[1-2]b[1-2]c[1-2]" varies c fastest, then a,
//   then b (a1b1c1 a1b1c2 a2b1c1 a2b1c2 a1b2c1 ...).
// Stricter than SLURM: empty items, whitespace inside a name, "[1-]" and unclosed brackets are
// errors (InvalidArgument quoting the input and the 0-based position), not silently accepted.
std::vector<std::string> expand_hostlist(std::string_view list);

}  // namespace ranks::launch
