"""What the benchmarks under scripts/ share, so that each is its measurement alone
(docs/HACKING.md, "Benchmarks"):

  build    the project's Python (project_python), the tools (bin_dir, tool), the library
           (library, library_env, use_library), say/die for messages, need_command/need_modules
  machine  MachineNotes: CPU, cores, memory, kernel, the load average at the start and at the end,
           the date and the commit, in one line every benchmark prints the same way
  corpus   speech (espeak-ng), signals (noise/silence/tones), tones, speech_like, mel_store:
           deterministic given a seed, cached in a work directory, paths and audio seconds
  disk     Throttle (a blkio cgroup for cold reads of a slow disk), drop_cache, warm
  timing   median, quartiles, median_of, best_of, run_timed (wall and CPU of a child), rounds
  parity   compare_stores: two stores of the same audio, record by record (GPU against CPU)

A benchmark starts:

    import os, sys
    sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
    import benchlib as bl
    bl.project_python()          # re-runs the script under FC_PYTHON or .venv/bin/python

Only the standard library is imported here; numpy and scipy where a corpus needs them.
"""

from . import corpus, disk, parity, timing  # noqa: F401
from .build import (ROOT, bin_dir, comma_list, die, is_elf, library, library_env,  # noqa: F401
                    need_command, need_modules, prog, project_python, python, say, tool,
                    use_library)
from .disk import Throttle, drop_cache, warm  # noqa: F401
from .machine import MachineNotes  # noqa: F401
from .timing import median, quartiles  # noqa: F401
