"""Reference solutions, one module per notebook, kept apart from the learners' notebooks.

Each runs through the same check as a learner's answer: ``check("04.save", *solution_of("04.save"))``.
Comments in English and Chinese. 参考答案：每个笔记本一个模块，与学习者的笔记本分开存放。
"""
