// Private to the Triton entry reader (triton.cpp, triton_signature.cpp): the
// text helpers both use for messages and checks.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lrrt::formats::triton_detail {

// Text from a file for a message: printable ASCII as is, every other byte
// as \xNN, cut to max_bytes (a hostile name can be anything).
std::string triton_printable(std::string_view s, size_t max_bytes = 80);

// Why a name (the kernel's, a parameter's) cannot be used, or "" when it can:
// it becomes a JSON key, a file name (<name>.cubin) and text in messages.
std::string triton_name_problem(std::string_view name);

}  // namespace lrrt::formats::triton_detail
