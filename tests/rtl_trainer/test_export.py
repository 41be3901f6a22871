"""``rtl-train export``: a trained run's checkpoint as a model loadable outside the project.

A tiny model (built from a config, with a byte-level BPE tokenizer trained here, so nothing
is downloaded) gets a LoRA trained a few steps by the real local backend, its checkpoints
logged as the loop logs them. The exports are loaded by transformers and by PEFT, as a user
would, and must give the trained model's logits. A Tinker run goes through the SDK
stand-in (``backends/tinker_standin.py``), which serves its checkpoint as the service does:
external weights in Tinker's layout, downloaded by URL.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

pytest.importorskip("peft")
pytest.importorskip("tinker")

from peft import PeftModel
from safetensors.torch import save_file
from tinker import types
from tokenizers import Tokenizer, decoders, pre_tokenizers, trainers
from tokenizers import models as tok_models
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast
from transformers.utils import logging as hf_logging
from typer.testing import CliRunner

from rtl_trainer.backends.local import LocalServiceClient
from rtl_trainer.backends.tinker_backend import TinkerService
from rtl_trainer.cli import app
from rtl_trainer.config import TrainConfig
from rtl_trainer.errors import (
    CheckpointNotFoundError,
    ConfigError,
    InvalidCheckpointError,
    ModelError,
    OutputExistsError,
)
from rtl_trainer.export import EXPORT_FILE, export_run, export_tinker, find_checkpoint
from rtl_trainer.export.adapter import read_adapter
from rtl_trainer.loop.runlog import RunLog
from rtl_trainer.losses import sft_datum
from rtl_trainer.models import save_tiny, tiny_model
from tests.rtl_trainer.backends.tinker_standin import Recorder, StandInServiceClient

hf_logging.disable_progress_bar()

EOS = "<|endoftext|>"
TEXT = "module counter(input clk, output reg [3:0] q);\n  always @(posedge clk) q <= q + 4'd1;\nendmodule"
STEPS = 2


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    tok = Tokenizer(tok_models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=[EOS], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator([TEXT, "module fifo(input clk); endmodule", "assign y = a & b;"] * 20, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS)


@pytest.fixture(scope="module")
def base_dir(tokenizer, tmp_path_factory) -> Path:
    """A tiny base model folder with its tokenizer, as a run's ``student``."""
    path = tmp_path_factory.mktemp("base")
    save_tiny(tiny_model("student", len(tokenizer), seed=0), None, path)
    tokenizer.save_pretrained(str(path))
    return path


@pytest.fixture(scope="module")
def tokens(tokenizer) -> list[int]:
    return [*tokenizer.encode(TEXT), tokenizer.eos_token_id]


def train(training, tokens: list[int], log: RunLog) -> None:
    """``STEPS`` SFT steps, a checkpoint after each, logged as the loop logs them."""
    datum = sft_datum(tokens, [0.0] + [1.0] * (len(tokens) - 1))
    for step in range(STEPS):
        training.forward_backward([datum], "cross_entropy").result()
        training.optim_step(types.AdamParams(learning_rate=2e-2)).result()
        log.log_checkpoint(step, state_path=training.save_state(f"step{step:05d}").result().path)


def new_run(run_dir: Path, base_dir: Path, backend: str) -> RunLog:
    log = RunLog(run_dir)
    log.write_config(TrainConfig(mode="sft", backend=backend, student=str(base_dir), lora_rank=4, run_dir=str(run_dir)).to_json())
    return log


@pytest.fixture(scope="module")
def local_run(tokenizer, base_dir, tokens, tmp_path_factory):
    """A local-backend LoRA run (rank 4, every default target incl. the tied head)."""
    run_dir = tmp_path_factory.mktemp("runs") / "local"
    log = new_run(run_dir, base_dir, "local")
    service = LocalServiceClient(tokenizer, workdir=run_dir, device="cpu")
    training = service.create_lora_training_client(str(base_dir), rank=4, seed=0)
    train(training, tokens, log)
    return run_dir, training


