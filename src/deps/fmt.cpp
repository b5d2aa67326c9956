// fmt's compiled part (what libfmt.so holds), built once for the whole tree.
//
// Debian ships fmt as headers plus a shared library only, and lrrt's binaries
// must run where Debian's libraries are not installed (the GPU machine), so
// they cannot link libfmt.so. Including fmt header-only instead compiled the
// whole of format-inl.h (dragonbox tables, locale, console I/O) into every
// translation unit that formats anything: about a third of each one's compile
// time, in every build CI makes. Here it is compiled once, from Debian's own
// fmt headers; every other file sees fmt as a compiled library would.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {
// The instantiations that fmt's headers declare extern (format.h) or define
// only in format-inl.h: what an exact libfmt build provides.
template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API void buffer<char>::append(const char*, const char*);
template FMT_API void vformat_to(buffer<char>&, string_view, basic_format_args<FMT_BUFFER_CONTEXT(char)>,
                                 locale_ref);
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
template FMT_API void buffer<wchar_t>::append(const wchar_t*, const wchar_t*);
}  // namespace detail
FMT_END_NAMESPACE
