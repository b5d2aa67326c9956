// Units as people read them, written once for every printer and benchmark:
// times from nanoseconds, byte counts, bandwidth, ratios; and the size
// syntax of options (`--sizes 4K..1G`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lrrt::tool {

// "512 ns", "4.14 us", "1.62 ms", "2.00 s".
std::string format_time_ns(double ns);
// Exact sizes in the largest unit that divides them ("4 KiB", "64 MiB",
// "1 GiB"), others with one decimal ("1.1 KiB", "23.5 GiB"), "512 B" below
// 1 KiB.
std::string format_bytes(double bytes);
// "12.34 GB/s" (GB = 1e9 bytes, as bytes per nanosecond).
std::string format_gbps(double gbps);
// "1.05x".
std::string format_ratio(double ratio);
// "48%" from a fraction.
std::string format_percent(double fraction);

// "4096", "4K", "64KiB", "1M", "1GiB" (binary multiples); throws InputError.
uint64_t parse_size(const std::string& text);
// A comma-separated list of sizes or ranges "LO..HI" (x4 steps) and
// "LO..HI:F" (xF steps); sorted, without duplicates; throws InputError.
std::vector<uint64_t> parse_sizes(const std::string& text);

}  // namespace lrrt::tool
