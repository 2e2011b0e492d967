"""The book's experiments, one module or subpackage per chapter, over :mod:`covpo.algorithms`.

Shared machinery (instance families, sweeps, parallel execution) sits beside the chapter
modules; no chapter's module imports another chapter's.
"""
