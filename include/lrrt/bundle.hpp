// lrrt::bundle: a kernel described by a manifest (docs/manifest.md), loaded
// and launched without the lrrt CLI. Library lrrt_bundle, installed as the
// CMake target lrrt::bundle (pkg-config: lrrt-bundle); it runs on the C ABI
// through the C++ wrapper (lrrt/lrrt.hpp), so it links liblrrt.so or the
// static runtime. One header per concept:
//   manifest.hpp    parse and validate a manifest; resolve its code object
//   kernel.hpp      LoadedKernel: module, kernel, checked layout, launch config
//   kernargs.hpp    argument layout, checks against the kernel, packing
//   fill.hpp        buffers' initial contents (zeros, fill, iota, random, .npy, raw, poison)
//   dtype.hpp       element types and their conversions (f16, bf16)
//   npy.hpp         NumPy .npy files
//   errors.hpp      InputError / ManifestError (bad input) and DeviceError
//   input_file.hpp, json_input.hpp, text.hpp: hostile-input-safe file, JSON and message text
#pragma once

#include "lrrt/bundle/dtype.hpp"
#include "lrrt/bundle/errors.hpp"
#include "lrrt/bundle/fill.hpp"
#include "lrrt/bundle/input_file.hpp"
#include "lrrt/bundle/json_input.hpp"
#include "lrrt/bundle/kernargs.hpp"
#include "lrrt/bundle/kernel.hpp"
#include "lrrt/bundle/manifest.hpp"
#include "lrrt/bundle/npy.hpp"
#include "lrrt/bundle/sweep.hpp"
#include "lrrt/bundle/text.hpp"
