"""Imported by every Python interpreter an audited run starts: this folder is first on the run's
``PYTHONPATH`` (:mod:`resume_audit.attempt`). It starts the observer, then runs the
``sitecustomize`` it hides, if there is one further along ``sys.path``."""
import importlib.machinery
import importlib.util
import os
import sys

import resume_audit_probe  # for ENV; stdlib only: importing it starts nothing, install() does

_HERE = os.path.dirname(os.path.abspath(__file__))
if os.environ.get(resume_audit_probe.ENV):
    import resume_audit_install

    resume_audit_install.install()

_rest = [p for p in sys.path if os.path.abspath(p or os.getcwd()) != _HERE]
_spec = importlib.machinery.PathFinder.find_spec("sitecustomize", _rest)
if _spec is not None and _spec.loader is not None:
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
