"""Published studies of what RL post-training does to pass@k and diversity, side by side with chapter 7.

Each row says what the study measured, at what scale, what it reported (in our words; a number
only where its abstract or project page states it) and how chapter 7's laboratory relates to it.
The rows are citations of public papers, not measurements of ours; each names, in parentheses,
the ``references.bib`` entry it cites (with the paper's arXiv link).
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
     "prolonged GRPO-style training of a 1.5B-parameter model with a KL penalty, on a broad set of verifiable "
     "tasks; the reference is periodically hard-reset to a recent copy of the policy, and the optimizer state "
     "is re-initialised at each reset",
     "pass@k against the base model differs by task: the gains diminish on some, plateau on others and keep "
     "improving with training on others, including tasks the base model fails at every k; the gains track "
     "the base model's weakness on the task and the training length",
     "a ProRL-style arm (strong $\\beta$, the reference hard-reset and the optimizer re-initialised at fixed "
     "intervals) is compared with the fixed references and APMD in this chapter's frontier study"),
    ("Wu et al. 2025, The Invisible Leash (wu2025invisible)",
     "the empirical support of RLVR-trained models against their base models: which correct answers each "
     "reaches as the sampling budget grows, and entropy per token and per answer",
     "pass@1 improves, while at large budgets more correct answers drop out of reach than come into it, and "
     "answers the base model could sample are not recovered; entropy per answer falls even where entropy per "
     "token rises",
     "our models give every answer some mass, so support never shrinks exactly: the coverage of the correct "
     "answer does, known exactly here and compared across arms in this chapter's frontier study"),
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
