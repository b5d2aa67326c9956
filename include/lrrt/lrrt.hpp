// C++ RAII wrapper over the lrrt C ABI (lrrt.h). Header-only; failures throw
// lrrt::Error carrying the status and lr_last_error_message().
// One header per concept (lrrt/cpp/), each including what it needs:
//   error.hpp          Error, check()
//   handle.hpp         UniqueHandle
//   runtime.hpp        Runtime
//   device.hpp         Device, MemoryStats, synchronize()
//   queue.hpp          Queue, Event
//   memory.hpp         DeviceBuffer, PinnedHostBuffer, MemoryRegistration, copies
//   module.hpp         LaunchConfig, Kernel, Module, triton_describe(), launch()
//   graph.hpp          access helpers, Graph, GraphExec
//   double_buffer.hpp  PinnedHostDoubleBuffer
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "lrrt/lrrt.h"
#include "lrrt/cpp/error.hpp"
#include "lrrt/cpp/handle.hpp"
#include "lrrt/cpp/runtime.hpp"
#include "lrrt/cpp/device.hpp"
#include "lrrt/cpp/queue.hpp"
#include "lrrt/cpp/memory.hpp"
#include "lrrt/cpp/module.hpp"
#include "lrrt/cpp/graph.hpp"
#include "lrrt/cpp/double_buffer.hpp"
