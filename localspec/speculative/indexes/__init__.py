"""Indexes the sources search: the context as text (`text.py`), common prefixes (`prefix.py`), suffix arrays of
earlier generations (`suffixes.py`), spans of earlier requests (`memory.py`), and where a copy resumes after an
edit (`resume.py`)."""
