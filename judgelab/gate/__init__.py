"""Gates for CI: ``--fail-on RULE`` on ``judgelab audit`` and ``judgelab leaderboard``.

The grammar and its evaluation live in :mod:`judgelab.gate.rules`.
"""
