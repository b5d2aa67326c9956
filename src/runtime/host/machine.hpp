// Facts about this machine, for the host device's properties and for result
// metadata (lrrt bench, lrrt run).
#pragma once

#include <cstdint>
#include <string>

namespace lrrt::rt::host {

std::string cpu_model_name();      // /proc/cpuinfo "model name"
uint64_t physical_memory_bytes();  // 0 when unknown

}  // namespace lrrt::rt::host