def logits(model: torch.nn.Module, tokens: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([tokens])).logits[0].float()


def assert_same_logits(loaded: torch.nn.Module, trained: torch.nn.Module, tokens: list[int], base_dir: Path) -> None:
    expected = logits(trained, tokens)
    assert torch.allclose(logits(loaded.eval(), tokens), expected, atol=1e-4, rtol=0)
    base = AutoModelForCausalLM.from_pretrained(str(base_dir))
    assert (logits(base, tokens) - expected).abs().max() > 1e-2, "training changed nothing: a vacuous check"


# -- local backend -----------------------------------------------------------------------
def test_merged_export_loads_with_transformers_and_gives_the_trained_logits(local_run, base_dir, tokens, tmp_path):
    run_dir, training = local_run
    out = tmp_path / "merged"
    record = export_run(run_dir, out, format="merged")
    assert {"config.json", "model.safetensors", EXPORT_FILE, "tokenizer.json"} <= {p.name for p in out.iterdir()}
    assert not any(p.name.startswith("adapter") for p in out.iterdir())
    model = AutoModelForCausalLM.from_pretrained(str(out))
    assert_same_logits(model, training.model, tokens, base_dir)
    # The head was tied to the embeddings and adapted: the merge untied it, the embeddings kept.
    assert model.config.tie_word_embeddings is False
    base = AutoModelForCausalLM.from_pretrained(str(base_dir))
    assert torch.equal(model.get_input_embeddings().weight, base.get_input_embeddings().weight)
    assert AutoTokenizer.from_pretrained(str(out)).encode(TEXT) == tokens[:-1]
    saved = json.loads((out / EXPORT_FILE).read_text())
    assert saved == record
    assert (saved["format"], saved["backend"], saved["step"], saved["dtype"]) == ("merged", "local", STEPS - 1, "float32")
    assert saved["base_model"] == str(base_dir) and saved["run_dir"] == str(run_dir.resolve())
    assert saved["lora"]["rank"] == 4 and "lm_head" in saved["lora"]["target_modules"]
    assert saved["tokenizer"].startswith("saved") and saved["compact_vocab"] is False


def test_peft_export_loads_on_the_base_and_gives_the_trained_logits(local_run, base_dir, tokens, tmp_path):
    run_dir, training = local_run
    out = tmp_path / "adapter"
    out.mkdir()  # an empty folder is fine
    export_run(run_dir, out, format="peft")
    assert {"adapter_config.json", "adapter_model.safetensors", EXPORT_FILE} <= {p.name for p in out.iterdir()}
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == str(base_dir.resolve()) and config["r"] == 4
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(str(base_dir)), str(out))
    assert_same_logits(model, training.model, tokens, base_dir)


def test_step_picks_an_earlier_checkpoint(local_run, tokens, tmp_path):
    run_dir, training = local_run
    record = export_run(run_dir, tmp_path / "s0", format="merged", step=0)
    assert record["step"] == 0 and record["checkpoint"].endswith("step00000")
    earlier = AutoModelForCausalLM.from_pretrained(str(tmp_path / "s0"))
    assert (logits(earlier, tokens) - logits(training.model, tokens)).abs().max() > 1e-3


def test_a_moved_run_and_base_are_found(local_run, base_dir, tokens, tmp_path, monkeypatch):
    """Checkpoint paths recorded relative to another working directory, and a base named
    relative to it, are found under RUN_DIR/checkpoints and by the base's absolute path."""
    run_dir, training = local_run
    moved = tmp_path / "moved"
    shutil.copytree(run_dir, moved)
    (moved / "checkpoints.jsonl").write_text(json.dumps({"step": 1, "state_path": "runs/old/checkpoints/step00001"}) + "\n")
    state_file = moved / "checkpoints" / "step00001" / "state.json"
    state = json.loads(state_file.read_text())
    assert state["base_model_path"] == str(base_dir.resolve())
    state_file.write_text(json.dumps(state | {"base_model": "models/base"}))
    monkeypatch.chdir(tmp_path)
    export_run("moved", "out", format="merged")
    assert_same_logits(AutoModelForCausalLM.from_pretrained("out"), training.model, tokens, base_dir)
    state_file.write_text(json.dumps(state | {"base_model": "models/base", "base_model_path": str(tmp_path / "gone")}))
    with pytest.raises(ModelError, match="is gone"):
        export_run("moved", "out2", format="peft")


