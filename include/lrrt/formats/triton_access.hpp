// Which pointer parameters of a Triton kernel are read, written or both, from
// its IR (.ttir): every pointer value is traced back to the parameters it
// may derive from, and every use of it is either one the analysis follows
// (address arithmetic, shape changes, structured control flow) or an access
// (tt.load, tt.store, tt.atomic_*, tensor descriptors). Anything else a
// pointer meets makes its parameters read-write, so the result is never
// narrower than what the kernel does (docs/access.md has the rule table).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "lrrt/formats/kernel.hpp"

namespace lrrt::formats {

struct TritonParamAccess {
  std::string name;      // the SSA name without '%' (the signature's order)
  bool pointer = false;  // only pointers have an access
  bool read = false;     // some path loads from it (or may: see reason)
  bool write = false;    // some path stores to it (or may)
  // Why it is read-write when it is not for plain loads and stores: the
  // first use the analysis does not follow ("passed to tt.call at line 12").
  std::string reason;
  // Read when only read (also when never used: a declaration needs a mode,
  // and a read orders nothing against other reads), write when only written,
  // else read-write.
  AccessMode mode() const;
};

struct TritonAccess {
  // False when the IR could not be analysed (`failure` says why): then no
  // parameter has a derived access and lrrt falls back to read-write.
  bool analysed = false;
  std::string failure;
  std::vector<TritonParamAccess> params;  // every parameter, signature order
};

// Analyses the body of `tt.func public @kernel` in `ir_text` (a .ttir; a
// .ttgir reads the same). Never throws for malformed text: the result is
// then not analysed. Never recurses over the input.
TritonAccess analyze_triton_access(std::string_view ir_text, std::string_view kernel);

}  // namespace lrrt::formats
