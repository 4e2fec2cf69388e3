"""What the notebooks show: widgets, plots, tables, the translations of the Chinese edition, the
drills and the scaling lab. Built on the core and :mod:`course_lib.beyond`; no training code lives here.

Importing it in a notebook of the Chinese edition shows the ranks' log lines in Chinese
(:func:`course_lib.lab.i18n.show_ranks_in`; the language is found, not passed).
"""
from course_lib.lab.i18n import show_ranks_in

show_ranks_in()