def test_clear_errors(local_run, tmp_path):
    run_dir, _ = local_run
    with pytest.raises(CheckpointNotFoundError, match="no run directory"):
        export_run(tmp_path, tmp_path / "o", format="merged")
    empty = tmp_path / "empty"
    new_run(empty, Path("unused"), "local")
    with pytest.raises(CheckpointNotFoundError, match="no checkpoint yet"):
        export_run(empty, tmp_path / "o", format="merged")
    with pytest.raises(CheckpointNotFoundError, match=r"no checkpoint at step 7; saved steps: 0, 1"):
        export_run(run_dir, tmp_path / "o", format="merged", step=7)
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    with pytest.raises(OutputExistsError, match="not empty"):
        export_run(run_dir, taken, format="merged")
    assert [p.name for p in taken.iterdir()] == ["keep.txt"]
    with pytest.raises(ConfigError, match="format"):
        export_run(run_dir, tmp_path / "o", format="gguf")
    # A run of another backend: a local run handed to the Tinker exporter, and a run whose
    # config says local while its checkpoints are Tinker's.
    with pytest.raises(InvalidCheckpointError, match="local backend, not tinker"):
        export_tinker(find_checkpoint(run_dir), tmp_path / "o", "merged")
    mixed = tmp_path / "mixed"
    new_run(mixed, Path("unused"), "local").log_checkpoint(0, state_path="tinker://run-1/weights/step00000")
    with pytest.raises(InvalidCheckpointError, match="tinker backend, not local"):
        export_run(mixed, tmp_path / "o", format="peft")
    assert not (tmp_path / "o").exists()
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_full_finetune_exports_merged_only(tokenizer, base_dir, tokens, tmp_path):
    run_dir = tmp_path / "full"
    log = new_run(run_dir, base_dir, "local")
    training = LocalServiceClient(tokenizer, workdir=run_dir, device="cpu", full_finetune=True).create_lora_training_client(str(base_dir))
    train(training, tokens, log)
    with pytest.raises(InvalidCheckpointError, match="full fine-tune has no LoRA adapter"):
        export_run(run_dir, tmp_path / "p", format="peft")
    record = export_run(run_dir, tmp_path / "m", format="merged")
    assert record["lora"] is None
    assert_same_logits(AutoModelForCausalLM.from_pretrained(str(tmp_path / "m")), training.model, tokens, base_dir)


def test_compact_vocab_travels_and_a_missing_tokenizer_is_said(tokenizer, tokens, tmp_path):
    """A tiny base with a compact vocabulary and no saved tokenizer: the merged export
    keeps ``compact_vocab.json`` (its logits are over compact ids) and says it has no
    tokenizer; the project's own loader reads it back with its vocab."""
    from rtl_trainer.backends.local.runtime import load_causal_lm, resolve_runtime
    from rtl_trainer.models import CompactVocab

    vocab = CompactVocab.from_token_ids(tokens, len(tokenizer))
    base = tmp_path / "compact-base"
    save_tiny(tiny_model("student", vocab.size, seed=1), vocab, base)
    run_dir = tmp_path / "run"
    log = new_run(run_dir, base, "local")
    training = LocalServiceClient(tokenizer, workdir=run_dir, device="cpu").create_lora_training_client(str(base), rank=4, seed=0)
    train(training, tokens, log)
    record = export_run(run_dir, tmp_path / "m", format="merged")
    assert record["compact_vocab"] is True and record["tokenizer"].startswith("none")
    model, loaded_vocab = load_causal_lm(str(tmp_path / "m"), resolve_runtime("cpu", "float32", False))
    assert loaded_vocab == vocab
    assert_same_logits(model, training.model, vocab.to_compact(tokens), base)


