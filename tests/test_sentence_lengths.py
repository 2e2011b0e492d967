"""The reading measure of ``scripts/sentence_lengths.py``: what it counts as prose and as a sentence."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import REPOSITORY

SPEC = importlib.util.spec_from_file_location("sentence_lengths", REPOSITORY / "scripts" / "sentence_lengths.py")
sentence_lengths = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(sentence_lengths)

CHAPTER = """---
kernelspec:
  name: python3
---

# A title that is not a sentence

```{admonition} What this chapter finds
:class: tip

The reward rises by {glue:text}`gain:.2f` while coverage falls. It falls $10^{-3}$ times lower.
```

```{code-cell} ipython3
x = "Code is not prose. Nor is this."
```

```{glue:figure} fig
:name: fig-one

A caption is not prose either.
```

$$
\\pi_t(y) = 1.
$$

- A bullet of five words.
- Two words.

| a | table row |
"""


@pytest.mark.same_on_every_cpu
def test_prose_keeps_boxes_and_drops_code_figures_math_and_tables():
    assert sentence_lengths.sentence_lengths(CHAPTER) == [8, 5, 5]


@pytest.mark.same_on_every_cpu
def test_every_chapter_of_the_book_has_prose_to_measure():
    pages = sentence_lengths.chapters()
    assert pages and all(page.exists() for page in pages)
    assert not any("/api/" in page.as_posix() for page in pages)
    assert all(sentence_lengths.sentence_lengths(page.read_text()) for page in pages)
