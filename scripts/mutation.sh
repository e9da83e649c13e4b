#!/usr/bin/env bash
# Mutation testing of judgelab's estimator modules (issue 13): does a deliberately broken copy of the code
# fail the tests? Uses mutmut 3 (the `dev` extra). On demand only; never part of .ci/run.
#
# Usage (from the repository root, or anywhere):
#   scripts/mutation.sh                                  # every listed estimator module, one after the other
#   scripts/mutation.sh judgelab/topk/gate.py            # one module (tests from the map below)
#   scripts/mutation.sh judgelab/stats/                  # every .py of a package (except __init__.py)
#   scripts/mutation.sh --tests "tests/test_a.py tests/test_b.py" judgelab/x.py   # override the test files
#   scripts/mutation.sh --survivors judgelab/parsing.py  # also print the diff of every surviving mutant
#   scripts/mutation.sh --list                           # print the module -> tests map and exit
#   scripts/mutation.sh --again judgelab/parsing.py      # re-test only last run's survivors (after adding tests)
#
# What it does, per module: copies the working tree (no .venv/.git/results) to its own workspace
# $MUTATION_DIR/<module> (default /tmp/judgelab-mutation-$USER), so mutants never touch the shared tree
# and two modules (or two people) never collide; writes a [tool.mutmut] section that mutates only
# that module and runs only its mapped test files (not marked `slow`: subprocess pipelines import the
# unmutated package and cannot kill anything); runs `mutmut run`; prints the share killed.
# Killed share = (killed + timeout + segfault) / (all mutants - skipped). "no tests" mutants count as survivors.
# Equivalent mutants (same behaviour as the original, so no test can kill them) are listed by name,
# with a reason, in tests/mutation_equivalent.md; a listed survivor is reported as `equivalent` and
# the second share leaves it out of the denominator. The target (issue 13) is >= 85% per module.
# Inspect one survivor: cd $MUTATION_DIR/<module> && .venv/bin/mutmut show <name> (or --survivors).
# Each run starts fresh (all mutants), except --again, which re-tests only the survivors of the module's
# last run and the mutants not checked yet (those of functions edited since; fast loop while writing
# tests; killed mutants stay killed, so do a full run at the end).
#
# Environment:
#   MUTATION_DIR   workspace root (default /tmp/judgelab-mutation-$USER)
#   MUTATION_JOBS  parallel mutant workers (default 1: the machine is shared; raise it on your own box)
#   PYTHON         interpreter of the venv with mutmut (default .venv/bin/python of this repo)
#   JUDGELAB_DATA  public data root for the tests that read it (default ../shared/data)
# Prefix with `nice -n 15` on a shared machine.
#
# Output: one line per module, `MUTATION <module> killed=K/T (P%) equivalent=E killed_of_non_equivalent=Q%
# survived=S no_tests=N timeout=O`, and a final table, also in $MUTATION_DIR/summary.tsv.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$REPO/.venv/bin/python}"
MUTMUT="$(dirname "$PYTHON")/mutmut"
MUTATION_DIR="${MUTATION_DIR:-/tmp/judgelab-mutation-$(id -un)}"
MUTATION_JOBS="${MUTATION_JOBS:-1}"
export JUDGELAB_DATA="${JUDGELAB_DATA:-$(cd "$REPO/.." && pwd)/shared/data}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 JUDGELAB_PROGRESS=0
# one BLAS/OpenMP thread per mutant worker: on a shared, loaded machine threaded BLAS spins against the other
# jobs (measured: one leaderboard of the table tests 0.70 s with default threads, 0.15 s with one)
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}"

