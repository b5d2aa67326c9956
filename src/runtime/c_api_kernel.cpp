// The C ABI's modules (lr_module_*), Triton entries (lr_triton_describe*),
// kernels (lr_kernel_*: properties, arguments and their access, flags, Triton
// IR) and launches (lr_launch*). Shared helpers: c_api_support.hpp.
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "c_api_support.hpp"
#include "lrrt/formats/kernel.hpp"
#include "lrrt/formats/triton.hpp"

using namespace lrrt::c_api;

// lrrt_formats' argument kinds are the ABI's, value for value.
static_assert(static_cast<int>(formats::ArgKind::ByValue) == LR_ARG_BY_VALUE);
static_assert(static_cast<int>(formats::ArgKind::GlobalBuffer) == LR_ARG_GLOBAL_BUFFER);
static_assert(static_cast<int>(formats::ArgKind::DynamicShared) == LR_ARG_DYNAMIC_SHARED);
static_assert(static_cast<int>(formats::ArgKind::Hidden) == LR_ARG_HIDDEN);
static_assert(static_cast<int>(formats::ArgKind::Other) == LR_ARG_OTHER);
static_assert(sizeof(lr_launch_block_t) == 32, "lr_launch_block_t: the arguments start at offset 32 (lrrt.h)");
static_assert(static_cast<int>(formats::AccessMode::Read) == LR_ACCESS_READ);
static_assert(static_cast<int>(formats::AccessMode::Write) == LR_ACCESS_WRITE);
static_assert(static_cast<int>(formats::AccessMode::ReadWrite) == LR_ACCESS_READ_WRITE);
static_assert(static_cast<int>(formats::AccessSource::Default) == LR_ACCESS_SOURCE_DEFAULT);
static_assert(static_cast<int>(formats::AccessSource::Declared) == LR_ACCESS_SOURCE_DECLARED);
static_assert(static_cast<int>(formats::AccessSource::ActualAccess) == LR_ACCESS_SOURCE_ACTUAL_ACCESS);
static_assert(static_cast<int>(formats::AccessSource::Access) == LR_ACCESS_SOURCE_ACCESS);
static_assert(static_cast<int>(formats::AccessSource::Ttir) == LR_ACCESS_SOURCE_TTIR);

extern "C" {

lr_status_t lr_module_load(lr_device_t device, const void* image, size_t image_size, lr_module_t** module) {
  return guard("lr_module_load", [&] {
    require(module, "module");
    *module = nullptr;
    if (!image && image_size) LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "image is null");
    Runtime& r = rt();
    *module = r.load_module(r.device(device), {static_cast<const std::byte*>(image), image_size});
  });
}

lr_status_t lr_module_load_hsaco(lr_device_t device, const void* image, size_t image_size, lr_module_t** module) {
  return lr_module_load(device, image, image_size, module);
}

lr_status_t lr_module_destroy(lr_module_t* module) {
  return guard("lr_module_destroy", [&] { rt().destroy_module(module); });
}

lr_status_t lr_module_kernel_count(lr_module_t* module, uint32_t* count) {
  return guard("lr_module_kernel_count", [&] {
    require(count, "count");
    rt().check_module(module);
    *count = static_cast<uint32_t>(module->module->kernel_names().size());
  });
}

lr_status_t lr_module_kernel_name(lr_module_t* module, uint32_t index, char* name, size_t name_size) {
  return guard("lr_module_kernel_name", [&] {
    require(name, "name");
    rt().check_module(module);
    auto names = module->module->kernel_names();
    if (index >= names.size())
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "kernel index {} out of range ({} kernels)", index, names.size());
    if (names[index].size() + 1 > name_size)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "name needs {} bytes", names[index].size() + 1);
    copy_string(name, name_size, names[index]);
  });
}

lr_status_t lr_module_source(lr_module_t* module, char* text, size_t* size) {
  return guard("lr_module_source", [&] {
    require(size, "size");
    rt().check_module(module);
    const std::string& source = module->module->source();
    const size_t capacity = *size;
    *size = source.size() + 1;
    require(text, "text");
    if (source.size() + 1 > capacity)
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "the source needs {} bytes, the buffer has {}", source.size() + 1, capacity);
    copy_string(text, capacity, source);
  });
}

namespace {
void copy_out_text(const std::string& text, char* out, size_t* size) {
  const size_t capacity = *size;
  *size = text.size() + 1;
  require(out, "json");
  if (text.size() + 1 > capacity)
    LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "the description needs {} bytes, the buffer has {}", text.size() + 1, capacity);
  copy_string(out, capacity, text);
}
}  // namespace

