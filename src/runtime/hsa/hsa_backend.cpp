// The hsa backend: ROCr (libhsa-runtime64) loaded at run time; every GPU
// agent becomes a device.
#include <sys/stat.h>

#include "hsa_device.hpp"

namespace lrrt::rt {
namespace hsa {
namespace {

hsa_status_t collect_agent(hsa_agent_t agent, void* data) {
  auto* ctx = static_cast<Context*>(data);
  hsa_device_type_t type;
  if (ctx->api.hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type) != HSA_STATUS_SUCCESS)
    return HSA_STATUS_SUCCESS;
  if (type == HSA_DEVICE_TYPE_GPU) ctx->gpu_agents.push_back(agent);
  if (type == HSA_DEVICE_TYPE_CPU && ctx->cpu_agent.handle == 0) ctx->cpu_agent = agent;
  return HSA_STATUS_SUCCESS;
}

class HsaBackend final : public Backend {
 public:
  std::string_view name() const override { return "hsa"; }

  BackendStatus initialize() override {
    try {
      return do_initialize();
    } catch (const std::exception& e) {
      ctx_.reset();
      return {false, e.what()};
    }
  }

  uint32_t device_count() const override {
    return ctx_ ? uint32_t(ctx_->gpu_agents.size()) : 0;
  }

  std::unique_ptr<Device> open_device(uint32_t ordinal) override {
    if (!ctx_ || ordinal >= ctx_->gpu_agents.size())
      LRRT_THROW(LR_ERROR_NOT_FOUND, "hsa device {} does not exist ({} GPU agent(s))", ordinal,
                 device_count());
    return std::make_unique<HsaDevice>(ctx_, ctx_->gpu_agents[ordinal], ordinal);
  }

 private:
  BackendStatus do_initialize() {
    auto ctx = std::make_shared<Context>();
    std::string why = load_hsa_symbols(ctx->api);
    if (!why.empty()) return {false, why};
    const HsaSymbols& api = ctx->api;
    hsa_status_t st = api.hsa_init();
    if (st != HSA_STATUS_SUCCESS) {
      struct stat sb;
      bool kfd = ::stat("/dev/kfd", &sb) == 0;
      std::string msg = fmt::format("hsa_init in {} failed: {}", api.library_name, hsa_error_text(api, st));
      if (!kfd) msg += "; /dev/kfd is missing, so this machine has no usable AMD GPU driver";
      else if (st == HSA_STATUS_ERROR_OUT_OF_RESOURCES)
        msg += "; check that this user may open /dev/kfd and /dev/dri (groups video, render)";
      return {false, msg};
    }
    ctx->initialized = true;
    uint16_t major = 0, minor = 0;
    api.hsa_system_get_info(HSA_SYSTEM_INFO_VERSION_MAJOR, &major);
    api.hsa_system_get_info(HSA_SYSTEM_INFO_VERSION_MINOR, &minor);
    ctx->version = fmt::format("HSA {}.{}", major, minor);
    uint64_t freq = 0;
    if (api.hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &freq) == HSA_STATUS_SUCCESS &&
        freq)
      ctx->timestamp_frequency = freq;
    st = api.hsa_iterate_agents(collect_agent, ctx.get());
    if (st != HSA_STATUS_SUCCESS)
      return {false, fmt::format("hsa_iterate_agents failed: {}", hsa_error_text(api, st))};
    if (ctx->gpu_agents.empty())
      return {false, fmt::format("{} ({}) initialised but found no GPU agent", api.library_name,
                                 ctx->version)};
    if (ctx->cpu_agent.handle == 0)
      return {false, fmt::format("{} reported no CPU agent, so there is no host memory pool",
                                 api.library_name)};
    // Without a handler, ROCr aborts the process on a GPU memory fault or a
    // hardware exception (a GPU hang reset, an ECC error).
    std::string note;
    ctx->faults = std::make_shared<FaultSink>(ctx->gpu_agents);
    st = register_system_event_handler(api, ctx->faults);
    if (st != HSA_STATUS_SUCCESS) {
      ctx->faults.reset();
      note = fmt::format("; hsa_amd_register_system_event_handler failed ({}): a GPU memory fault or a hardware "
                         "exception will abort the process",
                         hsa_error_text(api, st));
    }
    std::string names;
    for (auto a : ctx->gpu_agents) {
      char name[64] = {};
      api.hsa_agent_get_info(a, HSA_AGENT_INFO_NAME, name);
      names += (names.empty() ? "" : ", ") + std::string(name);
    }
    ctx_ = std::move(ctx);
    return {true, fmt::format("{} from {}; {} GPU agent(s): {}{}", ctx_->version, ctx_->api.library_name,
                              ctx_->gpu_agents.size(), names, note)};
  }

  std::shared_ptr<Context> ctx_;
};

}  // namespace

}  // namespace hsa

std::unique_ptr<Backend> make_hsa_backend() { return std::make_unique<hsa::HsaBackend>(); }

}  // namespace lrrt::rt
