"""The report's design domains (real CVDP and bundled ids) and its pass@k bootstrap intervals.

The CVDP ids are real problem ids of the public benchmark (NVlabs/cvdp_benchmark's example
files, and ids quoted from it in public tools); the bundled ids are every problem we ship.
"""

from __future__ import annotations

import numpy as np
import pytest

from cvdp_gym.data import load_dataset
from cvdp_gym.eval.passk import pass_at_k
from cvdp_gym.report import SECTIONS, write_html_report
from cvdp_gym.report.domains import (
    ARITHMETIC,
    BUS,
    CODING,
    CONTROL,
    CONVERTERS,
    COUNTERS,
    MEMORY,
    OTHER,
    design_name,
    domain_of,
    module_ports,
)
from cvdp_gym.report.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    load_run,
    problem_domains,
    summarize,
)
from tests.cvdp_gym.report.test_report import SPEC, write_run
from tests.support import check_links

CVDP = {
    "cvdp_copilot_16qam_mapper_0001": ARITHMETIC,
    "cvdp_copilot_configurable_digital_low_pass_filter_0001": ARITHMETIC,
    "cvdp_copilot_ir_receiver_0001": BUS,
    "cvdp_copilot_apb_dsp_op_0002": BUS,  # an APB peripheral, though it computes
    "cvdp_agentic_axis_broadcaster_0001": BUS,
    "cvdp_copilot_hamming_code_tx_and_rx_0001": CODING,  # a code, though it has tx and rx
    "cvdp_copilot_64b66b_encoder_0009": CODING,  # a line code, not a priority encoder
    "cvdp_copilot_64b66b_decoder_0001": CODING,
    "cvdp_copilot_lfsr_0007": CODING,
    "cvdp_copilot_8x3_priority_encoder_0001": CONVERTERS,
    "cvdp_agentic_starlight_phoenix_comet_6246": OTHER,  # an obfuscated name: needs the prompt
}
BUNDLED = {
    "cvdp_gym_agentic_crc8_0001": CODING,
    "cvdp_gym_agentic_pwm_gen_0001": COUNTERS,
    "cvdp_gym_agentic_rr_arbiter_0001": CONTROL,
    "cvdp_gym_alu_flags_0001": ARITHMETIC,
    "cvdp_gym_edge_detector_0001": CONTROL,
    "cvdp_gym_event_counter_0001": COUNTERS,
    "cvdp_gym_gray_converter_0001": CONVERTERS,
    "cvdp_gym_gray_counter_area_0001": COUNTERS,  # a counter, though it counts in Gray code
    "cvdp_gym_priority_encoder_0001": CONVERTERS,
    "cvdp_gym_sat_adder_lint_0001": ARITHMETIC,
    "cvdp_gym_sync_fifo_0001": MEMORY,
    "cvdp_gym_traffic_light_0001": CONTROL,
    "cvdp_gym_uart_tx_0001": BUS,
}


@pytest.mark.parametrize(("pid", "domain"), [*CVDP.items(), *BUNDLED.items()])
def test_real_problem_ids_map_to_their_domain(pid, domain):
    assert domain_of(pid) == domain


def test_every_bundled_problem_is_named_and_keeps_its_domain_with_prompt_and_ports():
    problems = load_dataset("bundled").problems
    assert {p.id for p in problems} == set(BUNDLED)
    assert problem_domains(sorted(BUNDLED), "bundled") == BUNDLED
    assert design_name("cvdp_gym_agentic_rr_arbiter_0001") == "rr arbiter"
    assert design_name("cvdp_copilot_apb_dsp_op_0002") == "apb dsp op"


def test_prompt_then_ports_decide_an_obfuscated_name():
    pid = "cvdp_agentic_starlight_phoenix_comet_6246"
    assert domain_of(pid, "Design a synchronous FIFO with full and empty flags.") == MEMORY
    assert domain_of(pid, "Implement the module described in docs/spec.md.") == OTHER
    ports = module_ports(
        "// header (input x);\nmodule top #(parameter W = 8) (input logic clk, input logic [W-1:0] s_awaddr,\n"
        "  input logic s_awvalid, output logic s_awready);\nendmodule\n"
    )
    assert ports == ["clk", "s_awaddr", "s_awvalid", "s_awready"]
    assert domain_of(pid, "Implement the module described in docs/spec.md.", ports) == BUS
    assert domain_of(pid, None, ["clk", "psel", "penable"]) == BUS
    assert domain_of(pid, None, ["clk", "wr_en", "full"]) == MEMORY


def test_pass_at_k_with_seeded_bootstrap_intervals_and_a_domain_section(tmp_path):
    spec = {f"cvdp_copilot_{name}_{i:04d}": value for i, (name, value) in
            enumerate(zip(("sync_fifo", "uart_rx", "fir_filter", "sync_fifo", "axi_lite", "gray_to_binary"), SPEC.values(), strict=True))}
    run = write_run(tmp_path / "run", spec, ks=(1, 3))
    stats = load_run(run)
    assert stats.ks == [1, 3]
    summary = summarize(stats)
    # Repeat the documented procedure: per-problem unbiased pass@3, resampled over problems.
    values = np.array([pass_at_k(3, sum(o == "pass" for o in outcomes), 3) for _, _, outcomes in spec.values()])
    assert values.tolist() == [1, 1, 0, 1, 0, 0]
    means = values[np.random.default_rng(BOOTSTRAP_SEED).integers(0, 6, size=(BOOTSTRAP_RESAMPLES, 6))].mean(axis=1)
    passk = summary["overall"]["pass@k"]
    assert passk[3]["rate"] == pytest.approx(0.5) and passk[3]["ci95"] == pytest.approx(np.quantile(means, [0.025, 0.975]).tolist())
    assert passk[1]["rate"] == pytest.approx(summary["overall"]["pass@1"]) and passk[3]["problems"] == 6
    domains = summary["by_domain"]
    assert list(domains) == [BUS, MEMORY, ARITHMETIC, CONVERTERS]
    assert domains[MEMORY]["problems"] == 2 and domains[MEMORY]["pass@1"] == pytest.approx((1 + 1 / 3) / 2)

    out = tmp_path / "html"
    write_html_report([run], out)
    index = (out / "index.html").read_text()
    assert DOMAINS_HEAD in index and all(s in index for s in SECTIONS)
    assert "<th>pass@3 95% CI (bootstrap)</th>" in index and "<th>pass@1 95% CI (Wilson)</th>" in index
    # memory: 2 problems, 6 samples, 2 of the run's 13 failed samples; pass@3 is 1 for both.
    assert f"<td>{MEMORY.replace('&', '&amp;')}</td><td>2</td><td>6</td>" in index and "<td>100.0%</td><td>100.0%–100.0%</td><td>2 (15.4%)</td>" in index
    assert (out / "images" / "run1-domains.png").is_file()
    check_links(out)


DOMAINS_HEAD = SECTIONS[-1]
