"""featcache: precomputed log-mel spectrograms and token ids, read zero-copy from an LMDB store.

    import featcache
    for batch in featcache.Loader("cache/", features="hifigan", batch_size=32, shuffle=True):
        batch.mels, batch.mel_lengths, batch.ids          # numpy arrays over the map
    mel = featcache.get("cache/", "LJ001-0001")          # one utterance, [frames, n_mels]

StepProfiler times the phases of a training step (docs/loader-bench.md).
Adapters (imported on demand): featcache.torch (IterableDataset), featcache.tf (tf.data).
The shared library is found through FEATCACHE_LIBRARY, beside the package, in a build tree, or
on the system (featcache._lib). docs/loader.md has the details and the lifetime rules.
"""

from ._lib import FeatcacheError, find_library
from .loader import (Loader, LoaderBatch, bf16_to_float32, check_ranks, get, numpy_dtype,
                     release_get_handles)
from .profiler import StepProfiler

__all__ = ["Loader", "LoaderBatch", "get", "release_get_handles", "bf16_to_float32", "numpy_dtype",
           "FeatcacheError", "find_library", "library_version", "StepProfiler", "check_ranks"]
__version__ = "0.1.0"


def library_version():
    """Version of the loaded libfeatcache."""
    from . import _lib
    return _lib.lib().fc_version().decode()
