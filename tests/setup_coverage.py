#!/usr/bin/env python3
"""Fails when the build uses a Debian package that scripts/setup does not install.

CI machines keep every package installed by hand, so a green CI run does not prove
that scripts/setup is complete (the README's first command once failed on a fresh
Debian 12 machine because clang-tools-19 was missing). This test collects what the
build really used under /usr:

  - every absolute path in CMakeCache.txt (programs, headers, libraries, package
    config folders that find_* calls found);
  - every header that the compiler read (`ninja -t deps`);
  - every program that a build command runs (first word of `ninja -t commands`);

maps each to its package with `dpkg -S`, and checks that the package is in
scripts/setup's list or a dependency of one (`apt-cache depends --recurse`).

usage: setup_coverage.py BUILD_DIR SETUP_SCRIPT
Exit 0: covered; 1: a package is missing (listed); 77: cannot check here (no dpkg).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys

SKIP = 77


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def listed_packages(setup):
    text = open(setup, encoding="utf-8").read()
    m = re.search(r"packages=\((.*?)\)", text, re.S)
    if not m:
        sys.exit(f"setup_coverage: no packages=( ... ) list in {setup}")
    words = re.sub(r"#.*", "", m.group(1)).split()
    return sorted({w for w in words if re.fullmatch(r"[a-z0-9][a-z0-9.+-]+", w)})


def dependency_closure(packages):
    out = run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests",
               "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances", *packages])
    closure = set(packages)
    for line in out.stdout.splitlines():
        line = line.strip()
        if not line:
            continue
        if ":" in line and not line.startswith("<"):
            kind, _, dep = line.partition(":")
            if kind.strip("| ") in ("Depends", "PreDepends"):
                dep = dep.strip().strip("<>")
                closure.add(dep.split(":")[0])
            elif " " not in line:
                closure.add(line.split(":")[0])
        elif re.fullmatch(r"[a-z0-9][a-z0-9.+-]+(:\w+)?", line):
            closure.add(line.split(":")[0])
    return closure


def under_usr(path):
    return path.startswith("/usr/") and not path.startswith("/usr/local/")


# A compiler launcher (ccache) is a developer's own choice on the configure
# line, not something the README's commands use: not a set-up step.
LAUNCHER_KEYS = ("CMAKE_C_COMPILER_LAUNCHER", "CMAKE_CXX_COMPILER_LAUNCHER")


def launchers(build):
    found = set()
    with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8", errors="replace") as f:
        for line in f:
            key = line.split(":", 1)[0]
            if key in LAUNCHER_KEYS and "=" in line:
                for word in line.rstrip("\n").split("=", 1)[1].split(";"):
                    if word:
                        found.add(word if os.path.isabs(word) else (shutil.which(word) or word))
    return found


def cache_paths(build):
    paths = set()
    with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.split(":", 1)[0] in LAUNCHER_KEYS:
                continue
            m = re.match(r"^[A-Za-z0-9_.\-]+:(FILEPATH|PATH|STRING|INTERNAL)=(.*)$", line.rstrip("\n"))
            if not m:
                continue
            for value in m.group(2).split(";"):
                if under_usr(value) and os.path.exists(value):
                    paths.add(value)
    return paths


def ninja_paths(build):
    skip = launchers(build)
    ninja = shutil.which("ninja") or shutil.which("ninja-build")
    if not ninja or not os.path.exists(os.path.join(build, "build.ninja")):
        return set()
    paths = set()
    deps = run([ninja, "-C", build, "-t", "deps"])
    for line in deps.stdout.splitlines():
        p = line.strip()
        if under_usr(p) and os.path.exists(p):
            paths.add(os.path.normpath(p))
    commands = run([ninja, "-C", build, "-t", "commands"])
    for line in commands.stdout.splitlines():
        for part in re.split(r"&&|;|\|\|", line):
            try:
                words = shlex.split(part)
            except ValueError:
                continue
            if words and words[0] == "cd":
                continue
            while words and (words[0] in skip or shutil.which(words[0]) in skip):
                words = words[1:]
            if words:
                prog = words[0] if os.path.isabs(words[0]) else shutil.which(words[0])
                if prog and under_usr(prog) and os.path.exists(prog):
                    paths.add(prog)
    return paths


def owners(paths):
    """path -> package, via one dpkg -S call per batch (realpath first)."""
    result = {}
    todo = sorted(paths)
    for i in range(0, len(todo), 200):
        batch = todo[i:i + 200]
        candidates = {}
        for p in batch:
            candidates[p] = [os.path.realpath(p), p]
        queries = sorted({c for cs in candidates.values() for c in cs})
        out = run(["dpkg", "-S", *queries])
        owner_of = {}
        for line in out.stdout.splitlines():
            pkgs, sep, path = line.partition(": ")
            if not sep or pkgs.startswith("diversion by"):
                continue
            owner_of[path] = pkgs.split(",")[0].strip().split(":")[0]
        for p, cs in candidates.items():
            for c in cs:
                if c in owner_of:
                    result[p] = owner_of[c]
                    break
    return result


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    build, setup = sys.argv[1], sys.argv[2]
    if not shutil.which("dpkg") or not shutil.which("apt-cache"):
        print("setup_coverage: skipped: needs dpkg and apt-cache (a Debian machine)")
        return SKIP
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        sys.exit(f"setup_coverage: no {build}/CMakeCache.txt (configure first)")
    listed = listed_packages(setup)
    missing_from_apt = []
    if run(["apt-cache", "show", *listed]).returncode != 0:
        missing_from_apt = [p for p in listed if run(["apt-cache", "show", p]).returncode != 0]
    if missing_from_apt:
        print(f"setup_coverage: skipped: apt does not know {' '.join(missing_from_apt)} (not a Debian 12 package list)")
        return SKIP
    closure = dependency_closure(listed)
    paths = cache_paths(build) | ninja_paths(build)
    found = owners(paths)
    missing = {}
    for path, pkg in found.items():
        if pkg not in closure:
            missing.setdefault(pkg, path)
    if missing:
        print(f"setup_coverage: the build uses packages that {setup} does not install:")
        for pkg, path in sorted(missing.items()):
            print(f"  {pkg} (for {path})")
        return 1
    print(f"setup_coverage: {len(paths)} paths under /usr ({len(found)} owned by packages), "
          f"all from {len(listed)} listed packages or their dependencies")
    return 0


if __name__ == "__main__":
    sys.exit(main())
