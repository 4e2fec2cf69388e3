"""The audit: the kit's guarantee (a resumed run is bit-identical to one never interrupted)
applied to any training script, by real faults, without editing or importing it.

    resume-audit [options] -- python train.py --out {run}

* :mod:`.probe`: the observer inside every process of the audited run (torch's global
  optimizer-step hooks, started by ``sitecustomize`` on the run's ``PYTHONPATH``);
* :mod:`.attempt`: one run of the command, watched, and every process of it ended afterwards;
* :mod:`.plan`: which faults, where (a seed);
* :mod:`.judge` and :mod:`.verdict`: runs compared by content, the facts named;
* :mod:`.findings`: what each finding says and its fix; :mod:`.report`: table, JSON, exit code;
* :mod:`.auditor`: :func:`audit`, the whole of it; :mod:`.classroom`: a folder of scripts.
"""
from resume_audit.auditor import AuditError, audit
from resume_audit.report import Report

__all__ = ["audit", "AuditError", "Report"]
