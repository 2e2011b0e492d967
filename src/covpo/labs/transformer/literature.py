"""Published studies of what RL post-training does to pass@k and diversity, side by side with chapter 7.

Each row says what the study measured, at what scale, what it reported (in our words; a number
only where its abstract or project page states it) and how chapter 7's laboratory relates to it.
The rows are citations of public papers, not measurements of ours.
"""

from __future__ import annotations

from covpo.table import Table

STUDIES = (
    ("Yue et al. 2025 (yue2025limit)",
     "pass@k up to k = 256 of RLVR-trained models against their base models; several model families, "
     "math, code and visual reasoning; six RLVR algorithms",
     "RL-trained models win at small k, the base models at large k; the six algorithms perform similarly",
     "the same crossing on held-out hard prompts, with coverage known exactly"),
    ("Liu et al. 2025, ProRL (liu2025prorl)",
     "prolonged GRPO-style training of a 1.5B-parameter model with a KL penalty and periodic resets of the "
     "reference, on a broad set of verifiable tasks",
     "RL-trained models beat the base model across pass@k, also where the base model fails at every k",
     "periodic resets at TRL's settings (weak $\\beta$) behave like the fixed reference here; we do not run long"),
    ("Song, Kempe and Munos 2025 (song2025outcome)",
     "diversity of RL-trained models on competition math, on training and test problems",
     "diversity falls even on the training set, and the loss on solved problems carries over to unsolved ones",
     "training-prompt coverage is lost here too; whether through transfer, the book's seeds cannot tell"),
    ("Zhao et al. 2025, Echo Chamber (zhao2025echo)",
     "models trained from scratch on controlled mixtures of open math datasets, then post-trained with PPO, "
     "GRPO or expert iteration, at several scales",
     "RL converges to one dominant output distribution from the pre-training mixture; training on easier "
     "questions helps on harder ones",
     "our base models are also pre-trained from scratch on a mixture we choose; lost hard prompts go to its dominant answer"),
)
"""The rows of :func:`literature_table`: study, what was measured, what it found, how this chapter relates."""


def literature_table() -> Table:
    """The studies of :data:`STUDIES` as a table."""
    return Table(("study", "what it measured", "what it reported", "this chapter"), STUDIES,
                 caption="Published measurements of RL post-training and coverage, in our words",
                 notes=("numbers only where the study's abstract or project page states them",))
