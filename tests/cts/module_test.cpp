// Module lifetime: destroying a module waits for the work that uses it and
// invalidates its kernels; loads of one image are independent; a module lists
// its kernels; images that are not code objects for the device are refused.
#include <algorithm>

#include "cts.hpp"

namespace lrrt::cts {
namespace {

lr_module_t* load_raw(const Session& s, const std::vector<std::byte>& image) {
  lr_module_t* module = nullptr;
  CTS_OK(lr_module_load(s.get(), image.data(), image.size(), &module));
  return module;
}

lr_kernel_t* kernel_raw(lr_module_t* module, const char* name) {
  lr_kernel_t* kernel = nullptr;
  CTS_OK(lr_kernel_get(module, name, &kernel));
  return kernel;
}

std::vector<std::byte> vector_add_image() { return read_file(kernel_dir() + "/" + backend().kernel_file("vector_add")); }

}  // namespace

TEST_SUITE("modules") {

TEST_CASE("destroying a module waits for its work and invalidates its kernels") {
  Session s;
  CTS_RANDOM(rng);
  const uint32_t n = backend().long_work_elements(), chain = 8;
  auto a = rng.ints(n), b = rng.ints(n);
  auto da = upload(s.device(), a), db = upload(s.device(), b);
  auto dc = poisoned(s.device(), size_t(n) * 4);
  lr_module_t* module = load_raw(s, vector_add_image());
  lr_kernel_t* add = kernel_raw(module, "vector_add_i32");
  Args first, next;
  first.add(da.data()).add(db.data()).add(dc.data()).add(n);
  next.add(dc.data()).add(db.data()).add(dc.data()).add(n);
  const auto cfg = config_1d(n, 256);
  CTS_OK(lr_launch(add, &cfg, first.data(), first.size()));
  for (uint32_t i = 1; i < chain; ++i) CTS_OK(lr_launch(add, &cfg, next.data(), next.size()));
  // Still running, most likely; the destroy waits (the host backend would
  // otherwise unmap the code under its workers).
  CTS_OK(lr_module_destroy(module));
  auto c = download<int32_t>(dc, n);
  check_every(std::span<const int32_t>(c), [&](size_t i) { return int32_t(uint32_t(a[i]) + chain * uint32_t(b[i])); },
              "c = a + 8 b, finished before the module went");

  CTS_FAILS(lr_launch(add, &cfg, first.data(), first.size()), LR_ERROR_INVALID_ARGUMENT, "module was destroyed");
  lr_kernel_properties_t props{};
  CTS_FAILS(lr_kernel_get_properties(add, &props), LR_ERROR_INVALID_ARGUMENT);
  uint32_t count = 0;
  CTS_FAILS(lr_module_kernel_count(module, &count), LR_ERROR_INVALID_ARGUMENT);
  lr_kernel_t* again = nullptr;
  CTS_FAILS(lr_kernel_get(module, "vector_add_i32", &again), LR_ERROR_INVALID_ARGUMENT);
  CTS_FAILS(lr_module_destroy(module), LR_ERROR_INVALID_ARGUMENT);
  CTS_FAILS(lr_module_destroy(nullptr), LR_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("two loads of one image are independent modules") {
  Session s;
  CTS_RANDOM(rng);
  const auto image = vector_add_image();
  lr_module_t* m1 = load_raw(s, image);
  lr_module_t* m2 = load_raw(s, image);
  CHECK(m1 != m2);
  lr_kernel_t* k1 = kernel_raw(m1, "vector_add_f32");
  lr_kernel_t* k2 = kernel_raw(m2, "vector_add_f32");
  CHECK(k1 != k2);
  CTS_OK(lr_module_destroy(m1));
  const uint32_t n = 10'007;
  auto a = rng.floats(n), b = rng.floats(n);
  auto da = upload(s.device(), a), db = upload(s.device(), b);
  auto dc = poisoned(s.device(), size_t(n) * 4);
  Args args;
  args.add(da.data()).add(db.data()).add(dc.data()).add(n);
  const auto cfg = config_1d(n, 128);
  CTS_FAILS(lr_launch(k1, &cfg, args.data(), args.size()), LR_ERROR_INVALID_ARGUMENT);
  CTS_OK(lr_launch(k2, &cfg, args.data(), args.size()));
  auto c = download<float>(dc, n);
  check_every(std::span<const float>(c), [&](size_t i) { return a[i] + b[i]; }, "c = a + b through the second load");
  CTS_OK(lr_module_destroy(m2));
}

TEST_CASE("a module lists its kernels and finds each by name") {
  Session s;
  auto module = s.load("vector_add");
  auto names = module.kernel_names();
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"vector_add_f32", "vector_add_i32"});
  CHECK(module.kernel("vector_add_i32").get() == module.kernel("vector_add_i32").get());
  CHECK(module.kernel("vector_add_i32").get() != module.kernel("vector_add_f32").get());
  CHECK(std::string(module.kernel("vector_add_f32").properties().name) == "vector_add_f32");
  lr_kernel_t* none = nullptr;
  CTS_FAILS(lr_kernel_get(module.get(), "nope", &none), LR_ERROR_NOT_FOUND, "nope", "vector_add_f32", "vector_add_i32");
  char name[LR_NAME_CAPACITY];
  CTS_FAILS(lr_module_kernel_name(module.get(), 2, name, sizeof(name)), LR_ERROR_INVALID_ARGUMENT);
  char small[4];
  CTS_FAILS(lr_module_kernel_name(module.get(), 0, small, sizeof(small)), LR_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("images that are not code objects for the device are refused") {
  Session s;
  lr_module_t* module = nullptr;
  const char garbage[] = "this is not a code object";
  CTS_FAILS(lr_module_load(s.get(), garbage, sizeof(garbage), &module), LR_ERROR_INVALID_IMAGE);
  CHECK(module == nullptr);
  CTS_FAILS(lr_module_load(s.get(), garbage, 0, &module), LR_ERROR_INVALID_IMAGE, "empty");
  auto image = vector_add_image();
  CTS_FAILS(lr_module_load(s.get(), image.data(), 100, &module), LR_ERROR_INVALID_IMAGE);
  CHECK(module == nullptr);
  // The device still loads a good image afterwards.
  auto good = s.load("vector_add");
  CHECK(good.kernel_names().size() == 2);
}

}  // TEST_SUITE

}  // namespace lrrt::cts
