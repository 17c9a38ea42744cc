"""The build backend of pyproject.toml (PEP 517): writes pccxrt's wheel
with the standard library alone.

The module is one pure-Python file, so the wheel is a zip of it and its
metadata. setuptools would need the `wheel` package as well (Debian's
python3-wheel, which python3-venv does not pull in) and writes build/ and
pccxrt.egg-info beside the sources; this backend needs nothing, so
`pip install` builds offline in a fresh virtual environment, and it writes
only into the directories pip gives it.
"""

import base64
import hashlib
import io
import json
import os
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE = "pccxrt.py"
# A fixed timestamp: the same sources give the same wheel.
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def _project():
    """pyproject.toml's [project] table. Its values are basic strings and
    arrays of them, which read as JSON: tomllib is only in Python 3.11+."""
    table, section = {}, None
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("["):
                section = line
                continue
            if section == "[project]":
                key, sep, value = line.partition("=")
                try:
                    table[key.strip()] = json.loads(value)
                except ValueError:
                    raise ValueError("pyproject.toml:%d: [project] values must be \"strings\" or [\"lists\"]" % n)
    return table


def _names():
    project = _project()
    return project, "%s-%s" % (project["name"], project["version"])


def _metadata(project):
    lines = ["Metadata-Version: 2.1", "Name: " + project["name"], "Version: " + project["version"],
             "Summary: " + project["description"], "Requires-Python: " + project["requires-python"]]
    lines += ["Requires-Dist: " + d for d in project.get("dependencies", [])]
    return "\n".join(lines) + "\n"


WHEEL = "Wheel-Version: 1.0\nGenerator: pccxrt_wheel\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _dist_info(project, name):
    return {name + ".dist-info/METADATA": _metadata(project).encode(),
            name + ".dist-info/WHEEL": WHEEL.encode()}


def _write_wheel(directory, files):
    project, name = _names()
    files = dict(files)
    files.update(_dist_info(project, name))
    record = name + ".dist-info/RECORD"
    lines = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        lines.append("%s,sha256=%s,%d" % (path, digest, len(data)))
    files[record] = ("\n".join(lines + [record + ",,"]) + "\n").encode()
    basename = name + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, basename), "w", zipfile.ZIP_DEFLATED) as whl:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, ZIP_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(info, data)
    return basename


def _read(name):
    with open(os.path.join(HERE, name), "rb") as f:
        return f.read()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, {MODULE: _read(MODULE)})


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # pip install -e: a .pth file puts this directory on the path.
    return _write_wheel(wheel_directory, {"pccxrt.pth": (HERE + "\n").encode()})


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    project, name = _names()
    for path, data in _dist_info(project, name).items():
        os.makedirs(os.path.join(metadata_directory, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(metadata_directory, path), "wb") as f:
            f.write(data)
    return name + ".dist-info"


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_sdist(sdist_directory, config_settings=None):
    project, name = _names()
    basename = name + ".tar.gz"
    files = {n: _read(n) for n in ("pyproject.toml", "pccxrt_wheel.py", MODULE)}
    files["PKG-INFO"] = _metadata(project).encode()
    with tarfile.open(os.path.join(sdist_directory, basename), "w:gz") as sdist:
        for path, data in sorted(files.items()):
            info = tarfile.TarInfo(name + "/" + path)
            info.size, info.mode = len(data), 0o644
            sdist.addfile(info, io.BytesIO(data))
    return basename
