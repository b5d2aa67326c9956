"""A PEP 517 build backend for the pure-Python lrrt package, with no
requirements of its own: pip's isolated build environment then needs nothing
from an index, so `pip install ./python` works offline (setuptools as the
backend would be downloaded into that environment). It writes a wheel of the
`lrrt` folder and its metadata from pyproject.toml, and an sdist of the tree.
"""
import base64
import hashlib
import io
import os
import tarfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _project():
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def _metadata(p):
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}",
             f"Summary: {p.get('description', '')}"]
    if "requires-python" in p:
        lines.append(f"Requires-Python: {p['requires-python']}")
    lines += [f"Requires-Dist: {d}" for d in p.get("dependencies", [])]
    for extra, deps in p.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    return "\n".join(lines) + "\n"


def _package_files():
    for path in sorted((ROOT / "lrrt").rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), path.read_bytes()


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    p = _project()
    dist = f"{p['name']}-{p['version']}"
    info = f"{dist}.dist-info"
    files = list(_package_files())
    files.append((f"{info}/METADATA", _metadata(p).encode()))
    files.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: lrrt_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    files.append((f"{info}/top_level.txt", b"lrrt\n"))
    record = "\n".join(_record_line(n, d) for n, d in files) + f"\n{info}/RECORD,,\n"
    name = f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files:
            z.writestr(n, d)
        z.writestr(f"{info}/RECORD", record)
    return name


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    dist = f"{p['name']}-{p['version']}"
    name = f"{dist}.tar.gz"
    members = [("pyproject.toml", (ROOT / "pyproject.toml").read_bytes()),
               ("_build/lrrt_build.py", Path(__file__).read_bytes()),
               ("PKG-INFO", _metadata(p).encode())] + list(_package_files())
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for n, d in members:
            ti = tarfile.TarInfo(f"{dist}/{n}")
            ti.size = len(d)
            t.addfile(ti, io.BytesIO(d))
    return name
