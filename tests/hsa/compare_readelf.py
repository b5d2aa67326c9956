#!/usr/bin/env python3
"""Compares `lrrt inspect --format json FILE` with `llvm-readelf-19 --notes FILE`.

usage: compare_readelf.py LRRT LLVM_READELF FILE

Every kernel's symbol, kernarg size/alignment, group/private segment sizes,
workgroup size, wavefront size, register counts and every argument (offset,
size, value kind, address space; hidden ones included) must match the
NT_AMDGPU_METADATA note as LLVM prints it; so must target and versions. For an
offload bundle (compressed or not) each AMDGPU entry is extracted with
clang-offload-bundler (next to llvm-readelf) and compared with its target in
the inspect output (the document's shape: docs/code-objects.md); for a host
binary, from the bundle its .hip_fatbin section holds (llvm-objcopy).
"""
import json
import os
import subprocess
import sys
import tempfile


def scalar(text):
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text, 0)
    except ValueError:
        return text


def indent(line):
    return len(line) - len(line.lstrip(" "))


def parse_block(lines, i):
    """A small YAML subset: block mappings, block sequences, scalars."""
    col = indent(lines[i])
    if lines[i].lstrip().startswith("- "):
        seq = []
        while i < len(lines) and indent(lines[i]) == col and lines[i].lstrip().startswith("-"):
            rest = lines[i].lstrip()[2:]
            if ":" in rest and rest[0] not in "'\"":
                lines[i] = " " * (col + 2) + rest
                value, i = parse_block(lines, i)
            else:
                value, i = scalar(rest), i + 1
            seq.append(value)
        return seq, i
    mapping = {}
    while i < len(lines) and indent(lines[i]) == col and not lines[i].lstrip().startswith("- "):
        key, _, value = lines[i].strip().partition(":")
        i += 1
        if value.strip():
            mapping[key] = scalar(value)
        elif i < len(lines) and (indent(lines[i]) > col or
                                 (indent(lines[i]) == col and lines[i].lstrip().startswith("- "))):
            mapping[key], i = parse_block(lines, i)
        else:
            mapping[key] = None
    return mapping, i


def readelf_abi_version(readelf, path):
    out = subprocess.run([readelf, "-h", path], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.strip().startswith("ABI Version:"):
            return int(line.split(":")[1])
    raise RuntimeError(f"{path}: no ABI Version in llvm-readelf -h")


def readelf_metadata(readelf, path):
    out = subprocess.run([readelf, "--notes", path], check=True, capture_output=True, text=True).stdout
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.strip() == "---")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].strip() == "...")
    body = [l for l in lines[start + 1:end] if l.strip()]
    base = min(indent(l) for l in body)
    body = [l[base:] for l in body]
    doc, _ = parse_block(body, 0)
    return doc


