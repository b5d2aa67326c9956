// The LRRT_* environment variables (src/runtime/env.cpp, docs/environment.md):
// one strict parser for all of them. A malformed or out-of-range value fails
// lr_check_environment and lr_init with LR_ERROR_INVALID_ARGUMENT and a
// message naming the variable and its value; before, strtoull read "abc" as
// 0 (wait forever), "2s" as 2 ms and "-1" as 2^64-1.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "lrrt/lrrt.h"

namespace {

// Sets (or unsets) a variable for one scope.
class Env {
 public:
  Env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~Env() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// lr_check_environment and lr_init both refuse the value, naming it.
void expect_refused(const char* name, const char* value, const char* what) {
  CAPTURE(name);
  CAPTURE(value);
  Env env(name, value);
  REQUIRE(lr_check_environment() == LR_ERROR_INVALID_ARGUMENT);
  const std::string message = lr_last_error_message();
  CHECK_MESSAGE(message.find(std::string(name) + "='" + value + "' is not ") != std::string::npos, message);
  CHECK_MESSAGE(message.find(what) != std::string::npos, message);
  REQUIRE(lr_init() == LR_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(lr_last_error_message()).find(std::string(name) + "='" + value + "'") != std::string::npos);
  // Nothing was made: lr_init can run once the value is fixed.
  CHECK(lr_shutdown() == LR_ERROR_NOT_INITIALIZED);
}

uint64_t read_u64(const char* name) {
  uint64_t value = 12345;
  int is_set = -1;
  REQUIRE(lr_get_environment_u64(name, &value, &is_set) == LR_SUCCESS);
  REQUIRE(is_set == 1);
  return value;
}

}  // namespace

TEST_CASE("environment: counts are digits only and range-checked, at lr_init and lr_check_environment") {
  expect_refused("LRRT_WAIT_TIMEOUT_MS", "abc", "a whole number of milliseconds from 0 to 1000000000000");
  expect_refused("LRRT_WAIT_TIMEOUT_MS", "2s", "a whole number of milliseconds");
  expect_refused("LRRT_WAIT_TIMEOUT_MS", "-1", "a whole number of milliseconds");
  expect_refused("LRRT_WAIT_TIMEOUT_MS", "1000000000001", "a whole number of milliseconds");
  expect_refused("LRRT_WAIT_TIMEOUT_MS", "99999999999999999999999", "a whole number of milliseconds");
  expect_refused("LRRT_WAIT_SPIN_US", "abc", "a whole number of microseconds from 0 to 60000000");
  expect_refused("LRRT_WAIT_SPIN_US", "60000001", "a whole number of microseconds");
  expect_refused("LRRT_WAIT_SPIN_US", " 5", "a whole number of microseconds");
  expect_refused("LRRT_STAGING_THREADS", "0", "a whole number of threads from 1 to 64");
  expect_refused("LRRT_GRAPH_MAX_IN_FLIGHT", "65", "a count of replays from 1 to 64");
  expect_refused("LRRT_HOST_THREADS", "+4", "a whole number of threads from 1 to 1024");
}

TEST_CASE("environment: sizes take digits and K, M or G without wrapping") {
  expect_refused("LRRT_STAGING_MIN", "-1", "is not a size from 1 to 18446744073709551615 bytes");
  expect_refused("LRRT_STAGING_MIN", "0", "is not a size from 1");
  expect_refused("LRRT_STAGING_CHUNK", "18446744073709551615K", "is not a size from 4096 to 1073741824 bytes");
  expect_refused("LRRT_STAGING_CHUNK", "17179869184G", "is not a size from 4096");  // 2^64 bytes: wraps to 0
  expect_refused("LRRT_STAGING_CHUNK", "4T", "is not a size from 4096");
  expect_refused("LRRT_STAGING_CHUNK", "2K", "is not a size from 4096");
  std::mt19937_64 rng(std::random_device{}());
  const uint64_t kib = 4 + rng() % ((1u << 20) - 3);  // 4 KiB .. 1 GiB
  const std::string chunk = std::to_string(kib) + "K";
  Env env("LRRT_STAGING_CHUNK", chunk.c_str());
  CHECK(lr_check_environment() == LR_SUCCESS);
  CHECK(read_u64("LRRT_STAGING_CHUNK") == kib * 1024);
  Env min("LRRT_STAGING_MIN", "3M");
  CHECK(read_u64("LRRT_STAGING_MIN") == 3u << 20);
}

TEST_CASE("environment: choices are one of their list, and a bad value on any backend fails lr_init") {
  expect_refused("LRRT_STAGING", "of", "is not one of auto, off, force, 0, no");
  expect_refused("LRRT_STAGING_NT", "d2h ", "is not one of d2h, h2d, both, none");
  expect_refused("LRRT_STAGING_TRACE", "yes", "is not one of 0, 1");
  expect_refused("LRRT_CUDA_SYNC", "flags", "is not one of query, flag, launch");
  expect_refused("LRRT_CUDA_GRAPH_COMPLETION", "nodes", "is not one of deferred, node");
  expect_refused("LRRT_TEST_WORST_ORDER", "true", "is not one of 0, 1");
  // A control character is quoted escaped.
  Env env("LRRT_STAGING", "off\x1b[2J");
  REQUIRE(lr_check_environment() == LR_ERROR_INVALID_ARGUMENT);
  const std::string message = lr_last_error_message();
  CHECK_MESSAGE(message.find("LRRT_STAGING='off\\x1b[2J'") != std::string::npos, message);
  CHECK(message.find('\x1b') == std::string::npos);
}

TEST_CASE("environment: a good value is what lr_init uses, unset or empty is not set") {
  std::mt19937_64 rng(std::random_device{}());
  const uint64_t timeout = 1 + rng() % 1000000, spin = rng() % 5000;
  const std::string t = std::to_string(timeout), s = std::to_string(spin);
  {
    Env a("LRRT_WAIT_TIMEOUT_MS", t.c_str());
    Env b("LRRT_WAIT_SPIN_US", s.c_str());
    CHECK(read_u64("LRRT_WAIT_TIMEOUT_MS") == timeout);
    REQUIRE(lr_init() == LR_SUCCESS);
    uint64_t got = 0;
    REQUIRE(lr_get_wait_timeout_ms(&got) == LR_SUCCESS);
    CHECK(got == timeout);
    REQUIRE(lr_get_wait_spin_us(&got) == LR_SUCCESS);
    CHECK(got == spin);
    REQUIRE(lr_shutdown() == LR_SUCCESS);
  }
  Env empty("LRRT_WAIT_TIMEOUT_MS", "");
  uint64_t value = 7;
  int is_set = 7;
  REQUIRE(lr_get_environment_u64("LRRT_WAIT_TIMEOUT_MS", &value, &is_set) == LR_SUCCESS);
  CHECK(is_set == 0);
  CHECK(value == 0);
  // Only the variables lrrt reads as numbers.
  CHECK(lr_get_environment_u64("LRRT_STAGING", &value, &is_set) == LR_ERROR_NOT_FOUND);
  CHECK(lr_get_environment_u64("PATH", &value, &is_set) == LR_ERROR_NOT_FOUND);
  CHECK(lr_get_environment_u64(nullptr, &value, &is_set) == LR_ERROR_INVALID_ARGUMENT);
  // The timeout's limit, where its nanoseconds would overflow.
  CHECK(lr_set_wait_timeout_ms(1'000'000'000'001ull) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(lr_last_error_message()).find("longer than the limit of 1000000000000 ms") != std::string::npos);
  CHECK(lr_set_wait_timeout_ms(UINT64_MAX / 2) == LR_ERROR_INVALID_ARGUMENT);
  CHECK(lr_set_wait_timeout_ms(1'000'000'000'000ull) == LR_SUCCESS);
  CHECK(lr_set_wait_timeout_ms(0) == LR_SUCCESS);
}
