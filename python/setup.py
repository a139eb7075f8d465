"""Records, at `pip install`, where the featcache library is installed (featcache/_installed.py),
so that the package finds a library under any prefix without PKG_CONFIG_PATH or
FEATCACHE_LIBRARY. The library recorded (the first that exists):
  - the one a copy of the package already records (the copy `cmake --install` puts in
    <libdir>/featcache/python carries _installed.py: `pip install P/lib/featcache/python`);
  - libfeatcache_core.so.0 as the source tree's last `cmake --install` put it under its prefix
    (build*/install_manifest.txt beside python/, the newest);
  - the one pkg-config reports for featcache at install time.
Nothing recorded is no error: the package then searches at import (featcache/_lib.py).
Metadata is in pyproject.toml."""
import glob
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

CORE = "libfeatcache_core.so.0"
HERE = os.path.dirname(os.path.abspath(__file__))


def _recorded():
    try:
        src = open(os.path.join(HERE, "featcache", "_installed.py")).read()
    except OSError:
        return None
    scope = {}
    exec(compile(src, "_installed.py", "exec"), scope)
    return scope.get("LIBRARY")


def _from_manifests():
    manifests = glob.glob(os.path.join(HERE, "..", "build*", "install_manifest.txt"))
    manifests.sort(key=os.path.getmtime, reverse=True)
    for m in manifests:
        for line in open(m, encoding="utf-8", errors="replace"):
            p = line.strip()
            if os.path.basename(p) == CORE and os.path.exists(p):
                return p
    return None


def _from_pkg_config():
    exe = shutil.which("pkg-config") or shutil.which("pkgconf")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, "--variable=libdir", "featcache"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    p = os.path.join(os.path.normpath(out.stdout.strip()), CORE)
    return p if out.returncode == 0 and out.stdout.strip() and os.path.exists(p) else None


def installed_library():
    for find in (_recorded, _from_manifests, _from_pkg_config):
        p = find()
        if p and os.path.exists(p):
            return os.path.abspath(p)
    return None


class build_py_recording(build_py):
    def run(self):
        super().run()
        lib = installed_library()
        out = os.path.join(self.build_lib, "featcache", "_installed.py")
        with open(out, "w") as f:
            f.write("# Written by setup.py at install: the featcache library found then "
                    "(None: search at import).\n")
            f.write("LIBRARY = %r\n" % lib)


setup(cmdclass={"build_py": build_py_recording})
