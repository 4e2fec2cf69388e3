"""The Chinese edition's words: one dict, :data:`LABELS`, English text or template -> Chinese, which
:mod:`course_lib.lab.i18n` looks up (``tr`` for text the code holds, ``tr_line`` for a line already
rendered). Keyed by the English because the code writes English and the two editions share their
code; a missing entry shows the English, and ``tests/test_i18n.py`` finds it first.

About 1,500 entries would make one file unreadable, so the dict is merged from a module of data per
area, each a dict ``ZH``: :mod:`.views` (widgets, figures), :mod:`.tables`, :mod:`.lines` (the core's
log lines, the templates ``tr_line`` matches), :mod:`.audit` (the audit's findings, verdicts and
faults), :mod:`.exercises` (the checks' messages), :mod:`.hints` (the exercises' titles and hints),
:mod:`.quiz` and :mod:`.textbook`. A key is written once in all of them, and its Chinese keeps its
placeholders (the tests). An English word that means two things in two places is keyed
``"context|word"`` and looked up with ``tr(word, lang, context=...)``, as gettext's message context:
the row names of the textbook's deviations (``"deviation|model"`` is 模型, a table's ``"model"`` the
model's verdict, 模型的判断).
"""
from course_lib.lab.zh import audit, exercises, hints, lines, quiz, tables, textbook, views

PARTS = (views, tables, lines, audit, exercises, hints, quiz, textbook)
LABELS: dict[str, str] = {english: chinese for part in PARTS for english, chinese in part.ZH.items()}
LINES = tuple(lines.ZH)  # the templates of the lines the core renders (i18n.tr_line)
