"""The ops: each primitive's forward beside its backward rule (see README.md here)."""
