"""The trainer refuses a training set that overlaps its evaluation set, before it starts.

The training set is a made-up CVDP file: a bundled problem with two words of its prompt
changed and a new id, beside a problem of its own; the evaluation set is the bundled one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cvdp_gym.data.bundle import bundled_records
from rtl_trainer.config import TrainConfig, parse_field_value
from rtl_trainer.errors import ConfigError
from rtl_trainer.loop.envs import make_env_factory, refuse_overlap
from rtl_trainer.loop.train import Trainer

COPIED = "cvdp_gym_gray_converter_0001"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "benchmarks"


@pytest.fixture(scope="module")
def training_file(tmp_path_factory) -> Path:
    """A bundled problem renamed, two words of its prompt changed, and an unrelated one."""
    records = {record["id"]: record for _, record in bundled_records()}
    copy = json.loads(json.dumps(records[COPIED]))
    copy["id"] = "my_set_gray_0001"
    words = copy["input"]["prompt"].split(" ")
    copy["input"]["prompt"] = " ".join(["zqxj" if i in (4, 9) else w for i, w in enumerate(words)])
    own = json.loads(json.dumps(records["cvdp_gym_sync_fifo_0001"]))
    own["id"] = "my_set_own_0001"
    own["input"]["prompt"] = "Write a 16-bit Fibonacci LFSR with taps 16, 14, 13 and 11, loaded from seed when load is high."
    own["output"]["context"] = {next(iter(own["output"]["context"])): "module lfsr16(input clock, output reg [15:0] out);\nendmodule\n"}
    path = tmp_path_factory.mktemp("train") / "my_set.jsonl"
    path.write_text(json.dumps(copy) + "\n" + json.dumps(own) + "\n", encoding="utf-8")
    return path


def config(tmp_path: Path, **changes) -> TrainConfig:
    return TrainConfig(mode="rl", backend="local", student="unset", run_dir=str(tmp_path / "run"), **changes)


def test_the_trainer_refuses_before_it_starts(training_file, tmp_path):
    from rtl_trainer.backends.local import LocalServiceClient
    from rtl_trainer.rendering import offline_tokenizer

    run = config(tmp_path, dataset=str(training_file), decontaminate_against=["bundled"])
    service = LocalServiceClient(offline_tokenizer("qwen3_instruct"), workdir=tmp_path / "run", full_finetune=True)
    with pytest.raises(ConfigError) as refused:
        Trainer(run, service)
    message = str(refused.value)
    assert "\n" not in message
    assert f"my_set_gray_0001 ~ {COPIED}" in message and "1 of 2 training problems" in message
    assert "my_set_own_0001" not in message
    assert not (tmp_path / "run" / "config.json").exists()  # nothing started, no model loaded


def test_no_evaluation_set_or_a_clean_one_lets_it_start(training_file, tmp_path):
    refuse_overlap(config(tmp_path, dataset=str(training_file)))  # decontaminate_against None: no check
    assert callable(make_env_factory(config(tmp_path, dataset=str(training_file), decontaminate_against=[])))
    # against other benchmarks (made-up VerilogEval and RTLLM copies) the set is clean
    clean = config(tmp_path, dataset=str(training_file),
                   decontaminate_against=[str(FIXTURES / "verilog-eval"), str(FIXTURES / "rtllm")])
    refuse_overlap(clean)


def test_evaluation_runs_are_not_refused(training_file, tmp_path):
    run = config(tmp_path, dataset=str(training_file), decontaminate_against=["bundled"])
    assert callable(make_env_factory(run, training=False))
    with pytest.raises(ConfigError, match="near-copies"):
        make_env_factory(run)


def test_the_settings_are_checked_and_parsed(tmp_path):
    with pytest.raises(ConfigError, match="decontaminate_rouge_l"):
        config(tmp_path, decontaminate_rouge_l=1.5).validate()
    assert parse_field_value("decontaminate_against", "[bundled, rtllm-v2]") == ["bundled", "rtllm-v2"]
    with pytest.raises(ConfigError, match=r"decontaminate_against: .*no/such"):
        refuse_overlap(config(tmp_path, decontaminate_against=["no/such/benchmark"]))
