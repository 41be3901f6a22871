"""The agent workspace: real sandboxed bash, persistent files, limits, quota, cleanup."""

from __future__ import annotations

import gc
import os
import shutil
import time
import uuid
from pathlib import Path

import pytest

from cvdp_gym.data.patch import PatchError, apply_multi_patch, extract_diff, make_patch, split_diff
from cvdp_gym.sandbox.output import bound_text
from cvdp_gym.sandbox.workspace import (
    MAX_COMMAND_BYTES,
    Workspace,
    WorkspaceError,
    WorkspaceLimits,
)

pytestmark = pytest.mark.sandbox

LIMITS = WorkspaceLimits(command_timeout_s=3, max_output_chars=2000, max_workspace_mb=20)


@pytest.fixture
def ws(sandbox):
    workspace = Workspace({"docs/spec.md": "# spec\n", "rtl/inv.sv": "module inv; endmodule\n"}, sandbox=sandbox, limits=LIMITS)
    yield workspace
    workspace.close()


def test_files_state_and_toolchain(ws):
    assert ws.run("ls; echo $HOME; pwd").output.split() == ["docs", "rtl", "rundir", "verif", "/code", "/code"]
    assert ws.run("cat > rtl/a.sv <<'EOF'\nmodule a(output y); assign y = 1; endmodule\nEOF").ok
    result = ws.run("iverilog -g2012 -o /tmp/a.out rtl/a.sv && vvp /tmp/a.out && which verilator python")
    assert result.ok, result.output
    assert "a.out" in ws.run("ls /tmp").output  # /tmp lasts the episode
    assert ws.files()["rtl/a.sv"].startswith("module a(")
    assert ws.read_text("rtl/inv.sv") == "module inv; endmodule\n"
    assert (ws.snapshot_dir / "rtl" / "a.sv").is_file()


def test_exit_code_and_working_directory(ws):
    result = ws.run("cd rtl && pwd")
    assert result.cwd == "/code/rtl" and result.cwd_changed and "[cwd: /code/rtl]" in result.observation
    assert ws.run("ls").output.split() == ["inv.sv"]
    failed = ws.run("exec > /dev/null; cd /tmp; exit 3")
    assert failed.exit_code == 3 and "[exit code: 3]" in failed.observation
    assert ws.cwd == "/tmp"
    ws.run("cd /code && rm -rf rtl")
    assert ws.run("cd /code/rtl; pwd").output.strip().endswith("/code")  # gone: back to /code


def test_output_is_bounded_head_and_tail(ws):
    result = ws.run("seq 1 200000")
    assert len(result.output) <= LIMITS.max_output_chars and result.truncated
    assert result.output.startswith("1\n2\n") and result.output.rstrip().endswith("200000")
    assert "elided" in result.output
    text, cut = bound_text("x" * 100 + "END", 50)
    assert cut and len(text) <= 50 and text.endswith("END")


def test_timeout_kills_the_command_and_its_children(ws, processes_with):
    marker = f"cvdp-ws-{uuid.uuid4().hex}"
    start = time.monotonic()
    result = ws.run(f"sh -c 'sleep 1000 # {marker}' & yes")
    assert result.timed_out and "time limit" in result.observation
    assert time.monotonic() - start < 500  # the sleep is 1000 s: killed at the limit, not waited for
    quick = ws.run(f"sh -c 'sleep 1000 # {marker}' & echo spawned")
    assert quick.ok and "spawned" in quick.output
    time.sleep(0.2)
    assert processes_with(marker) == []


def test_quota_removes_what_pushed_it_over(ws):
    free_before = shutil.disk_usage(ws.root).free
    result = ws.run("head -c 1G /dev/zero > big; for i in 1 2 3; do head -c 15M /dev/zero > f$i; done")
    assert "workspace quota exceeded" in result.observation and "/code/big" in result.removed
    size, _ = ws.usage()
    assert size <= LIMITS.quota_bytes
    assert not (ws.path / "big").exists() and ws.read_text("docs/spec.md") == "# spec\n"
    assert free_before - shutil.disk_usage(ws.root).free < 200 * 2**20


def test_too_many_files_are_removed(sandbox):
    limits = WorkspaceLimits(command_timeout_s=10, max_files=200)
    with Workspace({"docs/a.md": "a"}, sandbox=sandbox, limits=limits) as ws:
        result = ws.run("mkdir many && cd many && touch $(seq 1 500)")
        assert "workspace quota exceeded" in result.observation
        assert ws.usage()[1] <= 200 and ws.read_text("docs/a.md") == "a"


