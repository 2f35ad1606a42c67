"""Binned pages on disk (data/pages.py): written in pages, read back equal,
compressed where it pays, the first ones kept within a budget, prefetched,
removed."""
import errno
import gc

import numpy as np
import pytest

from hgbt.data.pages import BinPages


def bins(n, n_features=6, seed=0, levels=256):
    rng = np.random.default_rng(seed)
    return rng.integers(0, levels, size=(n, n_features)).astype(np.uint8)


@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("levels", [3, 256])  # compresses well, or not at all
def test_pages_read_back_the_rows_in_order(compress, levels, tmp_path):
    codes = bins(10_000, levels=levels)
    with BinPages(6, directory=tmp_path, page_rows=1500, compress=compress) as pages:
        for a, b in [(0, 1), (1, 4000), (4000, 4000), (4000, 10_000)]:
            pages.append(codes[a:b])
        pages.finish()
        assert pages.n_rows == 10_000 and pages.n_pages == 7
        assert pages.starts == [0, 1500, 3000, 4500, 6000, 7500, 9000, 10_000]
        assert all(pages.stored) == (compress and levels == 3)
        assert not any(pages.stored) or compress
        for i in range(pages.n_pages):
            page = pages.page(i)
            assert page.flags.f_contiguous
            np.testing.assert_array_equal(page, codes[pages.starts[i]:pages.starts[i + 1]])
        seen = [(start, page.copy()) for start, page in pages.iter_pages()]
        np.testing.assert_array_equal(np.concatenate([p for _, p in seen]), codes)
        assert [s for s, _ in seen] == pages.starts[:-1]
        folder = pages.path
        assert folder.parent == tmp_path and len(list(folder.iterdir())) == 7
    assert not folder.exists() and tmp_path.exists()  # its own folder removed only


def test_the_first_pages_stay_within_the_budget():
    codes = bins(8000)
    pages = BinPages(6, page_rows=1000, compress=False, memory_budget=3 * 6000)
    pages.append(codes)
    pages.finish()
    for _ in range(2):  # two passes
        for _, _ in pages.iter_pages():
            assert pages._cached_bytes <= 3 * 6000
    assert sorted(pages._cache) == [0, 1, 2]  # the first ones read stay
    np.testing.assert_array_equal(pages.page(1), codes[1000:2000])
    folder = pages.path
    del pages
    gc.collect()
    assert not folder.exists()  # removed when collected


def test_errors(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="no directory"):
        BinPages(3, directory=tmp_path / "missing")
    pages = BinPages(3, directory=tmp_path, page_rows=10)
    with pytest.raises(ValueError, match="uint8 of shape"):
        pages.append(np.zeros((4, 2), np.uint8))
    with pytest.raises(IndexError):
        pages.page(0)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("builtins.open", full)
    with pytest.raises(OSError, match="No space left for hgbt's binned pages"):
        pages.append(np.zeros((10, 3), np.uint8))
    monkeypatch.undo()
    pages.close()
