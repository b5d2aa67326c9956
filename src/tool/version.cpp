#include "tool/version.hpp"

#include "lrrt/lrrt.h"

namespace lrrt::tool {
const char* version() { return lr_version_string(); }
const char* git_sha() { return LRRT_GIT_SHA; }
}  // namespace lrrt::tool
