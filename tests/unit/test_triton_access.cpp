// The Triton IR access analysis (lrrt/formats/triton_access.hpp,
// docs/access.md): every committed Triton entry (tests/triton/entries), the
// tutorial kernels and negative controls compiled by PyPI's Triton 3.6 for
// sm_90 and gfx942 (tests/triton/access, make_access_fixtures.py), and
// hand-written IR for the rules Triton's front end does not produce.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "lrrt/formats/triton.hpp"
#include "lrrt/formats/triton_access.hpp"

using namespace lrrt::formats;

namespace {

std::string access_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string mode_of(const TritonAccess& a, const std::string& param) {
  for (const auto& p : a.params)
    if (p.name == param) return std::string(access_mode_name(p.mode()));
  FAIL("no parameter " << param);
  return "";
}

// A kernel @k whose body is `body`, with pointer parameters %a, %b, %c and an i32 %n.
std::string kernel_ir(const std::string& body) {
  return "module {\n  tt.func public @k(%a: !tt.ptr<f32> loc(\"a\"), %b: !tt.ptr<f32>, %c: !tt.ptr<f32>, %n: i32) "
         "attributes {noinline = false} {\n" +
         body + "    tt.return\n  }\n}\n";
}

TritonAccess analyse(const std::string& body) { return analyze_triton_access(kernel_ir(body), "k"); }

}  // namespace

TEST_CASE("triton access: the committed entries, every target") {
  const std::string root = std::string(LRRT_TEST_SOURCE_DIR) + "/tests/triton/entries/";
  const std::map<std::string, std::map<std::string, std::string>> expected = {
      {"add_kernel", {{"x_ptr", "read"}, {"y_ptr", "read"}, {"out_ptr", "write"}}},
      {"mixed_kernel", {{"x_ptr", "read"}, {"out_ptr", "write"}}},
      {"matmul_kernel", {{"a_ptr", "read"}, {"b_ptr", "read"}, {"c_ptr", "write"}}}};
  int checked = 0;
  for (const char* target : {"sm_90", "gfx942", "gfx1100"})
    for (const auto& [kernel, modes] : expected) {
      CAPTURE(target);
      CAPTURE(kernel);
      const TritonEntry e = read_triton_entry(root + target + "/" + kernel);
      const TritonAccess a = analyze_triton_access(access_text(e.ir_path.string()), kernel);
      REQUIRE_MESSAGE(a.analysed, a.failure);
      REQUIRE(a.params.size() == e.params.size());
      size_t pointers = 0;
      for (size_t i = 0; i < a.params.size(); ++i) {
        CHECK(a.params[i].pointer == e.params[i].pointer);
        pointers += a.params[i].pointer;
      }
      CHECK(pointers == modes.size());
      for (const auto& [param, mode] : modes) CHECK(mode_of(a, param) == mode);
      // The entry carries the same analysis (lr_triton_describe's "access").
      REQUIRE(e.access.analysed);
      for (size_t i = 0; i < a.params.size(); ++i) CHECK(e.access.params[i].mode() == a.params[i].mode());
      ++checked;
    }
  CHECK(checked == 9);
}

TEST_CASE("triton access: the tensor-descriptor entry's descriptors are read, its pointer written") {
  const std::string root = std::string(LRRT_TEST_SOURCE_DIR) + "/tests/triton/entries/sm_90/tma_add_kernel";
  const TritonEntry e = read_triton_entry(root);
  const TritonAccess a = analyze_triton_access(access_text(e.ir_path.string()), "tma_add_kernel");
  REQUIRE_MESSAGE(a.analysed, a.failure);
  REQUIRE(a.params.size() == e.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) CHECK(a.params[i].pointer == (e.params[i].pointer || e.params[i].tensordesc));
  CHECK(mode_of(a, "a_desc") == "read");
  CHECK(mode_of(a, "b_desc") == "read");
  CHECK(mode_of(a, "out_ptr") == "write");
  // lr_triton_describe carries it for the descriptors too.
  const auto j = nlohmann::json::parse(triton_entry_json(e));
  CHECK(j["params"][0]["access"] == "read");
  CHECK(j["params"][0]["access_source"] == "ttir");
  CHECK(j["params"][5]["access"] == "read");
  CHECK(!j["params"][1].contains("access"));  // a_desc.shape0: an i32
  CHECK(j["params"][10]["access"] == "write");
}

