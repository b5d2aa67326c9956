// A compiler integration's view of lrrt::bundle: load a kernel described by
// a manifest without the CLI. Runs the installed sample manifests saxpy.json
// (a scalar argument from the manifest) and vector_add_i32.json on the host
// backend: buffers initialised as the manifest says (fresh random seeds),
// arguments packed from the manifest's values and the device buffers, the
// launch configuration from the manifest; every output element is checked
// against a host computation. A manifest whose arguments disagree with the
// kernel is rejected naming the argument.
//   bundle_consumer MANIFEST_DIR KERNEL_DIR
#include <lrrt/bundle.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace bundle = lrrt::bundle;

namespace {

template <typename T>
std::vector<T> as(const std::vector<std::byte>& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

size_t buffer_index(const bundle::Manifest& m, const std::string& name) {
  for (size_t i = 0; i < m.buffers.size(); ++i)
    if (m.buffers[i].name == name) return i;
  throw std::runtime_error(m.name + ": no buffer " + name);
}

// Loads, initialises, launches once; returns the initial and final contents.
struct Run {
  bundle::BufferContents before, after;
  std::vector<std::optional<uint64_t>> seeds;
};
Run run_once(const bundle::Manifest& m, const lrrt::Device& device, const std::string& kernel_dir) {
  bundle::LoadedKernel kernel(m, device, kernel_dir);
  if (!kernel.layout_checked()) throw std::runtime_error(m.name + ": the host kernel's argument layout was not checked");
  const auto& config = kernel.launch_config();
  const uint64_t items = uint64_t(config.grid.x) * config.block.x;
  if (config.block.x != m.launch.workgroup_size[0] || items < m.launch.requested[0] || items - m.launch.requested[0] >= config.block.x)
    throw std::runtime_error(m.name + ": the launch configuration does not cover the manifest's global size");

  std::vector<lrrt::DeviceBuffer> buffers = bundle::allocate_buffers(m, device);
  bundle::InitialContents initial = bundle::initial_contents(m);
  bundle::upload_buffers(buffers, initial.contents);
  kernel.launch(kernel.pack_args(buffers));
  Run r{initial.contents, bundle::BufferContents(m.buffers.size()), initial.seeds};
  for (size_t i = 0; i < buffers.size(); ++i) {
    r.after[i].resize(r.before[i].size());
    lrrt::copy_to_host(r.after[i].data(), buffers[i], r.after[i].size());  // waits for the launch
  }
  return r;
}

int check_saxpy(const std::string& manifest_dir, const lrrt::Device& device, const std::string& kernel_dir) {
  const bundle::Manifest m = bundle::load_manifest(manifest_dir + "/saxpy.json");
  float a = 0;
  bool found = false;
  for (const auto& arg : m.args)
    if (arg.name == "a") a = static_cast<float>(arg.value), found = true;
  if (!found) throw std::runtime_error("saxpy.json has no argument a");
  const size_t ix = buffer_index(m, "x"), iy = buffer_index(m, "y");
  const Run r = run_once(m, device, kernel_dir);
  const auto x = as<float>(r.before[ix]), y0 = as<float>(r.before[iy]), y = as<float>(r.after[iy]);
  if (y.size() != m.buffers[iy].count) throw std::runtime_error("saxpy: y has the wrong size");
  uint64_t wrong = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const float want = a * x[i] + y0[i];
    if (!(std::fabs(y[i] - want) <= 1e-5f * std::fabs(want) + 1e-6f) && wrong++ < 5)
      std::fprintf(stderr, "bundle_consumer: saxpy y[%zu] = %g, expected %g (seeds %llu, %llu)\n", i, y[i], want,
                   static_cast<unsigned long long>(r.seeds[ix].value_or(0)),
                   static_cast<unsigned long long>(r.seeds[iy].value_or(0)));
  }
  if (wrong) return std::fprintf(stderr, "bundle_consumer: saxpy: %llu elements wrong\n", (unsigned long long)wrong), 1;
  std::printf("bundle_consumer: saxpy.json: %zu elements correct\n", y.size());
  return 0;
}

int check_vector_add(const std::string& manifest_dir, const lrrt::Device& device, const std::string& kernel_dir) {
  const bundle::Manifest m = bundle::load_manifest(manifest_dir + "/vector_add_i32.json");
  const size_t ia = buffer_index(m, "a"), ib = buffer_index(m, "b"), ic = buffer_index(m, "c");
  const Run r = run_once(m, device, kernel_dir);
  const auto a = as<int32_t>(r.before[ia]), b = as<int32_t>(r.before[ib]), c = as<int32_t>(r.after[ic]);
  uint64_t wrong = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    const auto want = static_cast<int32_t>(static_cast<uint32_t>(a[i]) + static_cast<uint32_t>(b[i]));
    if (c[i] != want && wrong++ < 5)
      std::fprintf(stderr, "bundle_consumer: vector_add_i32 c[%zu] = %d, expected %d\n", i, c[i], want);
  }
  if (wrong) return std::fprintf(stderr, "bundle_consumer: vector_add_i32: %llu elements wrong\n", (unsigned long long)wrong), 1;
  std::printf("bundle_consumer: vector_add_i32.json: %zu elements correct\n", c.size());
  return 0;
}

// The saxpy manifest with its scalar "a" declared as f64: 8 bytes where the
// kernel takes 4, so loading must fail naming /args/0.
int check_rejects_wrong_layout(const std::string& manifest_dir, const lrrt::Device& device, const std::string& kernel_dir) {
  nlohmann::json doc = bundle::read_json_file(manifest_dir + "/saxpy.json");
  doc["args"][0]["type"] = "f64";
  const bundle::Manifest m = bundle::parse_manifest(doc, manifest_dir);
  try {
    bundle::LoadedKernel kernel(m, device, kernel_dir);
  } catch (const bundle::ManifestError& e) {
    if (e.pointer() != "/args/0")
      return std::fprintf(stderr, "bundle_consumer: wrong layout rejected at %s, not /args/0: %s\n", e.pointer().c_str(), e.what()), 1;
    std::printf("bundle_consumer: a wrong argument layout is rejected: %s\n", e.what());
    return 0;
  }
  return std::fprintf(stderr, "bundle_consumer: a manifest with an f64 where the kernel takes 4 bytes was loaded\n"), 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: bundle_consumer MANIFEST_DIR KERNEL_DIR\n");
    return 2;
  }
  try {
    lrrt::Runtime runtime;
    const lrrt::Device device = lrrt::Device::select("host");
    int failed = 0;
    failed |= check_saxpy(argv[1], device, argv[2]);
    failed |= check_vector_add(argv[1], device, argv[2]);
    failed |= check_rejects_wrong_layout(argv[1], device, argv[2]);
    return failed;
  } catch (const bundle::Error& e) {
    std::fprintf(stderr, "bundle_consumer: %s (exit code %d)\n", e.what(), e.exit_code());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bundle_consumer: %s\n", e.what());
    return 1;
  }
}
