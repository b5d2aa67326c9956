// The benchmark registry: the one list of benchmarks that --list, --help and
// dispatch read (the CLI side is in tests/cli/test_cli.cpp).
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "tool/bench/registry.hpp"
#include "tool/bundle.hpp"

using namespace lrrt::tool::bench;

TEST_CASE("bench registry: unique names, a description and a function each, lookup by name") {
  const auto& all = benchmarks();
  REQUIRE(all.size() >= 5);
  std::set<std::string> names;
  for (const auto& b : all) {
    INFO(b.name);
    CHECK(names.insert(b.name).second);
    CHECK(!b.description.empty());
    CHECK(bool(b.run));
    CHECK(b.name.find_first_of(" ,") == std::string::npos);  // usable in a comma-separated list
    CHECK(&find_benchmark(b.name) == &b);
  }
  CHECK_FALSE(names.count("all"));  // "all" means every one
  // Retained replay beside the native graph (issue 10; run in tests/cli).
  CHECK(names.count("replay"));
  try {
    find_benchmark("no-such-benchmark");
    FAIL("expected an error");
  } catch (const lrrt::tool::InputError& e) {
    const std::string what = e.what();
    CHECK(what.find("no-such-benchmark") != std::string::npos);
    for (const auto& b : all) CHECK_MESSAGE(what.find(b.name) != std::string::npos, b.name);
  }
}
