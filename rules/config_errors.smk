# One rule per study whose plan failed (rules/plans.smk), `<study>_config_error`: it owns the
# study's output folder and raises the config error, naming the key, for any target there.
# Defined only then.

for _study, _plan in PLANS.items():
    if not _plan.ok:

        rule:
            """The study's config has an error: any of its targets stops with it."""
            name:
                f"{_study}_config_error"
            input:
                _plan.raise_error,
            output:
                f"results/{_study}/{{path}}",
            wildcard_constraints:
                path=".+",
            shell:
                "false"
