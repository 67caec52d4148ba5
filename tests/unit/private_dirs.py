"""Test helper for the user's private key directory (kube/key_files.py): another process's exit removing
it between its making and its use, as the writers of key and PEM files must survive."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_placement.kube import key_files


def vanishing(monkeypatch: pytest.MonkeyPatch, times: int) -> list[Path]:
    """``key_files.private_dir`` makes the user's directory, which is then removed (as by another
    process's exit) before its use, the first ``times`` calls. Returns the paths each call gave."""
    made, calls = key_files.private_dir, []

    def private_dir() -> Path:
        path = made()
        calls.append(path)
        if len(calls) <= times:
            path.rmdir()
        return path

    monkeypatch.setattr(key_files, "private_dir", private_dir)
    return calls
