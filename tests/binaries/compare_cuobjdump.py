#!/usr/bin/env python3
"""lrrt inspect's cubins against cuobjdump --list-elf on one CUDA library.

  compare_cuobjdump.py LRRT CUOBJDUMP LIBRARY

cuobjdump names every ELF (cubin) it finds, "ELF file 12: libcublas.12.sm_90.cubin";
lrrt inspect lists every cubin entry with its target. The two multisets of SM targets
must be equal (counts per sm_XX). Exit 0 when they are, 1 with the difference.
"""
import collections, json, re, subprocess, sys

lrrt, cuobjdump, lib = sys.argv[1:4]
listed = subprocess.run([cuobjdump, "--list-elf", lib], capture_output=True, text=True)
if listed.returncode != 0:
    sys.exit(f"cuobjdump --list-elf failed ({listed.returncode}): {listed.stderr[-500:]}")
want = collections.Counter(m.group(1) for m in re.finditer(r"ELF file\s+\d+:\s+\S*?\.(sm_\d+[af]?)\.cubin", listed.stdout))
doc = json.loads(subprocess.run([lrrt, "inspect", lib, "--format", "json"], capture_output=True, text=True, check=True).stdout)
got = collections.Counter(t["target"] for o in doc["objects"] for t in o["targets"] if t["format"] == "cubin")
print(f"cuobjdump: {sum(want.values())} cubins {dict(sorted(want.items()))}")
print(f"lrrt:      {sum(got.values())} cubins {dict(sorted(got.items()))}")
if want != got:
    print(f"differ: only cuobjdump {dict(want - got)}, only lrrt {dict(got - want)}")
    sys.exit(1)
print("same cubins per target")
