// `lrrt compare` of two `lrrt run` result files holding sweeps: states
// paired by sweep name and axis values; each pair is faster, slower or the
// same within noise (the larger of the two states' relative standard
// deviations, or the threshold when that is larger). The report has the
// shape of compare_core's (report_json), so the compare printers print it.
#pragma once

#include <nlohmann/json.hpp>

namespace lrrt::tool {

// Whether a document is an `lrrt run` result holding at least one sweep.
bool holds_sweeps(const nlohmann::json& doc);

// {"kind": "compare", "threshold", "alpha": null, "summary", "rows", "only_in_base", "only_in_new"}.
// Reads fields without throwing on a missing one (a state without timing is
// left out of the rows, as a skipped state is).
nlohmann::json compare_sweeps(const nlohmann::json& base, const nlohmann::json& next, double threshold);

}  // namespace lrrt::tool
