"""The OCI runtime a Podman service needs on each cgroup layout, read from cgroup trees laid
out as each layout mounts them (the real containers run in ``test_docker_sandbox.py``)."""

from __future__ import annotations

import pytest

from cvdp_gym.sandbox.oci_runtime import (
    ADMIN_FIX,
    CgroupLayout,
    cgroup_layout,
    choose_runtime,
    refusal,
)


def _tree(root, layout: str, offered: str = "hugetlb"):
    if layout == "v2":
        (root / "cgroup.controllers").write_text("cpu memory pids\n")
    if layout in ("v1", "hybrid"):
        for controller in ("memory", "pids", "cpu"):
            (root / controller).mkdir()
            (root / controller / "tasks").write_text("1\n")
    if layout == "hybrid":
        (root / "unified").mkdir()
        (root / "unified" / "cgroup.controllers").write_text(offered + "\n")
    return root


@pytest.mark.parametrize(
    ("layout", "offered", "kind", "controllers"),
    [
        ("v1", "", "v1", ()),
        ("v2", "", "v2", ("cpu", "memory", "pids")),
        ("hybrid", "hugetlb", "hybrid", ("hugetlb",)),
        ("hybrid", "", "hybrid", ()),
        ("none", "", "none", ()),
    ],
)
def test_cgroup_layout(tmp_path, layout, offered, kind, controllers):
    assert cgroup_layout(_tree(tmp_path, layout, offered)) == CgroupLayout(kind, controllers)


def test_crun_refuses_only_a_hybrid_host_whose_v2_hierarchy_offers_controllers():
    assert "hybrid mode not supported" in refusal("/usr/bin/crun", CgroupLayout("hybrid", ("hugetlb",)))
    for layout in (CgroupLayout("hybrid"), CgroupLayout("v1"), CgroupLayout("v2", ("memory",))):
        assert refusal("crun", layout) is None
    assert refusal("runc", CgroupLayout("hybrid", ("hugetlb",))) is None


def test_choose_runtime():
    hybrid, v1 = CgroupLayout("hybrid", ("hugetlb",)), CgroupLayout("v1")
    assert choose_runtime(None, ["crun", "runc"], v1).runtime == "crun"
    picked = choose_runtime(None, ["crun", "runc"], hybrid)
    assert picked.runtime == "runc" and "crun refuses hybrid" in picked.reason
    assert choose_runtime("runc", ["crun", "runc"], hybrid).runtime == "runc"
    stuck = choose_runtime("crun", ["crun"], hybrid)
    assert stuck.runtime is None and ADMIN_FIX in stuck.reason and "\n" not in stuck.reason
    assert choose_runtime(None, [], v1).runtime is None