# module -> the test files that exercise it (space separated, globs allowed, relative to the repo root).
# Keep it to the fast unit tests of the module: every mutant runs the tests (of these files) that reach
# the mutated function, and a surviving mutant runs all of them, so one slow pipeline test in the map
# makes a run take hours. A short map gives a lower bound on the killed share (slower tests elsewhere
# may kill more). Add your new test file here when you write one.
# the bias card's fast tests, shared by card.py and the modules split from it (its row builders, metrics,
# settings, log preparation)
CARD_TESTS="tests/bias_card/test_card_units.py tests/bias_card/test_degenerate.py::test_a_failing_statistic_leaves_a_row_that_says_why tests/bias_card/test_degenerate.py::test_a_logit_se_above_the_cap_is_not_estimable tests/bias_card/test_degenerate.py::test_a_share_at_one_keeps_a_nonzero_interval tests/bias_card/test_degenerate.py::test_alpha_and_power_come_from_the_settings tests/bias_card/test_degenerate.py::test_binomial_mde_has_the_stated_power tests/bias_card/test_degenerate.py::test_binomial_tests_use_the_effective_n tests/bias_card/test_degenerate.py::test_each_degenerate_judge_gets_the_status_its_data_support tests/bias_card/test_degenerate.py::test_logit_standard_errors_are_clustered tests/bias_card/test_degenerate.py::test_min_decisive_is_inclusive_and_the_first_row_of_a_pair_counts tests/bias_card/test_degenerate.py::test_no_degenerate_judge_breaks_the_card_or_is_detected_without_evidence tests/bias_card/test_degenerate.py::test_not_identified_metrics_never_reach_the_headline tests/bias_card/test_degenerate.py::test_one_item_has_a_design_effect_of_one tests/bias_card/test_degenerate.py::test_order_gap_is_tested_on_items_like_its_ci tests/bias_card/test_degenerate.py::test_responses_equal_in_length_leave_the_length_rows_without_data tests/bias_card/test_degenerate.py::test_self_preference_without_a_quality_control_is_never_a_detection tests/bias_card/test_degenerate.py::test_smollm2_always_first_shown_is_not_estimable_for_the_logit_and_never_crashes tests/bias_card/test_degenerate.py::test_smollm2_mostly_unparsed_leads_with_parse_failures tests/bias_card/test_degenerate.py::test_underpowered_only_when_the_mde_exceeds_the_threshold tests/bias_card/test_multiplicity.py::test_a_corrected_rows_mde_is_at_the_familys_bonferroni_level tests/bias_card/test_multiplicity.py::test_a_row_significant_only_before_correction_is_not_detected tests/bias_card/test_multiplicity.py::test_adjusted_p_values_equal_statsmodels tests/bias_card/test_multiplicity.py::test_cohen_h_has_the_stated_power_exactly tests/bias_card/test_multiplicity.py::test_cohen_h_solves_statsmodels_power_equation tests/bias_card/test_multiplicity.py::test_the_family_is_the_tested_rows_and_is_named_in_the_card tests/bias_card/test_multiplicity.py::test_the_multiplicity_setting_reaches_the_cli tests/bias_card/test_views.py tests/bias_card/test_mutation.py tests/bias_card/test_gold_shares.py::test_excess_over_gold_by_hand tests/bias_card/test_gold_shares.py::test_llmbar_llama2_length_row_is_the_excess_over_gold tests/bias_card/test_bias_card.py::test_card_columns_and_underpowered_flag tests/bias_card/test_bias_card.py::test_llmbar_cards_equal_the_authors_statistics tests/bias_card/test_bias_card.py::test_planted_biases_are_detected_and_the_control_is_not tests/bias_card/test_bias_card.py::test_single_order_log_warns_that_position_is_confounded tests/bias_card/test_identification.py tests/bias_card/test_unguarded.py::test_binomial_successes_are_rounded_not_floored tests/bias_card/test_unguarded.py::test_position_note_says_only_what_the_log_has tests/bias_card/test_unguarded.py::test_strict_between_judge_kappa_leaves_fallback_verdicts_out tests/bias_card/test_ppi_small.py::test_an_interval_that_would_leave_0_1_is_clipped_with_a_note tests/bias_card/test_ppi_small.py::test_ppi_rows_carry_the_labels_per_side_and_the_notes tests/bias_card/test_ppi_small.py::test_ppi_with_ten_labels_stays_in_bounds tests/bias_card/test_ppi_small.py::test_too_few_labels_on_one_side_make_the_ppi_rows_underpowered"
declare -A TESTS=(
  [judgelab/parsing.py]="tests/test_parsing.py"
  [judgelab/cache/__init__.py]="tests/cache/test_contract.py"
  [judgelab/stats/agreement.py]="tests/stats/test_agreement.py tests/datasets/test_real_files.py tests/orders/test_order_summary.py"
  [judgelab/stats/bias.py]="tests/stats/test_bias.py tests/strategies/test_stats.py"
  [judgelab/stats/mcnemar.py]="tests/stats/test_mcnemar.py tests/strategies/test_stats.py"
  [judgelab/stats/intervals.py]="tests/stats/test_intervals.py"
  [judgelab/stats/clustered.py]="tests/bias_card/test_card_units.py tests/bias_card/test_mutation.py tests/bias_card/test_multiplicity.py tests/bias_card/test_unguarded.py tests/bias_card/test_degenerate.py"
  [judgelab/stats/multiplicity.py]="tests/bias_card/test_card_units.py tests/bias_card/test_mutation.py tests/bias_card/test_multiplicity.py tests/bias_card/test_unguarded.py tests/bias_card/test_degenerate.py"
  [judgelab/stats/gold_excess.py]="tests/bias_card/test_card_units.py tests/bias_card/test_mutation.py tests/bias_card/test_multiplicity.py tests/bias_card/test_unguarded.py tests/bias_card/test_degenerate.py"
  [judgelab/stats/sandwich.py]="tests/bias_card/test_card_units.py tests/bias_card/test_mutation.py tests/bias_card/test_multiplicity.py tests/bias_card/test_unguarded.py tests/bias_card/test_degenerate.py"
  [judgelab/stats/mixed.py]="tests/stats/test_mixed.py tests/strategies/test_stats.py"
  [judgelab/ranking/acquisition.py]="tests/topk/test_acquisition_mutation.py tests/topk/test_acquisition.py tests/topk/test_experiment.py tests/topk/test_model.py tests/topk/test_live.py"
  [judgelab/ranking/bias_aware.py]="tests/topk/test_model.py tests/topk/test_acquisition.py tests/ranking/test_bradley_terry.py"
  [judgelab/ranking/bradley_terry.py]="tests/ranking/test_bradley_terry.py tests/topk/test_model.py"
  [judgelab/uda/elo.py]="tests/uda/test_core.py tests/uda/test_metrics.py"
  [judgelab/uda/autograd.py]="tests/uda/test_core.py"
  [judgelab/uda/adapter.py]="tests/uda/test_core.py"
  [judgelab/uda/features.py]="tests/uda/test_core.py"
  [judgelab/uda/training.py]="tests/uda/test_training.py"
  [judgelab/uda/metrics.py]="tests/uda/test_metrics.py tests/uda/test_core.py"
  [judgelab/scoring/metrics.py]="tests/scoring/test_metrics.py tests/scoring/test_metrics_judges.py tests/scoring/test_metrics_edges.py"
  [judgelab/rbd/metrics.py]="tests/rbd/test_metrics_formulas.py tests/rbd/test_metrics.py"
  [judgelab/rbd/supervision.py]="tests/rbd/test_supervision_traces.py tests/rbd/test_checks.py"
  [judgelab/rbd/detector.py]="tests/rbd/test_detector_cases.py tests/rbd/test_checks.py tests/rbd/test_log_audit.py"
  [judgelab/rbd/loop.py]="tests/rbd/test_loop_units.py tests/rbd/test_loop.py tests/rbd/test_metrics.py tests/rbd/test_reasoning.py"
  [judgelab/strategies/aggregate.py]="tests/strategies/test_mutation_aggregate.py tests/strategies/test_run.py tests/strategies/test_family.py"
  [judgelab/strategies/analysis.py]="tests/strategies/test_mutation_analysis.py tests/strategies/test_stats.py tests/strategies/test_family.py tests/strategies/test_run.py"
  [judgelab/topk/experiment.py]="tests/topk/test_experiment_mutation.py tests/topk/test_experiment.py tests/topk/test_model.py tests/topk/test_acquisition.py tests/topk/test_study.py"
  [judgelab/topk/gate.py]="tests/topk/test_study.py tests/topk/test_model.py"
  [judgelab/topk/live.py]="tests/topk/test_live_mutation.py tests/topk/test_live.py"
  [judgelab/topk/userpool.py]="tests/topk/test_userpool.py tests/topk/test_live_mutation.py"
  [judgelab/board/length_check.py]="tests/board/test_length_check.py"
  [judgelab/workflow/roles.py]="tests/workflow/test_roles_per_target.py tests/workflow/test_no_silent_simulation.py"
  [judgelab/bias_card/card.py]="$CARD_TESTS"
  [judgelab/bias_card/prepare.py]="$CARD_TESTS"
  [judgelab/bias_card/metrics.py]="$CARD_TESTS"
  [judgelab/bias_card/card_settings.py]="$CARD_TESTS"
  [judgelab/bias_card/rows_share.py]="$CARD_TESTS"
  [judgelab/bias_card/rows_cue.py]="$CARD_TESTS"
  [judgelab/bias_card/rows_logit.py]="$CARD_TESTS"
  [judgelab/bias_card/rows_benchmark.py]="$CARD_TESTS"
  [judgelab/bias_card/rows_human.py]="$CARD_TESTS"
  [judgelab/bias_card/report.py]="tests/bias_card/test_report.py"
  [judgelab/verdict_import/importer.py]="tests/verdict_import/test_mutation.py tests/verdict_import/test_formats.py tests/verdict_import/test_verdict_import.py tests/verdict_import/test_stream.py"
  [judgelab/bias_card/humans.py]="tests/bias_card/test_humans.py"
  [judgelab/bias_card/reliability.py]="tests/bias_card/test_humans.py"
  [judgelab/bias_card/mtbench_humans.py]="tests/bias_card/test_humans.py"
  [judgelab/verdict_import/mapping.py]="tests/verdict_import/test_mutation.py tests/verdict_import/test_formats.py tests/verdict_import/test_verdict_import.py"
  [judgelab/verdict_import/presets.py]="tests/verdict_import/test_mutation.py tests/verdict_import/test_formats.py tests/verdict_import/test_verdict_import.py tests/verdict_import/test_arena_hard_v2.py"
  [judgelab/verdict_import/readers.py]="tests/verdict_import/test_formats.py tests/verdict_import/test_verdict_import.py tests/verdict_import/test_readers.py"
  [judgelab/board/winrate.py]="tests/board/test_units.py"
  [judgelab/board/length_controlled.py]="tests/board/test_units.py"
  [judgelab/board/style_control.py]="tests/board/test_units.py"
  [judgelab/board/bias_aware.py]="tests/board/test_units.py"
  [judgelab/board/battles.py]="tests/board/test_battles.py tests/board/test_units.py"
  [judgelab/board/table.py]="tests/board/test_table.py tests/board/test_units.py"
  [judgelab/board/html.py]="tests/board/test_outputs.py"
  [judgelab/board/figure.py]="tests/board/test_outputs.py"
  [judgelab/board/command.py]="tests/board/test_outputs.py"
  [judgelab/probe/build.py]="tests/probe/test_build_units.py tests/probe/test_build.py"
  [judgelab/probe/effects.py]="tests/probe/test_effects_units.py tests/probe/test_build.py"
  [judgelab/probe/command.py]="tests/probe/test_command_units.py"
  [judgelab/board/separation.py]="tests/board/test_separation_units.py tests/strategies/test_separation.py tests/board/test_not_estimable.py"
  [judgelab/topk/flips.py]="tests/topk/test_flip_rate.py"
  [judgelab/scoring/human.py]="tests/scoring/test_human_sets.py"
  [judgelab/scoring/human_files.py]="tests/scoring/test_human_files.py tests/scoring/test_human_sets.py"
  [judgelab/topk/stats.py]="tests/topk/test_stats.py tests/stats/test_no_p_without_variance.py"
  [judgelab/rbd/tables.py]="tests/rbd/test_tables_units.py tests/rbd/test_tables_planted.py tests/rbd/test_tables_baselines.py tests/rbd/test_tables_reproduction.py tests/rbd/test_tables_config.py"
  [judgelab/reproduction/rbd.py]="tests/reproduction/test_rbd_units.py tests/reproduction/test_rbd.py tests/reproduction/test_extract.py tests/rbd/test_tables_reproduction.py"
  [judgelab/reproduction/scoring.py]="tests/reproduction/test_scoring_units.py tests/reproduction/test_scoring.py tests/reproduction/test_extract.py tests/reproduction/test_papers.py"
  [judgelab/reproduction/topk.py]="tests/reproduction/test_topk_units.py tests/reproduction/test_topk.py tests/reproduction/test_extract.py"
  [judgelab/reproduction/uda.py]="tests/reproduction/test_uda_units.py tests/reproduction/test_uda.py tests/reproduction/test_extract.py"
  [judgelab/reproduction/__init__.py]="tests/reproduction/test_reproduction_units.py tests/reproduction/test_verdicts.py tests/reproduction/test_extract.py tests/reproduction/test_papers.py"
  [judgelab/reproduction/strategies.py]="tests/reproduction/test_strategies_units.py tests/reproduction/test_extract.py tests/reproduction/test_verdicts.py"
  [judgelab/reproduction/_tables.py]="tests/reproduction/test__tables_units.py tests/reproduction/test_extract.py tests/reproduction/test_rbd.py tests/reproduction/test_scoring.py tests/reproduction/test_topk.py tests/reproduction/test_uda.py tests/reproduction/test_verdicts.py"
  [judgelab/bias_card/power.py]="tests/bias_card/test_power_units.py tests/bias_card/test_power.py::test_items_scale_with_the_square_of_mde_over_delta tests/bias_card/test_power.py::test_holm_level_counts_the_rows_the_probe_would_detect_first tests/bias_card/test_power.py::test_a_planted_pilot_from_assumptions_is_marked_simulated tests/bias_card/test_power.py::test_the_command_from_a_log_and_from_assumptions tests/bias_card/test_power.py::test_a_pilot_without_a_tested_row_is_one_line"
  [judgelab/verdict_import/inspect_log.py]="tests/verdict_import/test_inspect_units.py tests/verdict_import/test_tools_presets.py"
  [judgelab/verdict_import/promptfoo_log.py]="tests/verdict_import/test_promptfoo_units.py tests/verdict_import/test_tools_presets.py"
  [judgelab/verdict_import/rewardbench2_log.py]="tests/verdict_import/test_rewardbench2_units.py tests/verdict_import/test_tools_presets.py"
  [judgelab/gate/rules.py]="tests/gate/test_rules_units.py"
  [judgelab/gate/cli.py]="tests/gate/test_rules_units.py"
  [judgelab/compare/paired.py]="tests/compare/test_paired_units.py"
  [judgelab/compare/board.py]="tests/compare/test_board_units.py"
  [judgelab/compare/report.py]="tests/compare/test_report_units.py"
  [judgelab/compare/command.py]="tests/compare/test_command_units.py"
  [judgelab/batch/export.py]="tests/batch/test_export.py tests/batch/test_batch_files.py"
  [judgelab/batch/import_.py]="tests/batch/test_import_.py tests/batch/test_batch_files.py"
)
# The listed estimator modules, in the order of a full run.
DEFAULT_MODULES=(
  judgelab/parsing.py judgelab/cache/__init__.py
  judgelab/stats/agreement.py judgelab/stats/bias.py judgelab/stats/mcnemar.py judgelab/stats/mixed.py
  judgelab/ranking/acquisition.py judgelab/ranking/bias_aware.py judgelab/ranking/bradley_terry.py
  judgelab/uda/elo.py judgelab/uda/autograd.py judgelab/uda/adapter.py judgelab/uda/features.py
  judgelab/uda/training.py judgelab/uda/metrics.py judgelab/scoring/metrics.py
  judgelab/rbd/metrics.py judgelab/rbd/supervision.py judgelab/rbd/detector.py judgelab/rbd/loop.py
  judgelab/strategies/aggregate.py judgelab/strategies/analysis.py
  judgelab/topk/experiment.py judgelab/topk/gate.py
  judgelab/topk/live.py judgelab/topk/userpool.py judgelab/board/length_check.py
  judgelab/workflow/roles.py
  judgelab/verdict_import/importer.py judgelab/verdict_import/mapping.py judgelab/verdict_import/presets.py
  judgelab/verdict_import/readers.py
)

