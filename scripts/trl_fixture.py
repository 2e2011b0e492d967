"""Make the TRL test fixture: a few steps of TRL's real ``GRPOTrainer`` on the CPU (paper section 5's GRPO setting).

Run it in its own environment, never the book's (its pins are ``scripts/trl_fixture_requirements.txt``):

    python -m venv /tmp/trl-fixture
    /tmp/trl-fixture/bin/pip install -r scripts/trl_fixture_requirements.txt
    /tmp/trl-fixture/bin/python scripts/trl_fixture.py

Nothing is downloaded: the tokenizer is built here (one token per character of a tiny
vocabulary) and the causal model (a two-layer Llama of width 32) is randomly initialised with a
fixed seed. The toy verifiable task is one-digit addition (``"3+4="``, answer ``"7"``), scored by
two reward functions: ``correct`` (1 when the completion starts with the sum) and ``tidy`` (0.2
when the completion holds no operator). The run logs completions at every step
(``log_completions=True``) with ``num_iterations=2`` (each generation batch serves two steps, so
files repeat), evaluates every 5 steps with ``num_generations_eval=2`` (evaluation rows land in
that step's file), and ends with ``save_state`` (``trainer_state.json`` records the evaluation
steps). It writes the run's ``completions/*.parquet`` and ``trainer_state.json`` into
``tests/fixtures/diagnose/trl``, which ``tests/test_diagnose.py`` reads.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import torch
from datasets import Dataset
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from trl import GRPOConfig, GRPOTrainer

TARGET = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "diagnose" / "trl"
SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")
CHARACTERS = tuple("0123456789+= ")


def tokenizer() -> PreTrainedTokenizerFast:
    """A character-level tokenizer of the task's vocabulary, built locally."""
    vocabulary = {token: index for index, token in enumerate(SPECIALS + CHARACTERS)}
    core = Tokenizer(models.WordLevel(vocabulary, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", bos_token="<bos>", eos_token="<eos>",
                                   unk_token="<unk>", padding_side="left")


def model(vocabulary_size: int) -> LlamaForCausalLM:
    """A randomly initialised two-layer causal model (seeded)."""
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=vocabulary_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32,
                         pad_token_id=0, bos_token_id=1, eos_token_id=2)
    return LlamaForCausalLM(config)


def additions(pairs: list[tuple[int, int]]) -> Dataset:
    """Prompts ``"a+b="`` with their answers."""
    return Dataset.from_dict({"prompt": [f"{a}+{b}=" for a, b in pairs], "answer": [str(a + b) for a, b in pairs]})


def correct(completions: list[str], answer: list[str], **_: object) -> list[float]:
    """1 when the completion starts with the sum, else 0."""
    return [float(completion.strip().startswith(target)) for completion, target in zip(completions, answer)]


def tidy(completions: list[str], **_: object) -> list[float]:
    """0.2 when the completion holds no operator, else 0."""
    return [0.2 if "+" not in completion and "=" not in completion else 0.0 for completion in completions]


def main() -> None:
    text = tokenizer()
    train = additions([(1, 2), (2, 2), (3, 1), (0, 4), (2, 5), (4, 4)])
    evaluation = additions([(1, 1), (3, 3)])
    with tempfile.TemporaryDirectory() as output:
        config = GRPOConfig(
            output_dir=output, max_steps=12, learning_rate=3e-3, per_device_train_batch_size=8, num_generations=4,
            num_generations_eval=2, per_device_eval_batch_size=4, max_completion_length=3, num_iterations=2,
            logging_steps=1, log_completions=True, num_completions_to_print=0, eval_strategy="steps", eval_steps=5,
            save_strategy="no", report_to=[], use_cpu=True, seed=0, beta=0.0, reward_weights=[1.0, 1.0],
            bf16=False, dataloader_num_workers=0,
        )
        trainer = GRPOTrainer(model=model(len(text)), reward_funcs=[correct, tidy], args=config, train_dataset=train,
                              eval_dataset=evaluation, processing_class=text)
        trainer.train()
        trainer.save_state()
        if TARGET.exists():
            shutil.rmtree(TARGET)
        shutil.copytree(Path(output) / "completions", TARGET / "completions")
        shutil.copy(Path(output) / "trainer_state.json", TARGET / "trainer_state.json")
    print(f"wrote {len(list((TARGET / 'completions').glob('*.parquet')))} files to {TARGET}")


if __name__ == "__main__":
    main()