def test_tokenizer_files_that_do_not_load_are_copied_and_said_so(tmp_path):
    from rtl_trainer.export.write import copy_tokenizer

    base, out = tmp_path / "base", tmp_path / "out"
    base.mkdir(), out.mkdir()
    (base / "tokenizer.json").write_text("{not json")
    said = copy_tokenizer(str(base), out)
    assert said.startswith("copied tokenizer.json (they do not load with AutoTokenizer")
    assert (out / "tokenizer.json").read_text() == "{not json"


def test_cli_export(local_run, tmp_path):
    run_dir, _ = local_run
    runner = CliRunner()
    result = runner.invoke(app, ["export", str(run_dir), "--step", "0", "--format", "peft", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    assert "wrote" in result.output and json.loads((tmp_path / "a" / EXPORT_FILE).read_text())["step"] == 0
    again = runner.invoke(app, ["export", str(run_dir), "--format", "peft", str(tmp_path / "a")])
    assert again.exit_code == 2 and "error:" in again.output and "not empty" in again.output


def test_mixture_of_experts_adapters_are_refused(tmp_path):
    (tmp_path / "adapter_config.json").write_text(json.dumps({"r": 2, "lora_alpha": 4}))
    save_file(
        {"base_model.model.model.layers.0.mlp.experts.w1.lora_A.weight": torch.zeros(4, 2, 8),
         "base_model.model.model.layers.0.mlp.experts.w1.lora_B.weight": torch.zeros(4, 8, 2)},
        str(tmp_path / "adapter_model.safetensors"),
    )
    with pytest.raises(ModelError, match="mixture-of-experts"):
        read_adapter(tmp_path, tinker_names=True)


# -- Tinker backend (the SDK stand-in) ---------------------------------------------------
@pytest.fixture(scope="module")
def tinker_run(tokenizer, base_dir, tokens, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("runs") / "tinker"
    log = new_run(run_dir, base_dir, "tinker")
    local = LocalServiceClient(tokenizer, workdir=run_dir, device="cpu")
    standin = StandInServiceClient(local, [str(base_dir)], Recorder())
    service = TinkerService(standin, api_key="test-key")
    training = service.create_lora_training_client(str(base_dir), rank=4, seed=0)
    train(training, tokens, log)
    return run_dir, service, standin, training._client._local  # the stand-in's live model


@pytest.mark.parametrize("fmt", ["peft", "merged"])
def test_tinker_export_downloads_through_the_sdk_and_converts(tinker_run, base_dir, tokens, tmp_path, fmt):
    run_dir, service, standin, trained = tinker_run
    calls = len(standin.rec.calls)
    record = export_run(run_dir, tmp_path / fmt, format=fmt, tinker_service=service)
    made = [name for name, _ in standin.rec.calls[calls:]]
    assert made == [
        "get_weights_info_by_tinker_path", "create_training_client_from_state", "save_weights_external",
        "get_external_weights_urls", "delete_checkpoint_from_tinker_path",
    ]
    assert standin.rec.named("save_weights_external")[-1]["ttl_seconds"] == 3600
    assert standin.external == {}, "the temporary export was not deleted"
    assert (record["backend"], record["step"], record["base_model"]) == ("tinker", STEPS - 1, str(base_dir))
    assert "lm_head" in record["lora"]["target_modules"]  # renamed from model.unembed_tokens
    if fmt == "peft":
        model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(str(base_dir)), str(tmp_path / fmt))
    else:
        model = AutoModelForCausalLM.from_pretrained(str(tmp_path / fmt))
    assert_same_logits(model, trained.model, tokens, base_dir)
