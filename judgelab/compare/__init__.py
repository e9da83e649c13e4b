"""``judgelab compare``: two judges, or two versions of one, on the same items.

:mod:`judgelab.compare.paired` matches the verdicts and computes the paired differences of every
card row; :mod:`judgelab.compare.report` writes them as one set; :mod:`judgelab.compare.command`
is the command line.
"""
