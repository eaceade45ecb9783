#pragma once
// Call sites of code written in another language (a Python script's `train.py:42`) as the
// std::source_location every op, message and report carries. The compiler makes source locations
// only for C++ lines; this makes one that points at an interned record of the file, function and
// line, so the rest of the library cannot tell a Python call site from a C++ one.

#include <source_location>
#include <string_view>

namespace ranks::detail {

// Valid for the life of the process. The same (file, function, line) gives the same location.
// Thread-safe; never switches fibers.
std::source_location foreign_location(std::string_view file, std::string_view function,
                                      unsigned line);

}  // namespace ranks::detail