TEST_CASE("triton access: descriptor parameters, op by op, and where one escapes") {
  // Host-side descriptors (Triton 3.6 tensordesc parameters), each followed by
  // its shape (i32) and stride (i64) as Triton writes them.
  std::string sig;
  for (const char* d : {"ld", "ga", "st", "sc", "re", "at", "un", "ca", "se", "sf"})
    sig += fmt::format("{}%{}: !tt.tensordesc<tensor<16xf32>> loc(\"{}\"), %{}_s: i32 loc(\"{}\"), %{}_t: i64 loc(\"{}\")",
                       sig.empty() ? "" : ", ", d, d, d, d, d, d);
  const auto ir = [&](const std::string& body) {
    return "module {\n  tt.func public @k(" + sig + ", %n: i32, %p: !tt.ptr<f32>) attributes {noinline = false} {\n" + body +
           "    tt.return\n  }\n}\n";
  };
  const std::string body =
      "    %i = arith.constant 0 : i32\n    %t = arith.constant true\n"
      "    %offs = arith.constant dense<0> : tensor<16xi32>\n"
      "    %v = tt.descriptor_load %ld[%i] : !tt.tensordesc<tensor<16xf32>> -> tensor<16xf32>\n"
      "    %g = tt.descriptor_gather %ga[%offs, %i] : (!tt.tensordesc<tensor<16xf32>>, tensor<16xi32>, i32) -> tensor<16xf32>\n"
      "    tt.descriptor_store %st[%i], %v : !tt.tensordesc<tensor<16xf32>>, tensor<16xf32>\n"
      "    tt.descriptor_scatter %sc[%offs, %i], %g : !tt.tensordesc<tensor<16xf32>>, tensor<16xi32>, i32, tensor<16xf32>\n"
      "    tt.descriptor_reduce add, %re[%i], %v : !tt.tensordesc<tensor<16xf32>>, tensor<16xf32>\n"
      "    %o = tt.descriptor_atomic_future fadd, %at[%i], %v : !tt.tensordesc<tensor<16xf32>>, tensor<16xf32>\n"
      "    tt.experimental_descriptor_prefetch %un[%i] : !tt.tensordesc<tensor<16xf32>>\n"
      "    tt.call @helper(%ca) : (!tt.tensordesc<tensor<16xf32>>) -> ()\n"
      "    %e = arith.select %t, %se, %sf : !tt.tensordesc<tensor<16xf32>>\n"
      "    %w = tt.descriptor_load %e[%i] : !tt.tensordesc<tensor<16xf32>> -> tensor<16xf32>\n"
      "    tt.store %p, %n : !tt.ptr<f32>\n";
  const auto a = analyze_triton_access(ir(body), "k");
  REQUIRE_MESSAGE(a.analysed, a.failure);
  CHECK(mode_of(a, "ld") == "read");
  CHECK(mode_of(a, "ga") == "read");
  CHECK(mode_of(a, "st") == "write");
  CHECK(mode_of(a, "sc") == "write");
  CHECK(mode_of(a, "re") == "read_write");  // a reduction reads what it adds to
  CHECK(mode_of(a, "at") == "read_write");  // tt.descriptor_atomic*: an atomic
  for (const char* d : {"ld", "ga", "st", "sc", "re", "at"}) {
    CAPTURE(d);
    for (const auto& p : a.params)
      if (p.name == d) CHECK(p.reason.empty());  // real accesses, not fallbacks
  }
  // Negative controls: a descriptor meeting an op the analysis does not know,
  // passed to a call, or merged with another, is read-write and says why.
  CHECK(mode_of(a, "un") == "read_write");
  CHECK(mode_of(a, "ca") == "read_write");
  CHECK(mode_of(a, "se") == "read_write");
  CHECK(mode_of(a, "sf") == "read_write");
  for (const auto& p : a.params) {
    if (p.name == "un") CHECK(p.reason.find("tt.experimental_descriptor_prefetch") != std::string::npos);
    if (p.name == "ca") CHECK(p.reason.find("tt.call") != std::string::npos);
    if (p.name == "se") CHECK(p.reason.find("several parameters") != std::string::npos);
  }
  CHECK(mode_of(a, "p") == "write");
  // Without the escape, the same descriptor is only read (the controls can fail).
  const auto only_load = analyze_triton_access(ir("    %i = arith.constant 0 : i32\n"
                                                  "    %v = tt.descriptor_load %un[%i] : !tt.tensordesc<tensor<16xf32>> -> tensor<16xf32>\n"),
                                               "k");
  REQUIRE_MESSAGE(only_load.analysed, only_load.failure);
  CHECK(mode_of(only_load, "un") == "read");
  CHECK(mode_of(only_load, "st") == "read");  // unused: read (a declaration needs a mode)
}

