"""The root as one archive (``toolchain/pack.py``): what it keeps, how it is installed, and
every way a bad archive is refused with nothing installed; plus what an ordinary user is told
(``toolchain/unprivileged.py``). These run on a small root with every stage's marker (the
real root's round trip is ``test_ordinary_user.py``'s)."""

from __future__ import annotations

import io
import json
import os
import stat
import tarfile
from pathlib import Path

import pytest

from cvdp_gym.errors import RootBuildError
from cvdp_gym.toolchain import GENERATIONS, detect, icarus12, install, root_dir, unprivileged
from cvdp_gym.toolchain.pack import FORMAT, HEADER, pack, published_sha256, read_header, unpack
from cvdp_gym.toolchain.root import (
    LOCK_PATH,
    RUNTIME_CACHE,
    _warmup_recipe,
    lock_fingerprint,
    read_lock,
    root_complete,
    root_env,
    tools_env,
)

MTIME = 1_700_000_000


def _small_root(root: Path) -> Path:
    """A root with every stage's marker (so ``root_complete``), a few kinds of entries and a lock."""
    for generation in GENERATIONS:
        env = root_env(root, generation)
        env.prefix.mkdir(parents=True)
        env.marker.write_text(env.expected_hash + "\n")
    tools = tools_env(root)
    tools.prefix.mkdir(parents=True)
    tools.marker.write_text(tools.expected_hash + "\n")
    cache = root / str(RUNTIME_CACHE).lstrip("/")
    cache.mkdir(parents=True)
    (cache / ".cvdp-gym-ready").write_text(_warmup_recipe() + "\n")
    for source, _ in icarus12.overlay(root):
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text("icarus 12 piece\n")
    (root / str(icarus12.PREFIX).lstrip("/") / ".cvdp-gym-icarus12").write_text(icarus12.package().sha256 + "\n")
    (root / "usr" / "bin").mkdir(parents=True, exist_ok=True)
    tool = root / "usr" / "bin" / "tool"
    tool.write_text("#!/bin/sh\necho tool\n")
    tool.chmod(0o4755)  # set-user-ID: dropped by the archive
    (root / "bin").symlink_to("usr/bin")
    (root / "usr" / "bin" / "abs").symlink_to("/usr/bin/tool")
    (root / "sealed").mkdir()
    (root / "sealed" / "note").write_text("read-only folder\n")
    (root / "sealed").chmod(0o555)
    (root / "tmp").mkdir()
    (root / "tmp" / "leftover").write_text("left out\n")
    os.mkfifo(root / "fifo")  # neither folder, file nor link: left out
    (root / LOCK_PATH).write_text(json.dumps({"suite": "forky", "tools": {"iverilog": "13"}, "built": "now"}) + "\n")
    os.utime(tool, (MTIME, MTIME))
    assert root_complete(root)
    return root


@pytest.fixture
def packed(tmp_path):
    root = _small_root(tmp_path / "built" / "root")
    result = pack(root, tmp_path / "root.tar.gz", log=lambda _: None)
    return root, result


def test_a_packed_root_installs_anywhere_with_its_modes_links_times_and_lock(packed, tmp_path, monkeypatch):
    root, result = packed
    assert published_sha256(result.archive) == result.sha256 and "fifo" in result.skipped
    assert read_header(result.archive)["format"] == FORMAT
    target = tmp_path / "site" / "root"
    monkeypatch.setenv("CVDP_GYM_ROOT", str(target))
    assert root_dir() == target
    logged = []
    tc = install("root", archive=result.archive, log=logged.append)
    assert tc.root == target and tc.lock is not None and detect("root").root == target
    assert lock_fingerprint(read_lock(target)) == lock_fingerprint(read_lock(root)) and "SHA-256 checked" in logged[-1]
    tool = target / "usr" / "bin" / "tool"
    assert stat.S_IMODE(tool.stat().st_mode) == 0o755 and tool.stat().st_mtime == MTIME
    assert os.readlink(target / "bin") == "usr/bin" and os.readlink(target / "usr" / "bin" / "abs") == "/usr/bin/tool"
    assert stat.S_IMODE((target / "sealed").stat().st_mode) == 0o555 and (target / "sealed" / "note").read_text()
    assert (target / "tmp").is_dir() and not any((target / "tmp").iterdir()) and not (target / "fifo").exists()
    assert sorted(p.name for p in target.parent.iterdir()) == ["root"]  # nothing left beside it
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    # The same root again is kept; --force installs it afresh.
    install("root", archive=result.archive, log=logged.append)
    assert "already installed" in logged[-1]
    install("root", archive=result.archive, force=True, log=logged.append)
    assert "installed the root" in logged[-1] and sorted(p.name for p in target.parent.iterdir()) == ["root"]