def compare(target, md, abi_version, label):
    """One target of the inspect document against the note as LLVM prints it."""
    errors = []
    mine_target = f"{target.get('triple')}--{target['target']}"
    if mine_target != md["amdhsa.target"]:
        errors.append(f"{label}: target {mine_target} vs {md['amdhsa.target']}")
    if target.get("code_object_version") != abi_version + 2:  # ELF ABI version 2 = v4
        errors.append(f"{label}: code object version {target.get('code_object_version')} vs ELF ABI version {abi_version}")
    version = ".".join(str(v) for v in md.get("amdhsa.version", []))
    if target.get("metadata_version") != version:
        errors.append(f"{label}: metadata version {target.get('metadata_version')} vs {version}")
    mine = {k["name"]: k for k in target["kernels"]}
    theirs = {k[".name"]: k for k in md.get("amdhsa.kernels", [])}
    if set(mine) != set(theirs):
        errors.append(f"{label}: kernels {sorted(mine)} vs {sorted(theirs)}")
    for name in set(mine) & set(theirs):
        a, b = mine[name], theirs[name]
        for field, key in (("symbol", ".symbol"), ("kernarg_size", ".kernarg_segment_size"),
                           ("kernarg_align", ".kernarg_segment_align"),
                           ("group_segment_size", ".group_segment_fixed_size"),
                           ("private_segment_size", ".private_segment_fixed_size"),
                           ("max_workgroup_size", ".max_flat_workgroup_size"),
                           ("wavefront_size", ".wavefront_size"),
                           ("sgpr_count", ".sgpr_count"), ("vgpr_count", ".vgpr_count")):
            if a.get(field) != b.get(key):
                errors.append(f"{label}: {name}.{field} {a.get(field)} vs {key} {b.get(key)}")
        if a.get("uses_dynamic_stack", False) != b.get(".uses_dynamic_stack", False):
            errors.append(f"{label}: {name}.uses_dynamic_stack {a.get('uses_dynamic_stack')} vs "
                          f".uses_dynamic_stack {b.get('.uses_dynamic_stack')}")
        args_a = [(x["offset"], x["size"], x["value_kind"], x.get("address_space")) for x in a["args"]]
        args_b = [(x[".offset"], x[".size"], x[".value_kind"], x.get(".address_space")) for x in b.get(".args", [])]
        if args_a != args_b:
            errors.append(f"{label}: {name} args differ:\n  lrrt    {args_a}\n  readelf {args_b}")
    return errors


def main():
    lrrt, readelf, path = sys.argv[1:4]
    doc = json.loads(subprocess.run([lrrt, "inspect", "--format", "json", path], check=True,
                                    capture_output=True, text=True).stdout)
    errors = []
    checked = 0
    obj = doc["objects"][0]
    hsacos = [t for t in obj["targets"] if t["format"] == "hsaco"]
    if obj["format"] == "hsaco":
        errors += compare(hsacos[0], readelf_metadata(readelf, path), readelf_abi_version(readelf, path),
                          os.path.basename(path))
        checked = len(hsacos[0]["kernels"])
    elif obj["format"] in ("clang-offload-bundle", "compressed-clang-offload-bundle", "host-binary"):
        bundler = readelf.replace("llvm-readelf", "clang-offload-bundler")
        with tempfile.TemporaryDirectory() as tmp:
            if obj["format"] == "host-binary":
                # The bundle as the ELF holds it: .hip_fatbin dumped by llvm-objcopy.
                if any(t.get("bundle", 0) != 0 for t in hsacos):
                    errors.append("several bundles in .hip_fatbin: only the first can be unbundled here")
                section = os.path.join(tmp, "hip_fatbin.bin")
                subprocess.run([readelf.replace("llvm-readelf", "llvm-objcopy"), f"--dump-section=.hip_fatbin={section}",
                                path, os.path.join(tmp, "copy.o")], check=True)
                path = section
            listed = subprocess.run([bundler, "--list", "--type=o", f"--input={path}"], check=True,
                                    capture_output=True, text=True).stdout.split()
            amd = sorted(e for e in listed if "amdgcn" in e)
            if amd != sorted(t["entry"] for t in hsacos):
                errors.append(f"entries: lrrt {sorted(t['entry'] for t in hsacos)} vs clang-offload-bundler --list {amd}")
            for t in hsacos:
                out = os.path.join(tmp, "entry.hsaco")
                subprocess.run([bundler, "--unbundle", "--type=o", f"--input={path}",
                                f"--targets={t['entry']}", f"--output={out}"], check=True)
                if os.path.getsize(out) != t["size"]:
                    errors.append(f"{t['entry']}: size {t['size']} vs {os.path.getsize(out)} unbundled")
                errors += compare(t, readelf_metadata(readelf, out), readelf_abi_version(readelf, out), t["entry"])
                checked += len(t["kernels"])
        if len(hsacos) < 2:
            errors.append("expected several AMDGPU targets in the bundle")
    else:
        errors.append(f"unexpected format {obj['format']}")
    for e in errors:
        print("MISMATCH", e)
    print(f"{path}: {checked} kernel(s) compared, {len(errors)} mismatch(es)")
    return 1 if errors or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
