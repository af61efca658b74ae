"""numba kernels: flat arrays and offsets in, nothing of ours imported but other kernels.

numba's on-disk cache checks only the source file of each cached function, but our kernels
compile in kernels from other files (``bcfw_pass`` inlines the oracles of ``labelings.py``, which
inline ``chain.py``...). So a change to any kernel file must invalidate every cached kernel: a
digest of all kernel sources is kept beside the cache, and a mismatch clears it. The cache is
where numba puts it: ``NUMBA_CACHE_DIR`` when set, else the package's ``__pycache__`` when
writable, else numba's user-wide cache directory (a read-only installation).
"""
import hashlib
from pathlib import Path


def _cache_dir():
    """The directory numba caches this package's kernels in, by numba's own rule."""
    from numba.core.caching import FunctionCache
    return Path(FunctionCache(_cache_dir)._cache_path)


def _clear_stale_cache():
    here = Path(__file__).parent
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(here.glob("*.py"))))
    try:
        cache = _cache_dir()
    except Exception:  # no writable cache anywhere: numba does not cache either
        return
    stamp = cache / "kernel-sources.sha256"
    try:
        if stamp.read_text() == digest.hexdigest():
            return
    except OSError:
        pass
    try:
        for stale in list(cache.glob("*.nbi")) + list(cache.glob("*.nbc")):
            stale.unlink(missing_ok=True)
        stamp.write_text(digest.hexdigest())
    except OSError:
        pass


_clear_stale_cache()
