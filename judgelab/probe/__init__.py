"""``judgelab probe``: a probe set from the user's own items (build), run through a judge and audited (command)."""
