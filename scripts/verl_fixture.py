"""Make the verl test fixture: rollout JSONL files written by verl's own dump code, from a simulated run.

verl does not install here (it needs Ray and a GPU inference engine), so no real verl run
made these files. What makes them is a copy of the code that writes them,
``RayPPOTrainer._dump_generations`` of verl 0.8.0.dev (commit b178a3c, the version the reader
follows): one file ``<global_step>.jsonl`` per step, the columns ``input``, ``output``, ``gts``,
``score``, ``step`` and the reward function's extra keys, ``json.dumps(entry, ensure_ascii=False)``
per row, joined by newlines with one at the end. The rows it dumps come from a seeded
simulation (paper section 2.1's picture in miniature): twelve prompts, four completions each
per visit, six prompts per step (prompts 0 to 2 at every odd step) and their rows shuffled as verl's batch balancing reorders them;
prompts 0 to 2 are solved at rate 0.45 until step 8 and never after, the others' rates creep up.
It writes ``tests/fixtures/diagnose/verl``, which ``tests/test_diagnose.py`` reads. Run it as
``.venv/bin/python scripts/verl_fixture.py``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

TARGET = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "diagnose" / "verl"
PROMPTS, GROUP, PER_STEP, STEPS, LOST_FROM = 12, 4, 6, 18, 8


def dump_generations(global_steps: int, inputs, outputs, gts, scores, reward_extra_infos_dict, dump_path) -> None:
    """verl's ``_dump_generations`` (0.8.0.dev), with ``self.global_steps`` passed in and no print."""
    os.makedirs(dump_path, exist_ok=True)
    filename = os.path.join(dump_path, f"{global_steps}.jsonl")

    n = len(inputs)
    base_data = {
        "input": inputs,
        "output": outputs,
        "gts": gts,
        "score": scores,
        "step": [global_steps] * n,
    }

    for k, v in reward_extra_infos_dict.items():
        if len(v) == n:
            base_data[k] = v

    lines = []
    for i in range(n):
        entry = {k: v[i] for k, v in base_data.items()}
        lines.append(json.dumps(entry, ensure_ascii=False))

    with open(filename, "w") as f:
        f.write("\n".join(lines) + "\n")


def solve_rate(prompt: int, step: int, base: np.ndarray) -> float:
    """The simulated policy's chance of solving ``prompt`` at ``step``."""
    if prompt < 3:
        return 0.45 if step < LOST_FROM else 0.0
    return min(1.0, base[prompt] * (1 + step / STEPS))


def main() -> None:
    rng = np.random.default_rng(0)
    base = rng.uniform(0.2, 0.6, PROMPTS)
    if TARGET.exists():
        shutil.rmtree(TARGET)
    for step in range(1, STEPS + 1):
        others = rng.choice(np.arange(3, PROMPTS), PER_STEP - 3 if step % 2 else PER_STEP, replace=False)
        chosen = np.concatenate([[0, 1, 2], others]) if step % 2 else others
        rows = [(int(p), bool(rng.random() < solve_rate(int(p), step, base))) for p in chosen for _ in range(GROUP)]
        order = rng.permutation(len(rows))
        rows = [rows[i] for i in order]
        answers = [str(p + 3) for p, _ in rows]
        dump_generations(
            step,
            inputs=[f"user: what is {p} + 3? assistant:" for p, _ in rows],
            outputs=[f" {p + 3}" if solved else f" {p + 4}" for p, solved in rows],
            gts=answers,
            scores=[1.0 if solved else 0.0 for _, solved in rows],
            reward_extra_infos_dict={"acc": [solved for _, solved in rows]},
            dump_path=str(TARGET),
        )
    print(f"wrote {STEPS} files to {TARGET}")


if __name__ == "__main__":
    main()
