// The runtime core and the host backend through the public C ABI and the
// C++ wrapper: the same calls a user program makes. Behaviour every backend
// shares is in the conformance suite (tests/cts, run as cts.host.*); here is
// what only the ABI or the host backend does.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "lrrt/lrrt.hpp"

TEST_CASE("C ABI reports errors with status codes and messages before lr_init") {
  uint32_t n = 0;
  CHECK(lr_device_count(&n) == LR_ERROR_NOT_INITIALIZED);
  CHECK(std::string(lr_last_error_message()).find("lr_init") != std::string::npos);
  CHECK(lr_shutdown() == LR_ERROR_NOT_INITIALIZED);
  CHECK(std::string(lr_status_string(LR_ERROR_KERNEL_FAULT)) == "LR_ERROR_KERNEL_FAULT");
}

TEST_CASE("C ABI: lr_set_wait_spin_us takes 0 to one minute and names the limit beyond") {
  CHECK(lr_set_wait_spin_us(0) == LR_SUCCESS);
  CHECK(lr_set_wait_spin_us(60'000'000) == LR_SUCCESS);
  CHECK(lr_set_wait_spin_us(60'000'001) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(lr_last_error_message()).find("60000000 us") != std::string::npos);
  CHECK(lr_set_wait_spin_us(2000) == LR_SUCCESS);
  CHECK(std::string(lr_last_error_message()).empty());
}

TEST_CASE("C ABI: a second lr_init fails while the runtime is up, and host is selectable by name") {
  lrrt::Runtime runtime;
  CHECK_THROWS_AS(lrrt::Runtime(), lrrt::Error);  // second lr_init
  auto device = lrrt::Device::select("host");
  CHECK(device.backend() == "host");
}

TEST_CASE("host backend: bad handles and inputs give status codes, not crashes") {
  lrrt::Runtime runtime;
  auto device = lrrt::Device::select("host");
  lr_module_t* module = nullptr;
  const char garbage[] = "this is not a code object";
  CHECK(lr_module_load(device.get(), garbage, sizeof(garbage), &module) == LR_ERROR_INVALID_IMAGE);
  CHECK(std::string(lr_last_error_message()).find("not a code object") != std::string::npos);

  auto hsaco = std::vector<std::byte>(64);
  std::memcpy(hsaco.data(), "\x7f" "ELF\x02\x01\x01", 7);
  hsaco[18] = std::byte{224};  // EM_AMDGPU
  CHECK(lr_module_load(device.get(), hsaco.data(), hsaco.size(), &module) == LR_ERROR_INVALID_IMAGE);
  CHECK(std::string(lr_last_error_message()).find("AMDGPU") != std::string::npos);

  lr_device_t d{};
  CHECK(lr_device_open(999, &d) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(lr_device_select("cuda-typo", 0, &d) == LR_ERROR_NOT_FOUND);
  CHECK(lr_device_select("host", 3, &d) == LR_ERROR_NOT_FOUND);
}
