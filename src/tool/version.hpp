#pragma once
namespace lrrt::tool {
const char* version();
const char* git_sha();
}  // namespace lrrt::tool
