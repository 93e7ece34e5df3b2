"""Property-based fuzzing of the bundled servers through real stdio (``make fuzz``; see conftest.py)."""