lr_status_t lr_triton_describe(const char* path, char* json, size_t* size) {
  return guard("lr_triton_describe", [&] {
    require(size, "size");
    require(path, "path");
    copy_out_text(formats::triton_entry_json(formats::read_triton_entry(path)), json, size);
  });
}

lr_status_t lr_triton_describe_texts(const char* metadata_json, const char* ir_text, char* json, size_t* size) {
  return guard("lr_triton_describe_texts", [&] {
    require(size, "size");
    require(metadata_json, "metadata_json");
    require(ir_text, "ir_text");
    copy_out_text(formats::triton_entry_json(formats::parse_triton_entry(metadata_json, ir_text, "(in-memory metadata)")),
                  json, size);
  });
}

lr_status_t lr_kernel_get(lr_module_t* module, const char* name, lr_kernel_t** kernel) {
  return guard("lr_kernel_get", [&] {
    require(kernel, "kernel");
    require(name, "name");
    *kernel = rt().kernel(module, name);
  });
}

lr_status_t lr_kernel_get_properties(lr_kernel_t* kernel, lr_kernel_properties_t* props) {
  return guard("lr_kernel_get_properties", [&] {
    require(props, "props");
    rt().check_kernel(kernel);
    const auto& info = kernel->kernel->info();
    *props = {};
    copy_string(props->name, sizeof(props->name), info.name);
    props->has_arg_layout = info.has_arg_layout ? 1 : 0;
    props->arg_count = static_cast<uint32_t>(info.args.size());
    props->explicit_arg_count = info.explicit_arg_count();
    props->kernarg_size = info.kernarg_size;
    props->explicit_kernarg_size = info.explicit_kernarg_size();
    props->kernarg_align = info.kernarg_align;
    props->group_segment_size = info.group_segment_size;
    props->private_segment_size = info.private_segment_size;
    props->max_workgroup_size = info.max_workgroup_size;
  });
}

lr_status_t lr_kernel_set_flags(lr_kernel_t* kernel, uint32_t flags) {
  return guard("lr_kernel_set_flags", [&] {
    rt().check_kernel(kernel);
    if (flags & ~uint32_t(LR_KERNEL_WAITS_FOR_PRODUCER))
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "unknown kernel flags {:#x}", flags & ~uint32_t(LR_KERNEL_WAITS_FOR_PRODUCER));
    kernel->kernel->flags.store(flags, std::memory_order_relaxed);
  });
}

lr_status_t lr_kernel_get_flags(lr_kernel_t* kernel, uint32_t* flags) {
  return guard("lr_kernel_get_flags", [&] {
    require(flags, "flags");
    rt().check_kernel(kernel);
    *flags = kernel->kernel->flags.load(std::memory_order_relaxed);
  });
}

lr_status_t lr_kernel_get_arg(lr_kernel_t* kernel, uint32_t index, lr_kernel_arg_t* arg) {
  return guard("lr_kernel_get_arg", [&] {
    require(arg, "arg");
    rt().check_kernel(kernel);
    const auto& args = kernel->kernel->info().args;
    if (index >= args.size())
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "argument index {} out of range ({} arguments)", index, args.size());
    const auto& a = args[index];
    *arg = {};
    arg->offset = a.offset;
    arg->size = a.size;
    arg->kind = static_cast<lr_arg_kind_t>(a.kind);  // same values (checked below)
    copy_string(arg->value_kind, sizeof(arg->value_kind), a.value_kind);
    copy_string(arg->name, sizeof(arg->name), a.name);
    copy_string(arg->type_name, sizeof(arg->type_name), a.type_name);
  });
}

lr_status_t lr_kernel_get_arg_access(lr_kernel_t* kernel, uint32_t index, lr_access_mode_t* mode,
                                     lr_access_source_t* source) {
  return guard("lr_kernel_get_arg_access", [&] {
    require(mode, "mode");
    require(source, "source");
    rt().check_kernel(kernel);
    const auto& args = kernel->kernel->info().args;
    if (index >= args.size())
      LRRT_THROW(LR_ERROR_INVALID_ARGUMENT, "argument index {} out of range ({} arguments)", index, args.size());
    const auto& a = args[index];
    const formats::DerivedAccess d =
        a.kind == formats::ArgKind::Hidden ? formats::DerivedAccess{} : kernel->kernel->arg_access(a.offset);
    *mode = static_cast<lr_access_mode_t>(d.mode);        // same values (checked below)
    *source = static_cast<lr_access_source_t>(d.source);  // same values (checked below)
  });
}

