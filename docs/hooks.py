"""MkDocs hook: the docstrings name other objects with Sphinx roles (:func:`name`,
:class:`~package.Name`), which Markdown does not know; the Python API page shows the name
as code without the role (and, for ``~``, as its last part, as Sphinx does)."""

import re

ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj):<code>(~?)([^<]*)</code>")


def _name(match: re.Match) -> str:
    name = match[2].rsplit(".", 1)[-1] if match[1] else match[2]
    return f"<code>{name}</code>"


def on_page_content(html, **kwargs):
    return ROLE.sub(_name, html)
