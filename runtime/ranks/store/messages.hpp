#pragma once
// The pieces every store's error messages share, so that all stores name keys and timeouts the
// same way.

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace ranks::store {

// A key in single quotes, with unprintable bytes escaped and a long key shortened.
std::string quote_key(std::string_view key);
// "key 'a'" or "keys 'a', 'b' and 'c'"; a long list names the first few and counts the rest.
std::string describe_keys(const std::vector<std::string>& keys);
// "250 ms", "30 s".
std::string describe_duration(std::chrono::milliseconds duration);
// "1 KiB", "64 MiB", "70000 bytes".
std::string describe_size(std::size_t bytes);

// Throws InvalidArgument for a negative wait timeout (zero means: do not wait).
void check_wait_timeout(std::string_view store, std::chrono::milliseconds timeout);

// The text of a Timeout: who timed out, after how long, which keys are still missing, plus
// context such as how many clients a server has.
std::string timeout_message(std::string_view store, std::chrono::milliseconds timeout,
                            const std::vector<std::string>& missing, std::string_view context = {});

}  // namespace ranks::store
