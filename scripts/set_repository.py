"""Point the book's launch and repository buttons at a GitHub repository: ``_config.yml``'s ``repository:``.

    python scripts/set_repository.py OWNER/NAME [BRANCH] [--config PATH]

The publishing workflow (``.github/workflows/publish.yml``) runs it with the repository it
runs in, so the Binder, Thebe and repository buttons of a fork's published book open that
fork. It rewrites the ``url:`` and ``branch:`` lines under ``repository:`` in place, keeping
every comment, and prints where GitHub Pages publishes the book.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

REPOSITORY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+$")


def pages_url(repository: str) -> str:
    """Where GitHub Pages serves a project's site: ``https://OWNER.github.io/NAME/`` (the root for ``OWNER.github.io``)."""
    owner, name = repository.split("/")
    if name.lower() == f"{owner.lower()}.github.io":
        return f"https://{owner.lower()}.github.io/"
    return f"https://{owner.lower()}.github.io/{name}/"


def set_repository(config: str, repository: str, branch: str = "main") -> str:
    """``config`` (the text of ``_config.yml``) with its ``repository:`` block naming ``repository`` and ``branch``."""
    if not REPOSITORY_NAME.match(repository):
        raise ValueError(f"repository must read OWNER/NAME, got {repository!r}")
    if not branch or any(character.isspace() for character in branch):
        raise ValueError(f"branch must be a branch name, got {branch!r}")
    block = re.search(r"^repository:\n((?:[ \t]+.*\n|[ \t]*#.*\n)+)", config, flags=re.M)
    if block is None:
        raise ValueError("the configuration has no repository: block")
    body = block.group(1)
    body, urls = re.subn(r"^([ \t]+url:)[ \t]*\S+", rf"\g<1> https://github.com/{repository}", body, flags=re.M)
    body, branches = re.subn(r"^([ \t]+branch:)[ \t]*\S+", rf"\g<1> {branch}", body, flags=re.M)
    if urls != 1 or branches != 1:
        raise ValueError("the repository: block must have one url: line and one branch: line")
    return config[: block.start(1)] + body + config[block.end(1):]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repository", help="OWNER/NAME")
    parser.add_argument("branch", nargs="?", default="main")
    parser.add_argument("--config", type=Path, default=Path(__file__).resolve().parent.parent / "_config.yml")
    arguments = parser.parse_args()
    arguments.config.write_text(set_repository(arguments.config.read_text(), arguments.repository, arguments.branch))
    print(f"{arguments.config}: repository https://github.com/{arguments.repository}, branch {arguments.branch}")
    print(f"the book will be published at {pages_url(arguments.repository)}")


if __name__ == "__main__":
    main()
