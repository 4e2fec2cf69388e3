"""``python -m resume_audit [options] -- COMMAND ...``: the same as the ``resume-audit`` command."""
import sys

from resume_audit.cli import main

sys.exit(main())
