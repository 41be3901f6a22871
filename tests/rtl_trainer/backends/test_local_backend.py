"""The local training backend on real tiny models: real forward/backward, real sampling.

The tokenizer is a byte-level BPE trained here on generated Verilog, so nothing is
downloaded and nothing depends on other modules' tokenizers.
"""

from __future__ import annotations

import asyncio
import math
import random
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("peft")
pytest.importorskip("tinker")

from tinker import types
from tokenizers import Tokenizer, decoders, pre_tokenizers, trainers
from tokenizers import models as tok_models
from transformers import PreTrainedTokenizerFast
from transformers.utils import logging as hf_logging

from rtl_trainer.backends.futures import LocalFuture
from rtl_trainer.backends.local import (
    LocalSamplingClient,
    LocalServiceClient,
    LocalTrainingClient,
)
from rtl_trainer.models import CompactVocab, load_tiny, save_tiny, tiny_model

hf_logging.disable_progress_bar()

EOS = "<|endoftext|>"
TARGET = (
    "module counter(input clk, output reg [3:0] q);\n"
    "  always @(posedge clk) q <= q + 4'd1;\n"
    "endmodule"
)
PROMPT_TOKENS = 3  # the memorised sequence is prompted with its first tokens


def verilog_lines(seed: int = 0, modules: int = 120) -> list[str]:
    rng = random.Random(seed)
    lines: list[str] = []
    for i in range(modules):
        w = rng.choice([1, 4, 8, 16, 32])
        name = f"{rng.choice(['cnt', 'fifo', 'alu', 'reg', 'mux'])}_{i}"
        lines += [
            f"module {name}(input clk, input rst_n, input [{w - 1}:0] d, output reg [{w - 1}:0] q);",
            "  always @(posedge clk or negedge rst_n) begin",
            f"    if (!rst_n) q <= {w}'d0; else q <= d + {w}'d{rng.randrange(8)};",
            "  end",
            "endmodule",
        ]
    return lines


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    tok = Tokenizer(tok_models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(verilog_lines(), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS)


@pytest.fixture(scope="module")
def base_dir(tokenizer, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("base")
    save_tiny(tiny_model("student", len(tokenizer), seed=0), None, path)
    return path


@pytest.fixture(scope="module")
def target_seq(tokenizer) -> list[int]:
    return [*tokenizer.encode(TARGET), tokenizer.eos_token_id]


def full_client(tokenizer, base_dir, workdir, **kw) -> LocalTrainingClient:
    svc = LocalServiceClient(tokenizer, workdir=workdir, full_finetune=True, **kw)
    return svc.create_lora_training_client(str(base_dir))


def sft_datum(seq: list[int], prompt_len: int = 1) -> types.Datum:
    weights = [0.0 if t + 1 < prompt_len else 1.0 for t in range(len(seq) - 1)]
    return types.Datum(
        model_input=types.ModelInput.from_ints(seq[:-1]),
        loss_fn_inputs={"target_tokens": seq[1:], "weights": weights},
    )


def rl_datum(prompt: list[int], completion: list[int], logprobs, advantage: float) -> types.Datum:
    """Tinker's RL layout: inputs are prompt+completion[:-1], targets shifted by one."""
    seq = prompt + completion
    n_prompt = len(prompt) - 1
    return types.Datum(
        model_input=types.ModelInput.from_ints(seq[:-1]),
        loss_fn_inputs={
            "target_tokens": seq[1:],
            "logprobs": [0.0] * n_prompt + list(logprobs),
            "advantages": [0.0] * n_prompt + [advantage] * len(completion),
        },
    )


def seq_logprob(client: LocalTrainingClient, datum: types.Datum, key: str = "advantages") -> float:
    out = client.forward([datum], "importance_sampling").result()
    logp = out.loss_fn_outputs[0]["logprobs"].to_numpy()
    mask = datum.loss_fn_inputs[key].to_numpy() != 0
    return float(logp[mask].sum())


@pytest.fixture(scope="module")
def memorised(tokenizer, base_dir, target_seq, tmp_path_factory):
    """A full fine-tune that memorised ``TARGET`` (cross_entropy), with its losses."""
    client = full_client(tokenizer, base_dir, tmp_path_factory.mktemp("mem"))
    datum = sft_datum(target_seq)
    losses = []
    for _ in range(200):
        fb = client.forward_backward([datum], "cross_entropy")
        step = client.optim_step(types.AdamParams(learning_rate=1e-2))
        losses.append(fb.result().metrics["loss:sum"])
        step.result()
        if losses[-1] < 0.3:
            break
    return client, losses


# --------------------------------------------------------------------------- sampling


def test_sample_counts_lengths_and_seeds(tokenizer, base_dir, tmp_path):
    sampler = full_client(tokenizer, base_dir, tmp_path).save_weights_and_get_sampling_client()
    assert isinstance(sampler, LocalSamplingClient)
    prompt = types.ModelInput.from_ints(tokenizer.encode("module top("))
    params = types.SamplingParams(max_tokens=7, temperature=1.0, seed=3, stop=[])
    first = sampler.sample(prompt, 3, params)
    assert isinstance(first, LocalFuture)
    res = first.result()
    assert len(res.sequences) == 3
    for seq in res.sequences:
        assert len(seq.tokens) == 7 and len(seq.logprobs) == 7
        assert seq.stop_reason == "length"
        assert all(0 <= t < len(tokenizer) for t in seq.tokens)
        assert all(lp <= 0 and math.isfinite(lp) for lp in seq.logprobs)
    assert len({tuple(s.tokens) for s in res.sequences}) > 1  # independent samples
    again = sampler.sample(prompt, 3, params).result()
    assert [s.tokens for s in again.sequences] == [s.tokens for s in res.sequences]
    capped = sampler.sample(prompt, 2, types.SamplingParams(max_tokens=4, seed=1)).result()
    assert all(len(s.tokens) <= 4 for s in capped.sequences)
    assert sampler.get_tokenizer() is tokenizer


def test_queued_requests_share_one_batch_without_changing_their_samples(tokenizer, base_dir, tmp_path):
    """With ``batch_sampling``, requests queued while the sampler is busy are decoded
    together (left-padded prompts of different lengths); each gets the tokens it would get
    alone, and log-probs within rounding of its own."""
    sampler = full_client(tokenizer, base_dir, tmp_path, batch_sampling=True).save_weights_and_get_sampling_client()
    prompts = [tokenizer.encode("module top("), tokenizer.encode("module alu ( input a , output y );")]
    assert len(prompts[0]) != len(prompts[1])
    settings = [types.SamplingParams(max_tokens=9, temperature=1.0, seed=s, stop=[]) for s in (5, 6)]
    alone = [sampler.sample(types.ModelInput.from_ints(p), 3, s).result() for p, s in zip(prompts, settings, strict=True)]
    forward_calls = 0
    original = sampler._forward

    def counting(*args, **kwargs):
        nonlocal forward_calls
        forward_calls += 1
        return original(*args, **kwargs)

    sampler._forward = counting
    gate = threading.Event()
    sampler._worker.submit(gate.wait, 10)  # keep the worker busy while both requests queue
    futures = [sampler.sample(types.ModelInput.from_ints(p), 3, s) for p, s in zip(prompts, settings, strict=True)]
    gate.set()
    together = [f.result() for f in futures]
    assert forward_calls == 9  # one prefill + 8 decode steps for both requests
    for one, both in zip(alone, together, strict=True):
        assert [s.tokens for s in both.sequences] == [s.tokens for s in one.sequences]
        for a, b in zip(one.sequences, both.sequences, strict=True):
            np.testing.assert_allclose(b.logprobs, a.logprobs, atol=1e-4)


def test_a_requests_samples_are_its_own_to_the_bit_whatever_else_is_queued(tokenizer, base_dir, tmp_path):
    """By default each request decodes alone, in the order they came: a seeded request's
    tokens and log-probs are the same bits whether it was alone or queued behind others
    (which a machine's timing decides), so a seeded run does not depend on that timing."""
    sampler = full_client(tokenizer, base_dir, tmp_path).save_weights_and_get_sampling_client()
    prompts = [tokenizer.encode("module top("), tokenizer.encode("module alu ( input a , output y );")]
    params = [types.SamplingParams(max_tokens=9, temperature=0.7, seed=s, stop=[]) for s in (5, 6)]
    alone = [sampler.sample(types.ModelInput.from_ints(p), 3, s).result() for p, s in zip(prompts, params, strict=True)]
    gate = threading.Event()
    sampler._worker.submit(gate.wait, 10)  # keep the worker busy while both requests queue
    futures = [sampler.sample(types.ModelInput.from_ints(p), 3, s) for p, s in zip(prompts, params, strict=True)]
    gate.set()
    for one, queued in zip(alone, [f.result() for f in futures], strict=True):
        assert [s.tokens for s in queued.sequences] == [s.tokens for s in one.sequences]
        assert [list(s.logprobs) for s in queued.sequences] == [list(s.logprobs) for s in one.sequences]


def reference_logprobs(
    logits: torch.Tensor, tokens: list[int], temperature: float, top_k: int, top_p: float
) -> list[float]:
    """Independent recomputation of the sampling distribution, one position at a time."""
    out = []
    for row, tok in zip(logits, tokens, strict=True):
        probs = torch.softmax(row.double() / temperature, -1).numpy()
        order = np.argsort(-probs, kind="stable")
        keep = np.zeros_like(probs, dtype=bool)
        keep[order[:top_k]] = True
        kept = np.where(keep, probs, 0.0)
        kept /= kept.sum()
        mass = 0.0
        nucleus = np.zeros_like(keep)
        for idx in np.argsort(-kept, kind="stable"):
            if mass >= top_p or kept[idx] == 0:
                break
            nucleus[idx] = True
            mass += kept[idx]
        final = np.where(nucleus, kept, 0.0)
        final /= final.sum()
        out.append(float(np.log(final[tok])))
    return out


def test_sampled_logprobs_are_the_behaviour_policy(tokenizer, base_dir, tmp_path):
    client = full_client(tokenizer, base_dir, tmp_path)
    sampler = client.save_weights_and_get_sampling_client()
    prompt = tokenizer.encode("module alu(")
    # Temperature 1, no filtering: the sampler's logprobs are the model's.
    res = sampler.sample(
        types.ModelInput.from_ints(prompt), 4, types.SamplingParams(max_tokens=12, seed=0)
    ).result()
    assert res.prompt_logprobs is None
    for seq in res.sequences:
        full = sampler.compute_logprobs(types.ModelInput.from_ints(prompt + seq.tokens)).result()
        assert full[0] is None and len(full) == len(prompt) + len(seq.tokens)
        np.testing.assert_allclose(full[len(prompt) :], seq.logprobs, atol=1e-4)
        # The training side scores the same tokens identically.
        datum = rl_datum(prompt, seq.tokens, seq.logprobs, 1.0)
        out = client.forward([datum], "importance_sampling").result()
        train_lp = out.loss_fn_outputs[0]["logprobs"].to_numpy()[len(prompt) - 1 :]
        np.testing.assert_allclose(train_lp, seq.logprobs, atol=1e-4)
    # Temperature, top-k and top-p: logprobs of the filtered, renormalised distribution.
    t, k, p = 0.7, 20, 0.9
    res = sampler.sample(
        types.ModelInput.from_ints(prompt),
        3,
        types.SamplingParams(max_tokens=10, seed=1, temperature=t, top_k=k, top_p=p),
    ).result()
    with_prompt = sampler.sample(
        types.ModelInput.from_ints(prompt), 1, types.SamplingParams(max_tokens=1), True
    ).result()
    expected_prompt = sampler.compute_logprobs(types.ModelInput.from_ints(prompt)).result()
    assert with_prompt.prompt_logprobs[0] is None
    np.testing.assert_allclose(with_prompt.prompt_logprobs[1:], expected_prompt[1:], atol=1e-5)
    model, _ = load_tiny(base_dir)
    for seq in res.sequences:
        with torch.no_grad():
            logits = model(torch.tensor([prompt + seq.tokens])).logits[0]
        rows = logits[len(prompt) - 1 : -1]
        expected = reference_logprobs(rows, seq.tokens, t, k, p)
        np.testing.assert_allclose(seq.logprobs, expected, atol=1e-4)


def test_memorise_then_greedy_reproduces(memorised, target_seq, tokenizer):
    client, losses = memorised
    assert losses[-1] < 0.3 < losses[0]
    sampler = client.save_weights_and_get_sampling_client()
    prompt = types.ModelInput.from_ints(target_seq[:PROMPT_TOKENS])
    res = sampler.sample(prompt, 2, types.SamplingParams(max_tokens=100, temperature=0.0)).result()
    for seq in res.sequences:
        assert seq.tokens == target_seq[PROMPT_TOKENS:]  # EOS included
        assert seq.stop_reason == "stop"
        assert tokenizer.decode(seq.tokens).endswith("endmodule" + EOS)


def test_stop_strings_token_ids_and_max_tokens(memorised, target_seq, tokenizer):
    sampler = memorised[0].save_weights_and_get_sampling_client()
    prompt = types.ModelInput.from_ints(target_seq[:PROMPT_TOKENS])
    rest = target_seq[PROMPT_TOKENS:]

    def greedy(**kw) -> types.SampledSequence:
        params = types.SamplingParams(temperature=0.0, **{"max_tokens": 100, **kw})
        return sampler.sample(prompt, 1, params).result().sequences[0]

    by_string = greedy(stop=["always"])
    text = tokenizer.decode(by_string.tokens)
    assert by_string.stop_reason == "stop"
    assert by_string.tokens == rest[: len(by_string.tokens)]
    assert "always" in text and text.count("always") == 1
    assert "always" not in tokenizer.decode(by_string.tokens[:-1])  # stopped at once

    stop_id = rest[5]
    by_id = greedy(stop=[stop_id])
    assert by_id.tokens == rest[: rest.index(stop_id) + 1] and by_id.stop_reason == "stop"

    no_stop = greedy(stop=[], max_tokens=len(rest) + 5)
    assert no_stop.tokens[: len(rest)] == rest  # ran through EOS
    assert len(no_stop.tokens) == len(rest) + 5 and no_stop.stop_reason == "length"

    short = greedy(max_tokens=3)
    assert short.tokens == rest[:3] and short.stop_reason == "length"


# --------------------------------------------------------------------------- training


def test_cross_entropy_outputs_and_batching(tokenizer, base_dir, target_seq, tmp_path):
    client = full_client(tokenizer, base_dir, tmp_path, microbatch_tokens=1)
    short = [*tokenizer.encode("module m(input clk);"), tokenizer.eos_token_id]
    data = [sft_datum(target_seq, prompt_len=4), sft_datum(short)]
    batched = client.forward(data, "cross_entropy").result()
    whole = full_client(tokenizer, base_dir, tmp_path).forward(data, "cross_entropy").result()
    singles = [client.forward([d], "cross_entropy").result() for d in data]
    total = 0.0
    for i, datum in enumerate(data):
        logp = batched.loss_fn_outputs[i]["logprobs"].to_numpy()
        assert logp.shape == (datum.model_input.length,)
        np.testing.assert_allclose(
            logp, singles[i].loss_fn_outputs[0]["logprobs"].to_numpy(), atol=1e-5
        )
        np.testing.assert_allclose(logp, whole.loss_fn_outputs[i]["logprobs"].to_numpy(), atol=1e-5)
        total += -float((datum.loss_fn_inputs["weights"].to_numpy() * logp).sum())
    assert batched.metrics["loss:sum"] == pytest.approx(total, rel=1e-5)
    assert whole.metrics["loss:sum"] == pytest.approx(total, rel=1e-5)


def test_importance_sampling_moves_logprob_with_advantage_sign(tokenizer, base_dir, tmp_path):
    prompt = tokenizer.encode("module fifo(")
    probe = full_client(tokenizer, base_dir, tmp_path)
    seq = (
        probe.save_weights_and_get_sampling_client()
        .sample(types.ModelInput.from_ints(prompt), 1, types.SamplingParams(max_tokens=8, seed=5))
        .result()
        .sequences[0]
    )
    for advantage in (1.0, -1.0):
        client = full_client(tokenizer, base_dir, tmp_path)
        datum = rl_datum(prompt, seq.tokens, seq.logprobs, advantage)
        before = seq_logprob(client, datum)
        out = client.forward_backward([datum], "importance_sampling").result()
        assert out.metrics["ratio:mean"] == pytest.approx(1.0, abs=1e-4)
        assert out.metrics["clip_fraction:mean"] == 0.0
        assert out.metrics["loss:sum"] == pytest.approx(-advantage * len(seq.tokens), rel=1e-4)
        client.optim_step(types.AdamParams(learning_rate=1e-3)).result()
        after = seq_logprob(client, datum)
        assert (after - before) * advantage > 0.05


def test_ppo_clipped_side_has_no_gradient(tokenizer, base_dir, target_seq, tmp_path):
    client = full_client(tokenizer, base_dir, tmp_path)
    prompt, completion = target_seq[:PROMPT_TOKENS], target_seq[PROMPT_TOKENS:]
    zeros = [0.0] * len(completion)
    current = client.forward([rl_datum(prompt, completion, zeros, 1.0)], "ppo").result()
    logp = current.loss_fn_outputs[0]["logprobs"].to_numpy()[len(prompt) - 1 :]
    stale = logp - 1.0  # ratio = e: far above 1 + clip_high

    def grads_after(advantage: float, loss_fn: str) -> tuple[float, types.ForwardBackwardOutput]:
        out = client.forward_backward([rl_datum(prompt, completion, stale, advantage)], loss_fn)
        result = out.result()
        norm = sum(
            float(p.grad.abs().sum()) for p in client.model.parameters() if p.grad is not None
        )
        client.model.zero_grad(set_to_none=True)
        return norm, result

    norm, out = grads_after(1.0, "ppo")
    assert norm == 0.0  # min(r A, clip(r) A) picks the constant clipped term
    assert out.metrics["clip_fraction:mean"] == 1.0
    assert out.metrics["ratio:mean"] == pytest.approx(math.e, rel=1e-3)
    assert out.metrics["loss:sum"] == pytest.approx(-1.2 * len(completion), rel=1e-5)
    norm, out = grads_after(-1.0, "ppo")
    assert norm > 0  # the unclipped term is the pessimistic one for A < 0
    assert out.metrics["clip_fraction:mean"] == 0.0
    norm, _ = grads_after(1.0, "importance_sampling")
    assert norm > 0  # no clipping without ppo
    config = {"clip_low_threshold": 0.2, "clip_high_threshold": 5.0}
    out = client.forward([rl_datum(prompt, completion, stale, 1.0)], "ppo", config).result()
    assert out.metrics["clip_fraction:mean"] == 0.0  # e < 1 + 5


def test_snapshot_sampler_ignores_later_training(tokenizer, base_dir, target_seq, tmp_path):
    client = full_client(tokenizer, base_dir, tmp_path)
    snapshot = client.save_weights_and_get_sampling_client()
    probe = types.ModelInput.from_ints(target_seq)
    before = snapshot.compute_logprobs(probe).result()
    for _ in range(3):
        client.forward_backward([sft_datum(target_seq)], "cross_entropy")
        client.optim_step(types.AdamParams(learning_rate=1e-2))
    fresh = client.save_weights_and_get_sampling_client()  # waits for the queued steps
    assert snapshot.compute_logprobs(probe).result() == before
    after = fresh.compute_logprobs(probe).result()
    assert sum(after[1:]) > sum(before[1:]) + 1.0


def test_calls_run_in_submission_order(tokenizer, base_dir, target_seq, tmp_path):
    client = full_client(tokenizer, base_dir, tmp_path)
    datum = sft_datum(target_seq)
    first = client.forward([datum], "cross_entropy")
    fb = client.forward_backward([datum], "cross_entropy")
    step = client.optim_step(types.AdamParams(learning_rate=1e-2))
    second = client.forward([datum], "cross_entropy")
    assert second.result().metrics["loss:sum"] < first.result().metrics["loss:sum"]
    assert fb.done() and step.done() and client.step == 1
    assert fb.result().metrics["loss:sum"] == pytest.approx(first.result().metrics["loss:sum"])
    assert step.result().metrics["grad_norm"] > 0

    async def awaited() -> float:
        return (await client.forward([datum], "cross_entropy")).metrics["loss:sum"]

    assert asyncio.run(awaited()) == pytest.approx(second.result().metrics["loss:sum"])


@pytest.mark.parametrize("full_finetune", [True, False], ids=["full", "lora"])
def test_save_state_resumes_exactly(tokenizer, base_dir, target_seq, tmp_path, full_finetune):
    svc = LocalServiceClient(tokenizer, workdir=tmp_path, full_finetune=full_finetune)
    client = svc.create_lora_training_client(str(base_dir), rank=4, seed=0)
    datum = sft_datum(target_seq)
    adam = types.AdamParams(learning_rate=1e-2, weight_decay=0.01, grad_clip_norm=1.0)

    def train(c: LocalTrainingClient) -> None:
        c.forward_backward([datum], "cross_entropy")
        c.optim_step(adam).result()

    def logprobs(c: LocalTrainingClient) -> np.ndarray:
        return (
            c.forward([datum], "cross_entropy").result().loss_fn_outputs[0]["logprobs"].to_numpy()
        )

    train(client)
    train(client)
    path = client.save_state("step2").result().path
    assert Path(path) == tmp_path / "checkpoints" / "step2"
    saved = logprobs(client)
    with pytest.raises(FileExistsError):
        client.save_state("step2").result()

    # As the SDK: "_with_optimizer" restores AdamW's moments and step; the plain form
    # only the weights, with a fresh optimizer.
    weights_only = svc.create_training_client_from_state(path)
    resumed = svc.create_training_client_from_state_with_optimizer(path)
    assert resumed.step == client.step == 2 and weights_only.step == 0
    assert resumed.is_lora == weights_only.is_lora == (not full_finetune)
    np.testing.assert_array_equal(logprobs(resumed), saved)
    np.testing.assert_array_equal(logprobs(weights_only), saved)
    train(client)
    train(resumed)  # identical only if AdamW's moments and step count were restored
    train(weights_only)
    np.testing.assert_allclose(logprobs(resumed), logprobs(client), atol=1e-6)
    assert np.abs(logprobs(weights_only) - logprobs(client)).max() > 1e-4

    client.load_state_with_optimizer(path).result()
    assert client.step == 2
    np.testing.assert_array_equal(logprobs(client), saved)
    client.load_state(path).result()
    assert client.step == 0
    np.testing.assert_array_equal(logprobs(client), saved)
    for_sampler = client.save_weights_for_sampler("s2").result().path
    for model_path in (path, for_sampler):
        sampler = svc.create_sampling_client(model_path=model_path)
        np.testing.assert_allclose(
            sampler.compute_logprobs(types.ModelInput.from_ints(target_seq)).result()[1:],
            saved,
            atol=1e-5,
        )


def test_lora_trains_only_the_adapter(tokenizer, base_dir, target_seq, tmp_path):
    svc = LocalServiceClient(tokenizer, workdir=tmp_path)  # LoRA is the default
    client = svc.create_lora_training_client(str(base_dir), rank=8, seed=0)
    trainable = {n for n, p in client.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    targets = {n.split(".lora_")[0].rsplit(".", 1)[-1] for n in trainable}
    assert targets == {
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
        "lm_head",
    }
    before = {n: p.detach().clone() for n, p in client.model.named_parameters()}
    datum = sft_datum(target_seq)
    losses = []
    for _ in range(5):
        losses.append(
            client.forward_backward([datum], "cross_entropy").result().metrics["loss:sum"]
        )
        client.optim_step(types.AdamParams(learning_rate=1e-2)).result()
    assert losses[-1] < losses[0]
    for name, param in client.model.named_parameters():
        changed = not torch.equal(param.detach(), before[name])
        assert changed == (name in trainable), name  # base frozen, every adapter moved

    # The snapshot copies only the adapter: base weights are shared, not duplicated.
    snapshot = client.save_weights_and_get_sampling_client()
    probe = types.ModelInput.from_ints(target_seq)
    before = snapshot.compute_logprobs(probe).result()
    current = client.forward([datum], "cross_entropy").result().loss_fn_outputs[0]["logprobs"]
    np.testing.assert_allclose(before[1:], current.to_numpy(), atol=1e-5)
    shared = {p.data_ptr() for p in snapshot._model.parameters()}
    for name, param in client.model.named_parameters():
        assert (param.data_ptr() in shared) == (name not in trainable), name
    client.forward_backward([datum], "cross_entropy")
    client.optim_step(types.AdamParams(learning_rate=1e-2)).result()
    assert snapshot.compute_logprobs(probe).result() == before

    attn_only = svc.create_lora_training_client(
        str(base_dir), rank=2, train_mlp=False, train_unembed=False
    )
    names = [n for n, p in attn_only.model.named_parameters() if p.requires_grad]
    assert names and not any(
        m in n for n in names for m in ("gate_proj", "up_proj", "down_proj", "lm_head")
    )


# --------------------------------------------------------------------------- compact vocab


def test_compact_vocab_round_trip(tokenizer, tmp_path):
    corpus = verilog_lines(seed=1, modules=3)
    vocab = CompactVocab.from_texts(tokenizer, corpus)
    assert tokenizer.eos_token_id in vocab.full_ids and vocab.size < len(tokenizer)
    known = tokenizer.encode(corpus[0])
    compact = vocab.to_compact(known)
    assert CompactVocab.UNK not in compact and vocab.to_full(compact) == known
    unknown = next(i for i in range(len(tokenizer)) if i not in set(vocab.full_ids))
    assert vocab.to_compact([unknown, -5, 10**9]) == [CompactVocab.UNK] * 3
    assert vocab.to_full([CompactVocab.UNK]) == [vocab.unk_full_id]
    assert vocab.to_compact([vocab.unk_full_id]) == [CompactVocab.UNK]

    model = tiny_model("student", vocab.size, seed=0)
    save_tiny(model, vocab, tmp_path / "compact")
    loaded, loaded_vocab = load_tiny(tmp_path / "compact")
    assert loaded_vocab == vocab
    assert loaded.get_input_embeddings().num_embeddings == vocab.size
    for a, b in zip(model.state_dict().values(), loaded.state_dict().values(), strict=True):
        assert torch.equal(a, b)

    svc = LocalServiceClient(tokenizer, workdir=tmp_path, full_finetune=True)
    client = svc.create_lora_training_client(str(tmp_path / "compact"))
    sampler = client.save_weights_and_get_sampling_client()
    prompt = tokenizer.encode("module cnt_0(")
    res = sampler.sample(
        types.ModelInput.from_ints(prompt), 4, types.SamplingParams(max_tokens=10, seed=0, stop=[])
    ).result()
    allowed = {*vocab.full_ids, vocab.unk_full_id}
    for seq in res.sequences:
        assert set(seq.tokens) <= allowed  # full ids out, never compact ones
        full = sampler.compute_logprobs(types.ModelInput.from_ints(prompt + seq.tokens)).result()
        np.testing.assert_allclose(full[len(prompt) :], seq.logprobs, atol=1e-4)
    # Unknown full ids in inputs and targets map to <unk> instead of failing.
    seq = [*known[:6], unknown, *known[6:10]]
    datum = sft_datum(seq)
    out = client.forward_backward([datum], "cross_entropy").result()
    assert np.isfinite(out.loss_fn_outputs[0]["logprobs"].to_numpy()).all()
    client.optim_step(types.AdamParams(learning_rate=1e-2)).result()
    assert (
        client.forward([datum], "cross_entropy").result().metrics["loss:sum"]
        < out.metrics["loss:sum"]
    )


# --------------------------------------------------------------------------- errors


def test_clear_errors_for_bad_inputs(tokenizer, base_dir, target_seq, tmp_path):
    client = full_client(tokenizer, base_dir, tmp_path)
    good = sft_datum(target_seq)
    n = good.model_input.length
    missing = types.Datum(
        model_input=good.model_input, loss_fn_inputs={"target_tokens": target_seq[1:]}
    )
    with pytest.raises(
        ValueError, match=r"datum 1: .*'cross_entropy' needs loss_fn_inputs\['weights'\]"
    ):
        client.forward_backward([good, missing], "cross_entropy")
    short = types.Datum(
        model_input=good.model_input,
        loss_fn_inputs={"target_tokens": target_seq[1:], "weights": [1.0] * (n - 1)},
    )
    with pytest.raises(
        ValueError,
        match=rf"datum 0: loss_fn_inputs\['weights'\] has shape \({n - 1},\).*{n} tokens",
    ):
        client.forward([short], "cross_entropy")
    with pytest.raises(ValueError, match=r"needs loss_fn_inputs\['logprobs'\]"):
        client.forward_backward([good], "importance_sampling")
    with pytest.raises(ValueError, match="unknown loss_fn"):
        client.forward_backward([good], "dpo")
    with pytest.raises(ValueError, match="clip_high"):
        client.forward_backward([good], "cross_entropy", {"clip_high_threshold": 0.3})
    too_big = sft_datum([*target_seq[:4], len(tokenizer) + 7, *target_seq[4:8]])
    with pytest.raises(ValueError, match=r"datum 0: token id \d+ is outside"):
        client.forward([too_big], "cross_entropy")
    with pytest.raises(ValueError, match="AdamParams"):
        client.optim_step(types.DimuonParams(learning_rate=0.1))
    with pytest.raises(ValueError, match="num_samples"):
        client.save_weights_and_get_sampling_client().sample(
            good.model_input, 0, types.SamplingParams(max_tokens=2)
        )
    assert client.step == 0  # nothing bad was queued
