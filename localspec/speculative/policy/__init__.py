"""The hybrid's policy: which candidate to draft and how far (`hybrid.py`), what each source's tokens are believed
to be worth (`rates.py`), when a source's lookups cost more than they save (`gate.py`) and what a draft-model token
costs (`model_price.py`)."""
