"""The quality score's arithmetic on measurements, and standard-cell libraries by name or path."""

from __future__ import annotations

import gzip
import hashlib

import pytest

from cvdp_gym.errors import ConfigError
from cvdp_gym.quality import liberty as liberty_module
from cvdp_gym.quality.liberty import LIBERTIES, fetch_liberty, resolve_liberty
from cvdp_gym.quality.metrics import AsicMetrics, FpgaMetrics, Measurement
from cvdp_gym.quality.scores import CAP, WARNING_PENALTY, capped_ratio, score_measurements


def asic(area: float, delay: float | None = 1.0, power: float | None = 1.0, **warnings: int) -> Measurement:
    return Measurement("asic", AsicMetrics("tiny", 10.0, area, 10, delay, 10.0 - (delay or 0), power, "leakage only", warnings))


def test_the_reference_scores_one_half_and_half_or_twice_everything_one_or_zero():
    reference = asic(100.0, 2.0, 4.0)
    assert score_measurements(asic(100.0, 2.0, 4.0), reference).score == 0.5
    assert score_measurements(asic(50.0, 1.0, 2.0), reference).score == 1.0
    assert score_measurements(asic(200.0, 4.0, 8.0), reference).score == 0.0
    larger = score_measurements(asic(150.0, 2.0, 4.0), reference)
    assert 0.0 < larger.score < 0.5 and larger.ratios == {"area": 1.5, "delay": 1.0, "power": 1.0}


def test_a_blow_up_is_capped_and_a_missing_metric_is_left_out():
    reference = asic(100.0, 2.0, None)
    huge = score_measurements(asic(1e6, 2.0, 5.0), reference)
    assert huge.ratios == {"area": CAP, "delay": 1.0}  # power: the reference has none
    assert huge.score == pytest.approx((1 - 0.5 * 1) / 2)  # log2 of the geometric mean of 2 and 1
    assert capped_ratio(0.0, 0.0) == 1.0 and capped_ratio(3.0, 0.0) == CAP and capped_ratio(0.0, 3.0) == 1 / CAP


def test_warnings_the_reference_lacks_cost_a_quarter_each():
    reference = asic(100.0, latch=1)
    assert score_measurements(asic(100.0, latch=1), reference).score == 0.5
    two_more = score_measurements(asic(100.0, latch=1, multiple_drivers=2), reference)
    assert two_more.extra_warnings == 2 and two_more.score == pytest.approx(0.5 * (1 - 2 * WARNING_PENALTY))


def test_an_unmeasured_design_or_reference_has_no_score_and_says_why():
    failed = Measurement("asic", failure="yosys: syntax error near 'endmodul'")
    assert score_measurements(failed, asic(1.0)).failure.endswith("syntax error near 'endmodul'")
    assert score_measurements(asic(1.0), failed).score is None
    assert "reference" in score_measurements(asic(1.0), failed).failure


def test_fpga_terms_are_luts_flip_flops_and_the_clock_period():
    ref = Measurement("fpga", FpgaMetrics("hx8k", luts=20, ffs=8, fmax_mhz=200.0))
    slower = score_measurements(Measurement("fpga", FpgaMetrics("hx8k", luts=20, ffs=8, fmax_mhz=100.0)), ref)
    assert slower.ratios == {"luts": 1.0, "ffs": 1.0, "period": 2.0} and slower.score < 0.5
    no_clock = score_measurements(Measurement("fpga", FpgaMetrics("hx8k", luts=10, ffs=0)), Measurement("fpga", FpgaMetrics("hx8k", luts=20, ffs=0)))
    assert no_clock.ratios == {"luts": 0.5, "ffs": 1.0} and no_clock.score > 0.5


def test_a_measurement_round_trips_through_its_dict():
    for m in (asic(12.5, latch=1), Measurement("fpga", FpgaMetrics("up5k", 3, 2, notes=("no clocked path",))), Measurement("asic", failure="x")):
        assert Measurement.from_dict(m.to_dict()) == m


TINY = 'library (tiny) {\n  time_unit : "1ns";\n  cell (INV) { area : 1.0; }\n}\n'


def test_a_liberty_by_path_plain_or_gzip_is_kept_uncompressed_under_its_hash(tmp_path, monkeypatch):
    monkeypatch.setenv("CVDP_GYM_LIBERTY_DIR", str(tmp_path / "libs"))
    plain, packed = tmp_path / "tiny.lib", tmp_path / "tiny.lib.gz"
    plain.write_text(TINY)
    packed.write_bytes(gzip.compress(TINY.encode()))
    a, b = resolve_liberty(plain), resolve_liberty(str(packed))
    assert a.sha256 == b.sha256 == hashlib.sha256(TINY.encode()).hexdigest()
    assert a.path == b.path and a.path.read_text() == TINY and a.path.parent == tmp_path / "libs"


def test_a_bad_liberty_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("CVDP_GYM_LIBERTY_DIR", str(tmp_path / "libs"))
    (tmp_path / "notes.lib").write_text("module m; endmodule\n")
    with pytest.raises(ConfigError, match="not a liberty file"):
        resolve_liberty(tmp_path / "notes.lib")
    with pytest.raises(ConfigError, match="not a pinned name"):
        resolve_liberty("nangate46")
    with pytest.raises(ConfigError, match="cvdp-gym quality fetch nangate45"):
        resolve_liberty("nangate45")  # pinned, but not fetched into this empty folder
    (tmp_path / "fake.lib.gz").write_bytes(gzip.compress(TINY.encode()))
    with pytest.raises(ConfigError, match="SHA-256 .* pinned " + LIBERTIES["sky130hd"].sha256):
        fetch_liberty("sky130hd", str(tmp_path / "fake.lib.gz"))
    assert liberty_module.fetched("sky130hd") is None  # nothing kept of a file that is not the pinned one


def test_a_pinned_library_from_a_copy_with_its_bytes_is_found_again(tmp_path, monkeypatch):
    """The pin check itself: a copy whose SHA-256 is pinned is kept and resolved by name
    (the pins are swapped for the test's own file; the real ones are fetched by users)."""
    monkeypatch.setenv("CVDP_GYM_LIBERTY_DIR", str(tmp_path / "libs"))
    data = gzip.compress(TINY.encode(), mtime=0)
    copy = tmp_path / "tiny.lib.gz"
    copy.write_bytes(data)
    pinned = liberty_module.PinnedLiberty("tiny45", "examples/tiny.lib.gz", hashlib.sha256(data).hexdigest(), "made up")
    monkeypatch.setitem(LIBERTIES, "tiny45", pinned)
    fetched = fetch_liberty("tiny45", str(copy))
    again = resolve_liberty("tiny45")
    assert again.path == fetched.path and again.sha256 == hashlib.sha256(TINY.encode()).hexdigest()
