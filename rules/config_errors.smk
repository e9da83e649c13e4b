# One rule per study whose plan failed (rules/plans.smk): it owns the study's output folder
# and raises the config error, naming the key, for any target there.  Defined only then.

if not PLANS["audit"].ok:

    rule audit_config_error:
        """The audit study's config has an error: any of its targets stops with it."""
        input:
            PLANS["audit"].raise_error,
        output:
            "results/audit/{path}",
        wildcard_constraints:
            path=".+",
        shell:
            "false"


if not PLANS["audit_logs"].ok:

    rule audit_logs_config_error:
        """The audit_logs study's config has an error: any of its targets stops with it."""
        input:
            PLANS["audit_logs"].raise_error,
        output:
            "results/audit_logs/{path}",
        wildcard_constraints:
            path=".+",
        shell:
            "false"


if not PLANS["strategies"].ok:

    rule strategies_config_error:
        """The strategies study's config has an error: any of its targets stops with it."""
        input:
            PLANS["strategies"].raise_error,
        output:
            "results/strategies/{path}",
        wildcard_constraints:
            path=".+",
        shell:
            "false"


if not PLANS["scoring"].ok:

    rule scoring_config_error:
        """The scoring study's config has an error: any of its targets stops with it."""
        input:
            PLANS["scoring"].raise_error,
        output:
            "results/scoring/{path}",
        wildcard_constraints:
            path=".+",
        shell:
            "false"


if not PLANS["topk"].ok:

    rule topk_config_error:
        """The topk study's config has an error: any of its targets stops with it."""
        input:
            PLANS["topk"].raise_error,
        output:
            "results/topk/{path}",
        wildcard_constraints:
            path=".+",
        shell:
            "false"


if not PLANS["uda"].ok:

    rule uda_config_error:
        """The uda study's config has an error: any of its targets stops with it."""
        input:
            PLANS["uda"].raise_error,
        output:
            "results/uda/{path}",
        wildcard_constraints:
            path=".+",
        shell:
            "false"


if not PLANS["rbd"].ok:

    rule rbd_config_error:
        """The rbd study's config has an error: any of its targets stops with it."""
        input:
            PLANS["rbd"].raise_error,
        output:
            "results/rbd/{path}",
        wildcard_constraints:
            path=".+",
        shell:
            "false"
