"""What the notebooks show: widgets, plots, tables, the translations of the Chinese edition, the
drills and the scaling lab, the chapter map. Built on the core and :mod:`course_lib.beyond`; no
training code lives here.
"""
