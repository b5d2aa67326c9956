#!/usr/bin/env python3
"""Fails when a file includes a header its layer may not see (docs/architecture.md,
"What each folder may include").

Every `#include "..."` and `#include <lrrt/...>` of every C/C++ file under include/,
src/, kernels/ and tests/package/ is resolved the way the build resolves it (the
including file's folder, then include/, then src/, then src/runtime/ for the
runtime's own files) to a file of the tree; that file's layer must be in the
including file's allowed set. Headers outside the tree (the C++ library, fmt,
nlohmann, CLI11, ROCr, CUDA) are not checked here.

usage: include_rules.py SOURCE_DIR     check the tree; exit 1 listing every violation
       include_rules.py --self-test    check that violations are found (a tree made
                                       in a temporary folder), exit 0 if they are
"""
import os
import re
import sys
import tempfile

# Layers, by where a file lives (the first matching prefix wins).
LAYERS = [
    ("include/lrrt/lrrt.h", "c_abi"),
    ("include/lrrt/c/", "c_abi"),        # lrrt.h's parts, one header per concept
    ("include/lrrt/lrrt.hpp", "cpp_wrapper"),
    ("include/lrrt/cpp/", "cpp_wrapper"),  # lrrt.hpp's parts, one header per concept
    ("include/lrrt/host_kernel_abi.h", "host_kernel_abi"),
    ("include/lrrt/native_baseline.hpp", "native_baseline"),
    ("include/lrrt/formats.hpp", "formats_api"),
    ("include/lrrt/formats/", "formats_api"),
    ("include/lrrt/bundle.hpp", "bundle_api"),
    ("include/lrrt/bundle/", "bundle_api"),
    ("src/deps/", "deps"),
    ("src/formats/", "formats"),
    ("src/runtime/", "runtime"),
    ("src/bundle/", "bundle"),
    ("src/tool/", "tool"),
    ("src/cli/", "cli"),
    ("kernels/", "kernels"),
    ("tests/package/", "package_consumer"),
]

# What a file of each layer may include (its own layer always).
ALLOWED = {
    # The C ABI stands alone; the C++ wrapper sees only the C ABI.
    "c_abi": set(),
    "cpp_wrapper": {"c_abi"},
    "host_kernel_abi": set(),
    "native_baseline": {"c_abi", "cpp_wrapper"},
    "formats_api": {"host_kernel_abi"},  # host kernel libraries carry its records
    "bundle_api": {"c_abi", "cpp_wrapper"},
    # Third-party code compiled by lrrt (fmt's compiled part): nothing of lrrt.
    "deps": set(),
    "formats": {"formats_api", "host_kernel_abi"},
    "runtime": {"c_abi", "cpp_wrapper", "host_kernel_abi", "formats_api", "native_baseline"},
    "bundle": {"bundle_api", "c_abi", "cpp_wrapper"},
    "tool": {"c_abi", "cpp_wrapper", "bundle_api", "formats_api", "native_baseline"},
    "cli": {"c_abi", "cpp_wrapper", "bundle_api", "formats_api", "tool"},
    "kernels": {"host_kernel_abi"},
    # Built against the installed package: the installed headers only.
    "package_consumer": {"c_abi", "cpp_wrapper", "bundle_api"},
}

SOURCE_SUFFIXES = (".h", ".hpp", ".c", ".cpp", ".cu")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


def layer_of(rel):
    for prefix, layer in LAYERS:
        if rel == prefix or (prefix.endswith("/") and rel.startswith(prefix)):
            return layer
    return None


def resolve(root, including_rel, written, quoted):
    """The tree-relative path `written` names, or None when it is not in the tree."""
    candidates = []
    if quoted:
        candidates.append(os.path.join(os.path.dirname(including_rel), written))
    candidates.append(os.path.join("include", written))
    if quoted:
        candidates.append(os.path.join("src", written))
        if including_rel.startswith("src/runtime/"):
            candidates.append(os.path.join("src/runtime", written))
    for c in candidates:
        c = os.path.normpath(c)
        if not c.startswith("..") and os.path.isfile(os.path.join(root, c)):
            return c
    return None


def check(root):
    violations = []
    for top in ("include", "src", "kernels", "tests/package"):
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                rel = os.path.relpath(os.path.join(folder, name), root)
                layer = layer_of(rel)
                if layer is None:
                    violations.append(f"{rel}: in no layer (add its folder to tests/include_rules.py)")
                    continue
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        quoted, written = m.group(1) == '"', m.group(2)
                        if not quoted and not written.startswith("lrrt/"):
                            continue  # the C++ library and third-party headers
                        target = resolve(root, rel, written, quoted)
                        if target is None:
                            if quoted:
                                violations.append(f"{rel}:{number}: \"{written}\" is not a file of the tree")
                            continue
                        target_layer = layer_of(target)
                        if target_layer == layer or target_layer in ALLOWED[layer]:
                            continue
                        violations.append(f"{rel}:{number}: includes {target} ({target_layer}); "
                                          f"{layer} may include only {sorted(ALLOWED[layer] | {layer})}")
    return violations


def self_test():
    """A small tree with allowed includes and four forbidden ones."""
    files = {
        "include/lrrt/lrrt.h": '#include "lrrt/c/types.h"\n',
        "include/lrrt/c/types.h": "",
        "include/lrrt/c/graph.h": '#include "lrrt/c/types.h"\n#include "lrrt/cpp/error.hpp"\n',
        "include/lrrt/cpp/error.hpp": '#include "lrrt/c/types.h"\n',
        "include/lrrt/bundle/manifest.hpp": '#include "lrrt/lrrt.h"\n',
        "src/runtime/runtime.hpp": "",
        "src/runtime/backend.hpp": '#include "runtime.hpp"\n',
        "src/tool/ok.cpp": '#include "lrrt/bundle/manifest.hpp"\n',
        "src/tool/bad.cpp": '#include "runtime/runtime.hpp"\n#include "../runtime/backend.hpp"\n',
        "src/cli/bad.cpp": "#include <lrrt/../../src/runtime/runtime.hpp>\n",
    }
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(text)
        found = check(root)
    expected = ["include/lrrt/c/graph.h:2:", "src/cli/bad.cpp:1:", "src/tool/bad.cpp:1:", "src/tool/bad.cpp:2:"]
    got = sorted(v.split(" ", 1)[0] for v in found)
    if got != expected:
        print("include_rules self-test: expected violations at", expected, "got:", *found, sep="\n  ")
        return 1
    print("include_rules self-test: the four forbidden includes were found, the allowed ones passed")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    violations = check(sys.argv[1])
    for v in violations:
        print(v)
    if violations:
        print(f"include_rules: {len(violations)} include(s) break the layering (docs/architecture.md)")
        return 1
    print("include_rules: every include of include/, src/, kernels/ and tests/package/ is allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
