// The JSON of what `lrrt inspect` reports (docs/code-objects.md "What lrrt
// inspect prints"): one target of a file, with its kernels and their
// argument layout, as lrrt_formats read it. Names are kept as read (bytes
// that are not UTF-8 included); the printers make them safe to show
// (printers::json_text, Layout, csv_field).
#pragma once

#include <nlohmann/json.hpp>

#include "lrrt/formats/inspect.hpp"

namespace lrrt::tool {

nlohmann::json inspect_target_json(const formats::InspectedTarget& target);

}  // namespace lrrt::tool
