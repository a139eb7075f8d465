"""Where a benchmark finds the project's Python, the tools and the library.

The rules, the same for every benchmark:
  Python    FC_PYTHON, else the project's venv (.venv/bin/python, made by scripts/setup), else the
            interpreter running the script; project_python() re-runs the script under it.
  tools     --bin DIR where the script takes one, else FC_BIN, else build/.
  library   FEATCACHE_LIBRARY, else BIN/libfeatcache.so.0 — an ELF (ctypes loads it; the
            libfeatcache.so beside it is a GNU ld script for the linker).
"""

import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON_PATH = os.path.join(ROOT, "python")


def prog():
    """The running benchmark's name (bench-codec), for its messages."""
    return os.path.basename(sys.argv[0]) or "bench"


def say(*parts):
    """A progress line on stderr, prefixed with the benchmark's name."""
    print(f"{prog()}:", *parts, file=sys.stderr, flush=True)


def die(message, code=2):
    """Stop with `PROG: message` on stderr (exit 2: usage, configuration or a missing build)."""
    print(f"{prog()}: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def comma_list(option, text, choices=None):
    """The items of a comma-separated option value, in order; an empty item (`1,,2`, a trailing
    comma) or one not among choices stops the benchmark with a usage error, before any work."""
    items = text.split(",")
    if any(not x.strip() for x in items):
        die(f"{option} {text}: an empty item in the list")
    if choices is not None:
        bad = [x for x in items if x not in choices]
        if bad:
            die(f"{option} {text}: unknown {', '.join(bad)} (one of {','.join(choices)})")
    return items


def python():
    """The interpreter benchmarks run under and start children with."""
    want = os.environ.get("FC_PYTHON")
    if want:
        return want
    venv = os.path.join(ROOT, ".venv", "bin", "python")
    return venv if os.access(venv, os.X_OK) else sys.executable


def project_python():
    """Re-run this script under python() unless it already runs there (once: FC_BENCH_PYTHON marks
    the re-run). Call it before importing anything outside the standard library."""
    want = python()
    if os.path.abspath(sys.executable) == os.path.abspath(want):
        return
    if os.environ.get("FC_BENCH_PYTHON") == want:
        return
    if not os.access(want, os.X_OK):
        die(f"{want}: no such interpreter (FC_PYTHON; scripts/setup makes .venv)")
    os.environ["FC_BENCH_PYTHON"] = want
    script = os.path.abspath(sys.argv[0])
    os.execv(want, [want, script] + sys.argv[1:])


def bin_dir(given=None):
    """The build directory: GIVEN (a --bin option), else FC_BIN, else build/."""
    return os.path.abspath(given or os.environ.get("FC_BIN") or os.path.join(ROOT, "build"))


def tool(name, bin=None, hint="--bin DIR or FC_BIN"):
    """BIN/NAME, an executable, or stop saying it is not built."""
    path = os.path.join(bin_dir(bin), name)
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        die(f"{path}: not built ({hint})")
    return path


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def library(bin=None, name="libfeatcache.so.0", from_env=True):
    """The shared library ctypes and the Python package load: FEATCACHE_LIBRARY (when from_env),
    else BIN/NAME. Stops unless it is an ELF."""
    path = os.environ.get("FEATCACHE_LIBRARY") if from_env else None
    path = path or os.path.join(bin_dir(bin), name)
    if not os.path.exists(path):
        die(f"{path}: not built ({'FEATCACHE_LIBRARY, ' if from_env else ''}--bin DIR or FC_BIN)")
    if not is_elf(path):
        die(f"{path}: not an ELF shared object (libfeatcache.so is a GNU ld script for the linker; "
            "ctypes loads libfeatcache.so.0 or libfeatcache_core.so.0)")
    return os.path.abspath(path)


def library_env(lib, base=None):
    """An environment for a child that imports the featcache package from this tree over LIB."""
    env = dict(os.environ if base is None else base)
    env["FEATCACHE_LIBRARY"] = lib
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PYTHON_PATH, env.get("PYTHONPATH")) if p)
    return env


def use_library(lib):
    """Make this process's `import featcache` take the tree's package over LIB."""
    os.environ["FEATCACHE_LIBRARY"] = lib
    if PYTHON_PATH not in sys.path:
        sys.path.insert(0, PYTHON_PATH)


def need_command(name, hint=None):
    """The path of NAME on PATH, or stop saying it is not installed."""
    path = shutil.which(name)
    if not path:
        die(f"{name} not installed" + (f" ({hint})" if hint else ""))
    return path


def need_modules(*names):
    """Stop, naming them, when any of these Python modules do not import."""
    import importlib.util
    missing = [n for n in names if importlib.util.find_spec(n) is None]
    if missing:
        die(f"{sys.executable} lacks {', '.join(missing)} (scripts/setup installs them)")
