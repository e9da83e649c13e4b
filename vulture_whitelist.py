"""Names vulture reports as unused that are used, each with the reason (tests/project/test_dead_code.py).

vulture matches attribute names globally, so ``_.name`` marks every attribute of that name used.
"""
# ruff: noqa: B018, F821

# -- dataclass fields: written into tables with dataclasses.asdict / pairs_frame, read there
_.construction_notes  # judgelab/datasets/pairs.py, judgelab/rbd/sets.py: a column of every pairs / items table
_.in_sample  # judgelab/scoring/items.py: a column of the items table, filtered on by load_items
_.n_trainable  # judgelab/rbd/train.py TrainStats: part of what benchmark_training reports (with tokens_per_s, mfu)

# -- attributes set on third-party objects, which read them themselves
_.architectures  # judgelab/judges/local_server.py: a transformers PretrainedConfig field (`transformers serve`)
_.pre_tokenizer  # judgelab/rbd/train.py: a tokenizers.Tokenizer component
_.use_cache  # judgelab/rbd/train.py: transformers model config (off while gradient checkpointing)
_.pad_token  # judgelab/rbd/train.py: a transformers tokenizer's pad token

# -- signatures fixed by the caller
__getattr__  # judgelab/bias_card/__init__.py: module attribute hook (PEP 562), called by the import system
signum  # judgelab/workflow/lifecycle.py _on_sigterm: signal.signal passes (signum, frame)

# -- entry points run by hand, documented where they are defined
fetch_human_judgments_from_hf  # judgelab/datasets/mtbench.py: rebuilds the shared MT-Bench human-vote file
benchmark_training  # judgelab/rbd/train.py: times the training loop on a GPU (docs: the rbd study page)

# -- documented vocabularies, named by docstrings and the schema
MTBENCH_EXTRA  # judgelab/datasets/mtbench.py: the extra columns of the MT-Bench pairs table (load_mtbench_pairs)
VERDICT_TARGETS  # judgelab/verdict_import/mapping.py: the values a verdict mapping may map to

# -- declared and not yet read: kept as data, flagged for a follow-up
_.allows_tie  # judgelab/prompts/__init__.py PairwiseTemplate: set False on two templates; no parser reads it yet
