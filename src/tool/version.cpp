#include "tool/version.hpp"

namespace lrrt::tool {
const char* version() { return LRRT_VERSION; }
const char* git_sha() { return LRRT_GIT_SHA; }
}  // namespace lrrt::tool