TEST_CASE("triton access: tutorial kernels and negative controls, sm_90 and gfx942, exactly as expected") {
  // Exact: narrower would drop a fence (unsound), wider loses replay
  // parallelism the kernels have.
  const std::string root = std::string(LRRT_TEST_SOURCE_DIR) + "/tests/triton/access/";
  const auto expected = nlohmann::json::parse(access_text(root + "expected.json"));
  REQUIRE(expected["kernels"].size() == 12);
  int checked = 0;
  for (const char* target : {"sm_90", "gfx942"})
    for (const auto& [kernel, modes] : expected["kernels"].items()) {
      CAPTURE(target);
      CAPTURE(kernel);
      const TritonAccess a = analyze_triton_access(access_text(root + target + "/" + kernel + ".ttir"), kernel);
      REQUIRE_MESSAGE(a.analysed, a.failure);
      size_t pointers = 0;
      for (const auto& p : a.params) pointers += p.pointer;
      CHECK(pointers == modes.size());
      for (const auto& [param, mode] : modes.items()) CHECK(mode_of(a, param) == mode.get<std::string>());
      ++checked;
    }
  CHECK(checked == 24);
}

TEST_CASE("triton access: negative controls say why a parameter is read-write") {
  const std::string root = std::string(LRRT_TEST_SOURCE_DIR) + "/tests/triton/access/sm_90/";
  auto reason = [&](const std::string& kernel, const std::string& param) {
    const TritonAccess a = analyze_triton_access(access_text(root + kernel + ".ttir"), kernel);
    REQUIRE(a.analysed);
    for (const auto& p : a.params)
      if (p.name == param) return p.reason;
    return std::string("(none)");
  };
  CHECK(reason("neg_select", "b_ptr").find("either of several parameters") != std::string::npos);
  CHECK(reason("neg_if_merge", "a_ptr").find("either of several parameters") != std::string::npos);
  CHECK(reason("neg_ptr_to_int", "x_ptr").find("tt.ptr_to_int") != std::string::npos);
  CHECK(reason("neg_store_pointer", "x_ptr").find("tt.ptr_to_int") != std::string::npos);
  CHECK(reason("neg_inline_asm", "x_ptr").find("tt.elementwise_inline_asm") != std::string::npos);
  CHECK(reason("neg_loop_carried", "x_ptr").empty());  // a plain write, followed through the loop
}

