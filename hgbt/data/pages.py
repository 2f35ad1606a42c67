"""Binned rows on disk, in pages (issue 41, out of core).

A page is a block of consecutive rows with all their features' bins, stored
column after column (the F-order the kernels read), one file per page in a
directory of its own: a new temporary one by default, or one made inside the
directory the caller names; either is removed by :meth:`BinPages.close` (or
when the object is collected). A page is compressed with zlib (level 1,
which releases the GIL) where that saves at least a fifth of it, else
stored as is. A page stored as is is read by mapping its file (no copy: the
OS's file cache serves it); a compressed one is read and inflated. Pages
read back are kept in memory, the first ones that fit in ``memory_budget``
bytes: training reads every page in order on each pass, where a
least-recently-used cache smaller than the pages would never hit, while
pinned pages save their reads on every pass. And :meth:`BinPages.iter_pages`
prepares the next page on a background thread (the OS asked to read its
file ahead, or the page inflated) while the caller works on the current one.

``Dataset.from_batches(..., out_of_core=True)`` writes them; training reads
them through ``tree/paged.py``.
"""
from __future__ import annotations

import errno
import os
import shutil
import tempfile
import weakref
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from ..core._types import X_BINNED_DTYPE

#: bytes of bins per page (about the size XGBoost's external memory pages have)
PAGE_BYTES = 32 * 2**20
#: a compressed page is kept when at most this share of its bytes
COMPRESSED_SHARE = 0.8
#: bytes of a page compressed first, to see whether the whole page pays
SAMPLE_BYTES = 2**20


