"""The folder the audit puts first on an audited run's ``PYTHONPATH``: ``sitecustomize`` starts
the observer :mod:`resume_audit_probe` in every interpreter of the run, which digests the
state with :mod:`resume_audit_digests`. The three import nothing from the kit (they run
inside the user's processes, under the user's Python)."""
