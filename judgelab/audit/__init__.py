"""Study `audit`: every configured judge on public pair sets in both orders (rules/audit.smk;
the statistics live in judgelab.stats.agreement)."""