TEST_CASE("triton access: rules Triton's front end does not produce") {
  SUBCASE("a pointer passed to a call is read-write") {
    const auto a = analyse("    tt.call @helper(%a) : (!tt.ptr<f32>) -> ()\n    %0 = tt.load %b : !tt.ptr<f32>\n");
    REQUIRE(a.analysed);
    CHECK(mode_of(a, "a") == "read_write");
    CHECK(a.params[0].reason.find("tt.call") != std::string::npos);
    CHECK(mode_of(a, "b") == "read");
  }
  SUBCASE("a pointer stored as a value is read-write, the memory stored to is written") {
    const std::string ir =
        "module {\n  tt.func public @k(%pp: !tt.ptr<!tt.ptr<f32>>, %x: !tt.ptr<f32>) {\n"
        "    tt.store %pp, %x : !tt.ptr<!tt.ptr<f32>>\n    tt.return\n  }\n}\n";
    const auto a = analyze_triton_access(ir, "k");
    REQUIRE(a.analysed);
    CHECK(mode_of(a, "pp") == "write");
    CHECK(mode_of(a, "x") == "read_write");
  }
  SUBCASE("a pointer loaded from memory has unknown origin: every parameter read-write") {
    const std::string ir =
        "module {\n  tt.func public @k(%pp: !tt.ptr<!tt.ptr<f32>>, %x: !tt.ptr<f32>, %y: !tt.ptr<f32>) {\n"
        "    %0 = tt.load %pp : !tt.ptr<!tt.ptr<f32>>\n    %1 = tt.load %y : !tt.ptr<f32>\n"
        "    tt.store %0, %1 : !tt.ptr<f32>\n    tt.return\n  }\n}\n";
    const auto a = analyze_triton_access(ir, "k");
    REQUIRE(a.analysed);
    CHECK(mode_of(a, "x") == "read_write");
    CHECK(mode_of(a, "y") == "read_write");
    CHECK(a.params[1].reason.find("unknown origin") != std::string::npos);
  }
  SUBCASE("an integer turned into a pointer has unknown origin, also through bitcast") {
    const auto a = analyse(
        "    %0 = arith.extsi %n : i32 to i64\n    %1 = tt.int_to_ptr %0 : i64 -> !tt.ptr<f32>\n"
        "    %2 = tt.load %a : !tt.ptr<f32>\n    tt.store %1, %2 : !tt.ptr<f32>\n");
    REQUIRE(a.analysed);
    for (const char* p : {"a", "b", "c"}) CHECK(mode_of(a, p) == "read_write");
  }
  SUBCASE("an operation the analysis does not know makes its pointer operands read-write") {
    const auto a = analyse("    %0 = tt.splat %a : !tt.ptr<f32> -> tensor<4x!tt.ptr<f32>>\n"
                           "    tt.experimental_future_op %0 : tensor<4x!tt.ptr<f32>>\n"
                           "    %1 = tt.load %b : !tt.ptr<f32>\n    tt.store %c, %1 : !tt.ptr<f32>\n");
    REQUIRE(a.analysed);
    CHECK(mode_of(a, "a") == "read_write");
    CHECK(mode_of(a, "b") == "read");
    CHECK(mode_of(a, "c") == "write");
  }
  SUBCASE("atomics read and write, descriptors follow their base") {
    const auto a = analyse(
        "    %f = arith.constant 1.0 : f32\n    %t = arith.constant true\n    %s = arith.constant 1 : i64\n"
        "    %0 = tt.atomic_rmw fadd, acq_rel, gpu, %a, %f, %t : (!tt.ptr<f32>, f32, i1) -> f32\n"
        "    %d = tt.make_tensor_descriptor %b, [%n], [%s] : <f32>, <tensor<16xf32>>\n"
        "    %1 = tt.descriptor_load %d[%n] : !tt.tensordesc<tensor<16xf32>> -> tensor<16xf32>\n"
        "    %e = tt.make_tensor_descriptor %c, [%n], [%s] : <f32>, <tensor<16xf32>>\n"
        "    tt.descriptor_store %e[%n], %1 : !tt.tensordesc<tensor<16xf32>>, tensor<16xf32>\n");
    REQUIRE_MESSAGE(a.analysed, a.failure);
    CHECK(mode_of(a, "a") == "read_write");
    CHECK(a.params[0].reason.empty());  // an atomic is a real read-write, not a fallback
    CHECK(mode_of(a, "b") == "read");
    CHECK(mode_of(a, "c") == "write");
  }
  SUBCASE("scf.while passes pointers position by position") {
    const auto a = analyse(
        "    %r:2 = scf.while (%p = %a, %q = %b) : (!tt.ptr<f32>, !tt.ptr<f32>) -> (!tt.ptr<f32>, !tt.ptr<f32>) {\n"
        "      %t = arith.constant true\n"
        "      scf.condition(%t) %p, %q : !tt.ptr<f32>, !tt.ptr<f32>\n"
        "    } do {\n"
        "    ^bb0(%x: !tt.ptr<f32> loc(\"x\"), %y: !tt.ptr<f32>):\n"
        "      %v = tt.load %y : !tt.ptr<f32>\n"
        "      tt.store %x, %v : !tt.ptr<f32>\n"
        "      scf.yield %x, %y : !tt.ptr<f32>, !tt.ptr<f32>\n"
        "    }\n"
        "    %w = tt.load %r#0 : !tt.ptr<f32>\n");
    REQUIRE_MESSAGE(a.analysed, a.failure);
    CHECK(mode_of(a, "a") == "read_write");  // stored in the loop, loaded after it
    CHECK(mode_of(a, "b") == "read");
    CHECK(a.params[0].reason.empty());
  }
  SUBCASE("a loop that swaps two pointers merges them") {
    const auto a = analyse(
        "    %r:2 = scf.for %i = %n to %n step %n iter_args(%p = %a, %q = %b) -> (!tt.ptr<f32>, !tt.ptr<f32>)  : i32 {\n"
        "      %v = tt.load %q : !tt.ptr<f32>\n      tt.store %p, %v : !tt.ptr<f32>\n"
        "      scf.yield %q, %p : !tt.ptr<f32>, !tt.ptr<f32>\n    }\n");
    REQUIRE_MESSAGE(a.analysed, a.failure);
    CHECK(mode_of(a, "a") == "read_write");
    CHECK(mode_of(a, "b") == "read_write");
    CHECK(mode_of(a, "c") == "read");  // unused
  }
  SUBCASE("branches to blocks with pointer arguments are not followed") {
    const auto a = analyse("    cf.br ^bb1(%a : !tt.ptr<f32>)\n  ^bb1(%p: !tt.ptr<f32>):\n"
                           "    %v = tt.load %b : !tt.ptr<f32>\n    tt.store %p, %v : !tt.ptr<f32>\n");
    REQUIRE_MESSAGE(a.analysed, a.failure);
    for (const char* p : {"a", "b", "c"}) CHECK(mode_of(a, p) == "read_write");
  }
  SUBCASE("'%' and braces inside strings are not values or regions") {
    const auto a = analyse(
        "    %0 = tt.splat %a : !tt.ptr<f32> -> tensor<4x!tt.ptr<f32>>\n"
        "    %1 = tt.load %0 {note = \"%c } {\"} : tensor<4x!tt.ptr<f32>>\n");
    REQUIRE_MESSAGE(a.analysed, a.failure);
    CHECK(mode_of(a, "a") == "read");
    CHECK(mode_of(a, "c") == "read");
  }
}

