// The tool is built on the bundle library (include/lrrt/bundle.hpp) and
// speaks its vocabulary: Manifest, DType, the errors and exit codes, the
// readers of hostile input are used unqualified in lrrt::tool (and as
// tool::InputError from the CLI). Tool code includes this header, not the
// bundle's one by one.
#pragma once

#include "lrrt/bundle.hpp"

namespace lrrt::tool {
using namespace lrrt::bundle;
}  // namespace lrrt::tool