class BinPages:
    """Bins of ``n_features`` features, written page by page, read back in pages.

    Parameters
    ----------
    n_features : int
    directory : str or Path, default=None
        Where the pages' own directory is made (default: the system's
        temporary directory).
    page_rows : int, default=None
        Rows per page (the last may hold fewer); default: about
        :data:`PAGE_BYTES` of bins.
    compress : bool, default=True
        Compress the pages that shrink by a fifth or more.
    memory_budget : int, default=PAGE_BYTES * 4
        Bytes of read pages kept in memory.
    """

    def __init__(self, n_features: int, *, directory: str | Path | None = None,
                 page_rows: int | None = None, compress: bool = True,
                 memory_budget: int = 4 * PAGE_BYTES) -> None:
        if n_features < 1:
            raise ValueError(f"n_features must be at least 1, got {n_features}.")
        if page_rows is not None and page_rows < 1:
            raise ValueError(f"page_rows must be at least 1, got {page_rows}.")
        if directory is not None and not Path(directory).is_dir():
            raise ValueError(f"directory {str(directory)!r} is no directory.")
        self.n_features = int(n_features)
        self.page_rows = int(page_rows or max(1, PAGE_BYTES // n_features))
        self.compress = compress
        self.memory_budget = int(memory_budget)
        self.path = Path(tempfile.mkdtemp(prefix="hgbt-pages-", dir=directory))
        self._remove = weakref.finalize(self, shutil.rmtree, str(self.path), True)
        self.starts = [0]           # first row of each page, then the row count
        self.stored = []            # per page: compressed or not
        self._pending = []          # rows not yet a full page
        self._pending_rows = 0
        self._cache = {}
        self._cached_bytes = 0

    @property
    def n_rows(self) -> int:
        return self.starts[-1] + self._pending_rows

    @property
    def n_pages(self) -> int:
        return len(self.stored)

    def append(self, bins: np.ndarray) -> None:
        """Add rows of bins (n_rows, n_features), uint8; full pages are written."""
        bins = np.asarray(bins)
        if bins.dtype != X_BINNED_DTYPE or bins.ndim != 2 or bins.shape[1] != self.n_features:
            raise ValueError(f"bins must be uint8 of shape (n_rows, {self.n_features}), got "
                             f"{bins.dtype} {bins.shape}.")
        start = 0
        while start < bins.shape[0]:
            take = min(bins.shape[0] - start, self.page_rows - self._pending_rows)
            self._pending.append(bins[start:start + take])
            self._pending_rows += take
            start += take
            if self._pending_rows == self.page_rows:
                self._write_pending()

    def finish(self) -> BinPages:
        """Write the last, partial page; returns self."""
        if self._pending_rows:
            self._write_pending()
        return self

    def _write_pending(self):
        page = np.asfortranarray(np.concatenate(self._pending) if len(self._pending) > 1
                                 else self._pending[0])
        raw = page.tobytes(order="F")
        # a page's first MiB says whether compressing it pays (a whole page of
        # incompressible bins took a fifth of the binning's time)
        sample = raw[:SAMPLE_BYTES]
        packed = self.compress and len(zlib.compress(sample, 1)) <= COMPRESSED_SHARE * len(
            sample)
        data = zlib.compress(raw, 1) if packed else raw
        packed = packed and len(data) <= COMPRESSED_SHARE * len(raw)
        try:
            with open(self._file(self.n_pages), "wb") as out:
                out.write(data if packed else raw)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise OSError(exc.errno, (
                    f"No space left for hgbt's binned pages in {self.path} (page "
                    f"{self.n_pages}, {len(raw) / 2**20:.0f} MiB of bins a page, "
                    f"{self.n_features} bytes a row): give a directory on a disk with room "
                    "for a byte per value.")) from exc
            raise
        self.stored.append(packed)
        self.starts.append(self.starts[-1] + page.shape[0])
        self._pending, self._pending_rows = [], 0

    def _file(self, i):
        return self.path / f"page-{i:06d}.bin"

    def page(self, i: int) -> np.ndarray:
        """Page ``i``: its bins, (rows, n_features), F-ordered, read-only."""
        if not 0 <= i < self.n_pages:
            raise IndexError(f"page {i} of {self.n_pages}.")
        if i in self._cache:
            return self._cache[i]
        page = self._read(i)
        self._keep(i, page)
        return page

    def _read(self, i):
        shape = (self.starts[i + 1] - self.starts[i], self.n_features)
        if self.stored[i]:
            data = zlib.decompress(self._file(i).read_bytes())
            return np.frombuffer(data, dtype=X_BINNED_DTYPE).reshape(shape, order="F")
        # stored as is: mapped, not copied (a copy per page and pass was a third
        # of an 8 GB fit's time, in the kernel's memcpy and fresh pages)
        return np.memmap(self._file(i), dtype=X_BINNED_DTYPE, mode="r", shape=shape,
                         order="F")

    def _read_ahead(self, i):
        # the prefetch thread: the OS asked to read the file ahead of its use
        if not self.stored[i] and hasattr(os, "posix_fadvise"):
            fd = os.open(self._file(i), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
            finally:
                os.close(fd)
        return self._read(i)

    def _keep(self, i, page):
        # pinned while it fits (in memory, not mapped): the pages read first stay
        if self._cached_bytes + page.nbytes > self.memory_budget:
            return
        self._cache[i] = np.array(page, order="F") if isinstance(page, np.memmap) else page
        self._cached_bytes += page.nbytes

    def iter_pages(self, prefetch: bool = True) -> Iterator[tuple[int, np.ndarray]]:
        """``(first row, bins)`` of every page in order, the next one read on a
        background thread while the caller holds the current one."""
        if not prefetch or self.n_pages < 2:
            for i in range(self.n_pages):
                yield self.starts[i], self.page(i)
            return
        with ThreadPoolExecutor(max_workers=1) as reader:
            ahead = None if 0 in self._cache else reader.submit(self._read_ahead, 0)
            for i in range(self.n_pages):
                page = self.page(i) if ahead is None else ahead.result()
                if ahead is not None:
                    self._keep(i, page)
                nxt = i + 1
                ahead = (reader.submit(self._read_ahead, nxt)
                         if nxt < self.n_pages and nxt not in self._cache else None)
                yield self.starts[i], page

    def close(self) -> None:
        """Remove the pages' directory."""
        self._cache.clear()
        self._cached_bytes = 0
        self._remove()

    def __enter__(self) -> BinPages:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class PagedBins:
    """Binned training rows on disk, standing in for a FeatureLayout in a fit
    (``Dataset.from_batches(..., out_of_core=True)``): every feature its own
    column, in :class:`BinPages`."""

    is_plain = False  # no in-memory matrix (X_dense) to read
    X_dense = None

    def __init__(self, pages, n_bins_non_missing):
        self.pages = pages
        self.n_features = self.n_columns = pages.n_features
        self.n_bins_non_missing = n_bins_non_missing
