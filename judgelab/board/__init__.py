"""Leaderboards from recorded judge logs: raw win rates and three corrections for the judge's
style biases (AlpacaEval's length control, Arena-Hard's style control, paper 002's bias-aware
Bradley-Terry), each with an interval, the rank flips they cause and, with several judges, the
leave-one-judge-out stability of the order.  ``judgelab leaderboard`` (:mod:`.command`)."""