TEST_CASE("triton access: IR it cannot read is not analysed (every pointer read-write), never a crash") {
  CHECK_FALSE(analyze_triton_access("", "k").analysed);
  CHECK_FALSE(analyze_triton_access(kernel_ir(""), "other").analysed);
  CHECK_FALSE(analyse("    %0 = tt.load %undefined : !tt.ptr<f32>\n").analysed);
  CHECK_FALSE(analyse("    %0 = tt.load %a : !tt.ptr<f32>\n    %0 = tt.load %b : !tt.ptr<f32>\n").analysed);
  // A region that never closes: the text ends inside the kernel.
  CHECK_FALSE(analyze_triton_access("module {\n  tt.func public @k(%n: i32) {\n    scf.for %i = %n to %n step %n  : i32 {\n",
                                    "k").analysed);
  const auto failed = analyse("    %0 = tt.load %undefined : !tt.ptr<f32>\n");
  CHECK(failed.failure.find("%undefined") != std::string::npos);
  // Every prefix of a real kernel's IR: analysed or not, never a crash.
  const std::string root = std::string(LRRT_TEST_SOURCE_DIR) + "/tests/triton/access/sm_90/";
  const std::string ir = access_text(root + "layer_norm_bwd_dx.ttir");
  const TritonAccess full = analyze_triton_access(ir, "layer_norm_bwd_dx");
  REQUIRE(full.analysed);
  for (size_t cut = 0; cut < ir.size(); cut += 97) {
    const TritonAccess a = analyze_triton_access(ir.substr(0, cut), "layer_norm_bwd_dx");
    if (!a.analysed) continue;  // only a prefix holding the whole kernel may be analysed, and then the same
    REQUIRE(a.params.size() == full.params.size());
    for (size_t i = 0; i < a.params.size(); ++i) CHECK(a.params[i].mode() == full.params[i].mode());
  }
}
