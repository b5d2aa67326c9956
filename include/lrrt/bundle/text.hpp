// Text that came from a file or the command line, made safe to print: error
// messages quote names, keys and values from hostile inputs, and neither a
// 100 MB key nor ESC, NUL or a right-to-left override may reach a terminal raw.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lrrt::bundle {

// Control characters (C0, DEL, C1), Unicode bidi controls and bytes that are
// not valid UTF-8 become \xNN / \u{NNNN} escapes; text beyond max_bytes is
// cut with a note of how much was left out.
std::string printable(std::string_view text, size_t max_bytes = 200);

// The same escapes, but line breaks and tabs stay and nothing is cut: for
// results printed as tables, CSV and progress notes, whose text may quote
// names from inputs. Text with nothing unsafe comes back unchanged.
std::string terminal_safe(std::string_view text);

// Only the bytes that are not valid UTF-8 become \xNN (the escape the two
// above use), everything else stays: for JSON, whose strings must be UTF-8
// and which escapes control characters itself. A name read from a code
// object as the bytes 73 ff 00 prints as "s\xff" in JSON, tables, CSV and
// messages alike (docs/code-objects.md). Valid text comes back unchanged.
std::string escape_invalid_utf8(std::string_view text);
// Whether the text is valid UTF-8 (no overlong forms, no surrogates).
bool is_valid_utf8(std::string_view text);

}  // namespace lrrt::bundle
