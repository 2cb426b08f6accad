"""The environment captured with every result row."""
from __future__ import annotations

from academic_bench.catalog import env


def test_git_commit_of_a_checkout_is_the_head(monkeypatch):
    monkeypatch.delenv("ACADEMIC_BENCH_GIT_COMMIT", raising=False)
    commit = env.git_commit()
    assert commit and len(commit.split("+")[0]) == 40


def test_the_commit_named_by_whoever_sent_the_tree_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("ACADEMIC_BENCH_GIT_COMMIT", "0123abcd")
    assert env.git_commit(tmp_path) == "0123abcd"
    assert env.git_commit() == "0123abcd", "a stale .git in a copied tree must not name the commit"
    monkeypatch.delenv("ACADEMIC_BENCH_GIT_COMMIT")
    assert env.git_commit(tmp_path) is None