def _refused(archive: Path, target: Path, match: str, **options) -> None:
    with pytest.raises(RootBuildError, match=match):
        unpack(archive, target, log=lambda _: None, **options)
    assert not target.exists() and list(target.parent.iterdir()) == []


def test_an_altered_archive_is_refused_by_its_hash_and_by_its_manifest(tmp_path):
    root = _small_root(tmp_path / "built" / "root")
    archive = pack(root, tmp_path / "root.tar", compression="none", log=lambda _: None).archive
    data = archive.read_bytes()
    at = data.index(b"#!/bin/sh\necho tool")
    archive.write_bytes(data[:at] + b"#!/bin/sh\necho evil" + data[at + 19:])
    (tmp_path / "site").mkdir()
    _refused(archive, tmp_path / "site" / "root", "was changed or damaged")
    Path(f"{archive}.sha256").unlink()
    _refused(archive, tmp_path / "site" / "root", r"does not match its manifest \(altered: usr/bin/tool\)")
    _refused(archive, tmp_path / "site" / "root", "expected 0+", sha256="0" * 64)


def test_an_archive_cut_short_is_refused(packed, tmp_path):
    _, result = packed
    short = tmp_path / "short.tar.gz"
    short.write_bytes(result.archive.read_bytes()[: result.bytes // 2])
    (tmp_path / "site").mkdir()
    _refused(short, tmp_path / "site" / "root", "damaged or cut short|cut short")


def _hostile(path: Path, members: list[tuple[str, bytes, str | None]]) -> Path:
    """An archive with a valid header, then ``(name, data, symlink target)`` members."""
    with tarfile.open(path, "w") as tar:
        header = json.dumps({"format": FORMAT, "lock_fingerprint": "x"}).encode()
        info = tarfile.TarInfo(HEADER)
        info.size = len(header)
        tar.addfile(info, io.BytesIO(header))
        for name, data, link in members:
            info = tarfile.TarInfo(name)
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize(
    ("members", "match"),
    [
        ([("../escape", b"x", None)], "unsafe path"),
        ([("/etc/evil", b"x", None)], "unsafe path"),
        ([("out", b"", str(Path("/tmp"))), ("out/through-the-link", b"x", None)], "before \\(or without\\) its folder"),
        ([("usr/bin/tool", b"x", None)], "before \\(or without\\) its folder"),
        ([("a", b"x", None)], "no manifest at its end"),
    ],
    ids=["dot-dot", "absolute", "through-a-link", "no-folder", "no-manifest"],
)
def test_a_hostile_archive_writes_nothing_outside_and_installs_nothing(tmp_path, members, match):
    archive = _hostile(tmp_path / "hostile.tar", members)
    (tmp_path / "site").mkdir()
    _refused(archive, tmp_path / "site" / "root", match)
    assert not (tmp_path / "escape").exists() and not Path("/tmp/through-the-link").exists()


def test_not_an_archive_of_a_root_is_one_clear_error(tmp_path):
    with tarfile.open(tmp_path / "other.tar", "w") as tar:
        tar.add(__file__, arcname="test.py")
    with pytest.raises(RootBuildError, match="not a cvdp-gym root archive"):
        read_header(tmp_path / "other.tar")
    with pytest.raises(RootBuildError, match="cannot read the root archive"):
        read_header(tmp_path / "missing.tar.gz")


def test_an_ordinary_user_without_newuidmap_is_told_so_and_pointed_at_an_archive(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "mmdebstrap").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "mmdebstrap").chmod(0o755)
    subuid, subgid = tmp_path / "subuid", tmp_path / "subgid"
    subuid.write_text("someone:100000:65536\n")
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(unprivileged, "is_root", lambda: False)
    problem = unprivileged.mmdebstrap_problem(subids=(subuid, subgid))
    assert "newuidmap, newgidmap" in problem and f"in {subuid}" in problem and "--from ARCHIVE" in problem
    assert "reachable" not in problem
    (bin_dir / "mmdebstrap").unlink()
    assert "--from ARCHIVE" in unprivileged.mmdebstrap_problem(subids=(subuid, subgid))
