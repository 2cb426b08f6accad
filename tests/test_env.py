"""The environment captured with every result row."""
from __future__ import annotations

from academic_bench import env


def test_git_commit_of_a_checkout_is_the_head(tmp_path):
    commit = env.git_commit()
    assert commit and len(commit.split("+")[0]) == 40


def test_a_copy_without_git_takes_the_commit_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ACADEMIC_BENCH_GIT_COMMIT", "0123abcd")
    assert env.git_commit(tmp_path) == "0123abcd"
    monkeypatch.delenv("ACADEMIC_BENCH_GIT_COMMIT")
    assert env.git_commit(tmp_path) is None
