"""Reference solutions, one module per notebook, kept apart from the learners' notebooks.

Each runs through the same check as a learner's answer: ``check("04.save", *solution_of("04.save"))``.
Comments in English and Chinese. 参考答案：每个 notebook 一个模块，与学习者的 notebook 分开存放。
"""
