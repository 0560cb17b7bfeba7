"""The worker's RocksDB store finds damage when it opens a database, not later (stream/store.py).

A real RocksDB database on disk, damaged as a disk fault would; the whole worker's rebuild from the
changelog is tested on real brokers in tests/test_restart.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import rocksdict

from stream_lsh.stream.store import _read_every_row, is_damage, move_aside


def written(path: Path, rows: int = 2000) -> Path:
    """A database of ``rows`` rows flushed to SST files, closed."""
    db = rocksdict.Rdict(str(path), options=rocksdict.Options(raw_mode=True))
    for i in range(rows):
        db[b"key-%06d" % i] = bytes(range(256)) * 4
    db.flush()
    db.close()
    return path


def scribble(path: Path) -> None:
    for sst in path.glob("*.sst"):
        with sst.open("r+b") as f:
            f.seek(sst.stat().st_size // 3)
            f.write(b"\x55" * 4096)


def test_a_scribbled_block_is_found_by_reading_every_row(tmp_path):
    path = written(tmp_path / "db")
    scribble(path)
    db = rocksdict.Rdict(str(path), options=rocksdict.Options(raw_mode=True))
    try:
        silently = sum(1 for _ in db.items())
        assert silently < 2000, "a plain iteration stops at the damage, as if the rows ended"
        with pytest.raises(Exception) as raised:
            _read_every_row(db)
        assert is_damage(raised.value), raised.value
    finally:
        db.close()


def test_a_sound_database_reads_whole(tmp_path):
    db = rocksdict.Rdict(str(written(tmp_path / "db")), options=rocksdict.Options(raw_mode=True))
    try:
        assert _read_every_row(db) == 2000
    finally:
        db.close()


def test_a_database_the_process_holds_is_not_damage(tmp_path):
    path = written(tmp_path / "db")
    db = rocksdict.Rdict(str(path), options=rocksdict.Options(raw_mode=True))
    try:
        with pytest.raises(Exception) as raised:
            rocksdict.Rdict(str(path), options=rocksdict.Options(raw_mode=True))
        assert "lock" in str(raised.value) and not is_damage(raised.value)
    finally:
        db.close()


def test_moved_aside_under_a_free_name(tmp_path):
    first, second = tmp_path / "sites-state-0.db", tmp_path / "sites-state-0.db"
    first.mkdir()
    moved = move_aside(first, now=0)
    assert moved.name == "sites-state-0.db.damaged-19700101T000000Z" and moved.is_dir()
    second.mkdir()
    assert move_aside(second, now=0).name == "sites-state-0.db.damaged-19700101T000000Z-2"
    assert not first.exists()