usage() { sed -n '2,36p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

override_tests="" survivors=0 again=0 modules=()
while (($#)); do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --tests) override_tests="$2"; shift 2 ;;
    --survivors) survivors=1; shift ;;
    --again) again=1; shift ;;
    --list) for m in "${DEFAULT_MODULES[@]}"; do echo "$m: ${TESTS[$m]}"; done; exit 0 ;;
    -*) echo "mutation.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) modules+=("$1"); shift ;;
  esac
done
((${#modules[@]})) || modules=("${DEFAULT_MODULES[@]}")

[[ -x "$MUTMUT" ]] || { echo "mutation.sh: $MUTMUT not found; pip install -e '.[dev]' into the venv" >&2; exit 2; }

# expand directories to their modules; make paths relative to the repo
expanded=()
for m in "${modules[@]}"; do
  m="${m#./}"; [[ "$m" = /* ]] && m="$(realpath --relative-to="$REPO" "$m")"
  if [[ -d "$REPO/$m" ]]; then
    while IFS= read -r f; do expanded+=("$f"); done < <(cd "$REPO" && find "${m%/}" -maxdepth 1 -name '*.py' ! -name '__init__.py' | sort)
  elif [[ -f "$REPO/$m" ]]; then expanded+=("$m")
  else echo "mutation.sh: no such module $m" >&2; exit 2
  fi
done

mkdir -p "$MUTATION_DIR"
summary="$(mktemp "$MUTATION_DIR/summary.XXXXXX")"
printf 'module\tkilled\ttotal\tpercent\tequivalent\tpercent_non_equivalent\tsurvived\tno_tests\ttimeout\tskipped\tnot_checked\n' >"$summary"
status=0
for mod in "${expanded[@]}"; do
  tests="${override_tests:-${TESTS[$mod]:-}}"
  if [[ -z "$tests" ]]; then
    echo "mutation.sh: no tests mapped for $mod; add it to TESTS in scripts/mutation.sh or pass --tests" >&2
    status=2; continue
  fi
  slug="${mod//\//_}"; slug="${slug%.py}"
  ws="$MUTATION_DIR/$slug"
  mkdir -p "$ws"
  # the tests find the papers' text beside the checkout (tests.conftest.REPO/../shared/papers); mutmut runs
  # them in $ws/mutants, so the checkout's `shared` must sit in $ws, else those tests skip and kill nothing
  if [[ -d "$REPO/../shared" && ! -e "$ws/shared" ]]; then ln -s "$(cd "$REPO/.." && pwd)/shared" "$ws/shared"; fi
  exec 9>"$ws.lock"
  flock -n 9 || { echo "mutation.sh: $mod is being mutated by another run ($ws.lock)" >&2; status=1; continue; }
  rerun=()
  if ((again)); then
    [[ -s "$ws/mutmut-results.txt" ]] || { echo "mutation.sh: no previous run of $mod to redo" >&2; status=1; continue; }
    while IFS= read -r n; do rerun+=("$n"); done < <(sed -nE 's/^ *([^ ]+): (survived|no tests|not checked)$/\1/p' "$ws/mutmut-results.txt")
    ((${#rerun[@]})) || { echo "mutation.sh: $mod had no survivors"; }
  else
    rm -rf "$ws/mutants"
  fi
  # fresh copy of the sources and tests (keep mutmut's cache in $ws/mutants between runs of one module;
  # mutmut re-mutates the functions whose source changed)
  (cd "$REPO" && tar --exclude=./.venv --exclude=./.git --exclude=./results --exclude=./.snakemake \
      --exclude='*/__pycache__' --exclude=./mutants --exclude='./*.egg-info' -cf - .) | (cd "$ws" && tar -xf -)
  # tests as a TOML list (globs expanded in the repo; a pattern matching nothing is dropped)
  tlist="" ; for t in $(cd "$REPO" && shopt -s nullglob && for g in $tests; do printf '%s\n' $g; done); do
    tlist+="\"$t\", "; done
  [[ -n "$tlist" ]] || { echo "mutation.sh: no test file of '$tests' exists" >&2; status=2; continue; }
  cat >>"$ws/pyproject.toml" <<EOF

[tool.mutmut]
source_paths = ["judgelab"]
only_mutate = ["$mod"]
pytest_add_cli_args_test_selection = [${tlist%, }]
pytest_add_cli_args = ["-p", "no:cacheprovider", "-m", "not slow", "-q", "-o", "addopts="]
also_copy = ["config", "rules", "workflow_scripts", "data", "report", "Snakefile", "envs", "profiles", "scripts", "benchmarks", "docs"]
use_git_change_detection = false
EOF
  echo "=== mutation: $mod  (tests: $tests)  workspace: $ws"
  log="$ws/mutmut-run.log"
  if ! (cd "$ws" && "$MUTMUT" run --max-children "$MUTATION_JOBS" "${rerun[@]}" >"$log" 2>&1); then
    echo "mutation.sh: mutmut failed on $mod; tail of $log:" >&2; tail -30 "$log" >&2; status=1; continue
  fi
  # count from mutmut's own stats; survivors listed in tests/mutation_equivalent.md (by mutant name)
  # are equivalent mutants: reported apart and left out of the denominator of the adjusted share
  (cd "$ws" && "$MUTMUT" export-cicd-stats >/dev/null 2>&1 && "$MUTMUT" results >mutmut-results.txt 2>/dev/null) || true
  line="$("$PYTHON" - "$mod" "$ws" "$REPO/tests/mutation_equivalent.md" <<'PY'
import json, re, sys
from pathlib import Path
mod, ws, eq_file = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
s = json.loads((ws / "mutants/mutmut-cicd-stats.json").read_text())
left = {}
for row in (ws / "mutmut-results.txt").read_text().splitlines():
    name, _, status = row.strip().rpartition(": ")
    if name:
        left[name] = status
listed = set(re.findall(r"judgelab\.[\w.]+__mutmut_\d+", eq_file.read_text())) if eq_file.exists() else set()
equiv = sorted(n for n in listed if left.get(n) in ("survived", "no tests"))
unchecked = sum(1 for v in left.values() if v == "not checked")
tested = s["total"] - s["skipped"]
# a mutant that crashes the test process (segfault: e.g. None passed into a C extension) fails the
# tests as surely as an assertion does: counted as killed
killed = s["killed"] + s["timeout"] + s.get("segfault", 0)
pct = 100.0 * killed / tested if tested else float("nan")
adj = 100.0 * killed / (tested - len(equiv)) if tested - len(equiv) > 0 else float("nan")
print(f"{mod}\t{killed}\t{tested}\t{pct:.1f}\t{len(equiv)}\t{adj:.1f}\t{s['survived']}\t{s['no_tests']}\t{s['timeout']}\t{s['skipped']}\t{unchecked}")
PY
)"
  printf '%s\n' "$line" >>"$summary"
  IFS=$'\t' read -r m k t p eq adj sv nt to sk uc <<<"$line"
  echo "MUTATION $m killed=$k/$t ($p%) equivalent=$eq killed_of_non_equivalent=$adj% survived=$sv no_tests=$nt timeout=$to not_checked=$uc"
  if ((survivors)); then
    # `|| true`: grep finds nothing when every mutant was killed, and `sed` closing the pipe early makes
    # `mutmut show` exit by SIGPIPE; neither is an error of the run (pipefail would end the script there)
    (cd "$ws" && { "$MUTMUT" results 2>/dev/null | grep -E 'survived|no tests' || true; } | awk -F: '{print $1}' |
      while read -r name; do
        echo "--- $name"; { "$MUTMUT" show "$name" 2>/dev/null || true; } | sed -n '1,40p' || true; done)
  fi
done
echo
column -t -s $'\t' "$summary"
cp "$summary" "$MUTATION_DIR/summary.tsv"; rm -f "$summary"
exit "$status"
