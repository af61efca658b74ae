"""numba kernels: flat arrays and offsets in, nothing of ours imported but other kernels.

numba's on-disk cache checks only the source file of each cached function, but our kernels
compile in kernels from other files (``bcfw_pass`` inlines the oracles of ``labelings.py``, which
inline ``chain.py``...). So a change to any kernel file must invalidate every cached kernel: a
digest of all kernel sources is kept beside the cache, and a mismatch clears it.
"""
import hashlib
import os
from pathlib import Path


def _clear_stale_cache():
    if os.environ.get("NUMBA_CACHE_DIR"):
        return  # a cache elsewhere is the user's to manage
    here = Path(__file__).parent
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(here.glob("*.py"))))
    cache = here / "__pycache__"
    stamp = cache / "kernel-sources.sha256"
    try:
        if stamp.read_text() == digest.hexdigest():
            return
    except OSError:
        pass
    try:
        cache.mkdir(exist_ok=True)
        for stale in list(cache.glob("*.nbi")) + list(cache.glob("*.nbc")):
            stale.unlink(missing_ok=True)
        stamp.write_text(digest.hexdigest())
    except OSError:  # read-only installation: numba then does not cache there either
        pass


_clear_stale_cache()