lr_status_t lr_kernel_set_triton_ir(lr_kernel_t* kernel, const char* ir_text) {
  return guard("lr_kernel_set_triton_ir", [&] {
    require(ir_text, "ir_text");
    rt().check_kernel(kernel);
    const auto& info = kernel->kernel->info();
    const std::string where = fmt::format("the Triton IR given for kernel '{}'", info.name);
    const auto params = formats::parse_triton_signature(ir_text, info.name, where);
    const formats::TritonAccess access = formats::analyze_triton_access(ir_text, info.name);
    // Triton's launcher packs the parameters with natural alignment (the
    // manifest layer does the same); a layout the code object records must
    // hold an 8-byte argument where each pointer lands.
    std::vector<lrrt::rt::ArgAccessTable::Entry> entries;
    uint32_t cursor = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      const uint32_t size = params[i].size();
      cursor = (cursor + size - 1) / size * size;
      if (params[i].pointer) {
        if (info.has_arg_layout) {
          bool found = false;
          for (const auto& a : info.args) found |= a.kind != formats::ArgKind::Hidden && a.offset == cursor && a.size == 8;
          if (!found)
            LRRT_THROW(LR_ERROR_INVALID_ARGUMENT,
                       "{}: pointer parameter {} ('{}') lands at argument offset {}, where kernel '{}' "
                       "has no 8-byte argument: the IR is not this kernel's",
                       where, i, params[i].name, cursor, info.name);
        }
        formats::DerivedAccess d;
        if (access.analysed && i < access.params.size()) d = {access.params[i].mode(), formats::AccessSource::Ttir};
        entries.emplace_back(cursor, d);
      }
      cursor += size;
    }
    kernel->kernel->triton_access.set(std::move(entries));
  });
}

lr_status_t lr_launch(lr_kernel_t* kernel, const lr_launch_config_t* config, const void* args, size_t args_size) {
  return guard("lr_launch", [&] {
    Runtime& r = rt();
    r.check_kernel(kernel);
    DeviceState* d = kernel->module->device;
    launch(r, *d->default_queue, d->default_queue_submissions, d, kernel, config, args, args_size, nullptr, 0);
  });
}

lr_status_t lr_launch_block(const lr_launch_block_t* block) {
  return guard("lr_launch_block", [&] {
    require(block, "block");
    // The header is copied out, not read in place: lrrt.h asks no alignment
    // of the block (a caller may pack it into any byte buffer), and a load of
    // its 8-byte fields from an address that is not 8-byte aligned is
    // undefined behaviour.
    // Through a byte pointer: memcpy from the typed pointer would still let
    // the compiler assume its alignment (UBSan reports it).
    const auto* bytes = reinterpret_cast<const std::byte*>(block);
    lr_launch_block_t h;
    std::memcpy(&h, bytes, sizeof h);
    Runtime& r = rt();
    const void* args = bytes + sizeof(lr_launch_block_t);
    const size_t size = h.args_size;
    if (h.queue) {
      r.check_queue(h.queue);
      launch(r, *h.queue->queue, h.queue->submissions, h.queue->device, h.kernel, h.config, args, size, nullptr, 0);
      return;
    }
    r.check_kernel(h.kernel);
    DeviceState* d = h.kernel->module->device;
    launch(r, *d->default_queue, d->default_queue_submissions, d, h.kernel, h.config, args, size, nullptr, 0);
  });
}

lr_status_t lr_launch_with_dependencies(lr_kernel_t* kernel, const lr_launch_config_t* config, const void* args,
                                        size_t args_size, lr_event_t* const* dependencies,
                                        size_t dependency_count) {
  return guard("lr_launch_with_dependencies", [&] {
    Runtime& r = rt();
    r.check_kernel(kernel);
    DeviceState* d = kernel->module->device;
    launch(r, *d->default_queue, d->default_queue_submissions, d, kernel, config, args, args_size, dependencies, dependency_count);
  });
}

lr_status_t lr_launch_on_queue(lr_queue_t* queue, lr_kernel_t* kernel, const lr_launch_config_t* config,
                               const void* args, size_t args_size) {
  return guard("lr_launch_on_queue", [&] {
    Runtime& r = rt();
    r.check_queue(queue);
    launch(r, *queue->queue, queue->submissions, queue->device, kernel, config, args, args_size, nullptr, 0);
  });
}

lr_status_t lr_launch_on_queue_with_dependencies(lr_queue_t* queue, lr_kernel_t* kernel,
                                                 const lr_launch_config_t* config, const void* args,
                                                 size_t args_size, lr_event_t* const* dependencies,
                                                 size_t dependency_count) {
  return guard("lr_launch_on_queue_with_dependencies", [&] {
    Runtime& r = rt();
    r.check_queue(queue);
    launch(r, *queue->queue, queue->submissions, queue->device, kernel, config, args, args_size, dependencies, dependency_count);
  });
}

}  // extern "C"
