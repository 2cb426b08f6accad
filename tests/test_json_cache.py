"""The one helper for content-keyed JSON files (``catalog.json_cache``): a file is read whole or computed again."""
from __future__ import annotations

import hashlib
import json

from academic_bench.catalog.json_cache import cache_file, digest, read_json, write_json


def test_the_digest_is_of_the_content_as_canonical_json():
    """The key of a decoder read from config.json (``<name>@<digest>``) is this digest: the order of the keys and
    the types JSON cannot hold do not change it, the content does."""
    content = {"b": [1, 2], "a": {"y": 1, "x": 2.5}}
    expected = hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()
    assert digest(content) == expected[:20] and digest(content, 10) == expected[:10]
    assert digest({"a": {"x": 2.5, "y": 1}, "b": [1, 2]}) == digest(content)
    assert digest({**content, "b": [2, 1]}) != digest(content)


def test_a_written_file_reads_back_and_a_cut_or_missing_one_is_computed_again(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = cache_file("decoders/abc.json")
    assert path == tmp_path / "academic-bench" / "decoders" / "abc.json"
    assert read_json(path) is None
    assert write_json(path, {"n": 1}) and read_json(path) == {"n": 1}
    assert [p.name for p in path.parent.iterdir()] == ["abc.json"], "no temporary file left beside it"
    path.write_text('{"n": ')  # cut short, as by a process killed while writing without the rename
    assert read_json(path) is None


def test_a_cache_that_cannot_be_written_is_no_error(tmp_path):
    """A home where the cache folder cannot be made (here a file stands in its place): False, the caller computes
    again next time."""
    (tmp_path / "x").write_text("a file, not a folder")
    assert write_json(tmp_path / "x" / "y.json", {"n": 1}) is False