def test_symlinks_and_special_files_never_reach_the_host(ws):
    ws.run("ln -s /etc/passwd rtl/leak.sv; ln -s / rtl/root; mkfifo rtl/pipe; ln -s inv.sv rtl/alias.sv")
    files = ws.files()
    assert "rtl/leak.sv" not in files and "rtl/pipe" not in files
    assert ws.read_text("rtl/leak.sv") is None
    with pytest.raises(WorkspaceError):
        ws.write_text("rtl/root/tmp/evil", "x")
    with pytest.raises(WorkspaceError):
        ws.write_text("../outside", "x")
    ws.write_text("rtl/leak.sv", "module leak; endmodule\n")  # replaces the link, not /etc/passwd
    assert "module leak" in ws.files()["rtl/leak.sv"] and "module leak" not in Path("/etc/passwd").read_text()
    folder = ws.snapshot_dir
    assert sorted(ws.dropped) == ["rtl/alias.sv", "rtl/pipe", "rtl/root"]
    assert not any(p.is_symlink() for p in folder.rglob("*"))


def test_refused_commands(ws):
    assert "NUL" in ws.run("echo a\x00b").output
    long = ws.run("echo " + "x" * MAX_COMMAND_BYTES)
    assert long.exit_code != 0 and "limit" in long.output


def test_close_and_garbage_collection_remove_the_folder(sandbox):
    ws = Workspace({"a.txt": "a"}, sandbox=sandbox, limits=LIMITS)
    ws.run("mkdir -p deep/er && chmod 000 deep/er deep")
    root = ws.root
    ws.close()
    ws.close()
    assert not root.exists()
    with pytest.raises(RuntimeError, match="closed"):
        ws.run("ls")
    other = Workspace({"a.txt": "a"}, sandbox=sandbox)
    root = other.root
    del other
    gc.collect()
    assert not root.exists()


def test_bad_initial_paths_are_refused(sandbox):
    before = set(os.listdir(Path(os.environ.get("TMPDIR", "/tmp"))))
    with pytest.raises(WorkspaceError):
        Workspace({"../escape.txt": "x"}, sandbox=sandbox)
    gc.collect()
    after = set(os.listdir(Path(os.environ.get("TMPDIR", "/tmp"))))
    assert not {n for n in after - before if n.startswith("cvdp-gym-ws-")}


def test_multi_file_diffs():
    old = "a\nb\nc\n"
    new = "a\nB\nc\n"
    both = make_patch(old, new, "rtl/x.sv") + make_patch("", "module y; endmodule\n", "rtl/y.sv")
    assert [s.path for s in split_diff(both)] == ["rtl/x.sv", "rtl/y.sv"]
    assert apply_multi_patch({"rtl/x.sv": old}, both) == {"rtl/x.sv": new, "rtl/y.sv": "module y; endmodule\n"}
    hunks_only = "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
    assert apply_multi_patch({"rtl/x.sv": old}, hunks_only, default_paths=["rtl/x.sv"]) == {"rtl/x.sv": new}
    with pytest.raises(PatchError, match="no ---/\\+\\+\\+ header"):
        apply_multi_patch({"rtl/x.sv": old}, hunks_only)
    git = (
        "diff --git a/rtl/x.sv b/rtl/x.sv\ndeleted file mode 100644\n--- a/rtl/x.sv\n+++ /dev/null\n"
        "@@ -1,3 +0,0 @@\n-a\n-b\n-c\n"
    )
    assert apply_multi_patch({"rtl/x.sv": old}, git) == {"rtl/x.sv": None}
    prose = f"Fixed.\n\n{hunks_only}\nThe bug was b.\n- also checked c\n"
    assert extract_diff(prose) == hunks_only
    fenced = f"Patch:\n```diff\n{both}```\nDone."
    assert extract_diff(fenced) == both
    assert extract_diff("no diff here") == ""
    with pytest.raises(PatchError, match="does not match"):
        apply_multi_patch({"rtl/x.sv": new}, both)


def test_watchdog_kills_a_command_that_floods_the_disk(sandbox):
    limits = WorkspaceLimits(command_timeout_s=20, max_workspace_mb=10)
    with Workspace({"rtl/a.sv": "a"}, sandbox=sandbox, limits=limits) as ws:
        time.monotonic()
        result = ws.run("mkdir -p out/deep; for i in $(seq 1 400); do head -c 5M /dev/zero > out/deep/f$i; sleep 0.02; done")
        assert not result.timed_out  # the watchdog ended it, not the command's time limit
        assert "grew far past its quota" in result.observation
        assert ws.usage()[0] <= limits.quota_bytes
        assert len(list((ws.path / "out" / "deep").iterdir())) <= 2 and (ws.path / "rtl").is_dir()
