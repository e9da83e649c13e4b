"""Study `orders`: every configured judge on public pair sets in both orders (rules/orders.smk;
the statistics live in judgelab.stats.agreement)."""
