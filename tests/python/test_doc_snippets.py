"""The code in the docs runs as written: the snippets of a page run in order as one script (a
later snippet may use what an earlier one defined) and check their own results."""

from __future__ import annotations

import pathlib
import re

import pytest

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"

# page -> how many of its leading ```python blocks form one runnable script
PAGES = {"tile-level.md": 3}


@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_snippets_of_a_page_run(page):
    text = (DOCS / page).read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)[:PAGES[page]]
    assert len(blocks) == PAGES[page], f"{page} has {len(blocks)} python blocks"
    code = compile("\n".join(blocks), str(DOCS / page), "exec", dont_inherit=True)  # not this file's __future__
    exec(code, {"__name__": "doc_snippet"})  # noqa: S102
