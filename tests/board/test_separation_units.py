"""Units of :mod:`judgelab.board.separation`: the one linear program that marks separated games, the
columns its direction moves, the per-model tally and the status sentence (each checked against a hand
count, or against the per-term check of :func:`judgelab.stats.mixed.separated_terms`)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from judgelab.board.separation import Separation, reason, separated_models, separated_rows


def test_an_empty_design_has_no_separated_rows_and_a_zero_direction_of_its_width() -> None:
    sep = separated_rows(np.zeros((0, 3)), np.zeros(0))
    assert sep.rows.dtype == bool and sep.rows.shape == (0,)
    assert sep.direction.shape == (3,) and not sep.direction.any()
    assert not sep.any


def test_a_length_mismatch_names_both_counts() -> None:
    with pytest.raises(ValueError, match=r"^3 design rows for 2 outcomes$"):
        separated_rows(np.eye(3), np.array([1.0, 0.0]))


def test_one_game_is_separated_and_its_direction_predicts_it() -> None:
    # a single decisive game: any positive coefficient on its column predicts it exactly
    sep = separated_rows(np.array([[1.0, 0.0]]), np.array([1.0]))
    assert sep.rows.tolist() == [True] and sep.any
    assert sep.direction[0] > 0
    assert sep.columns().tolist() == [0]


def test_a_tie_never_separates_and_a_won_and_lost_column_is_estimable() -> None:
    X = np.array([[1.0], [1.0], [1.0]])
    assert not separated_rows(X, np.array([0.5, 0.5, 0.5])).any  # ties hold x'b at zero
    assert not separated_rows(X, np.array([1.0, 0.0, 1.0])).any  # won and lost: finite optimum
    sep = separated_rows(X, np.array([1.0, 1.0, 0.5]))  # the tie pins the only column
    assert not sep.any


def test_rows_are_those_of_the_separated_block_only_with_sparse_input() -> None:
    # two models: model 0 won all its games (separated), model 1 won and lost (not)
    X = sparse.csr_matrix(np.array([[1, 0], [1, 0], [0, 1], [0, 1], [0, 1]], dtype=np.int64))
    y = np.array([1.0, 1.0, 1.0, 0.0, 0.5])
    sep = separated_rows(X, y)
    assert sep.rows.tolist() == [True, True, False, False, False]
    assert sep.columns().tolist() == [0]
    assert isinstance(sep.direction, np.ndarray) and sep.direction.dtype == float


def test_integer_outcomes_are_read_as_numbers() -> None:
    sep = separated_rows(np.array([[1], [1]]), np.array([1, 0]))
    assert not sep.any


def test_columns_uses_a_tolerance_relative_to_the_largest_entry() -> None:
    big = Separation(rows=np.ones(1, bool), direction=np.array([1e8, 1.0, 0.0]))
    assert big.columns().tolist() == [0]  # 1.0 is below 1e-7 * 1e8
    small = Separation(rows=np.ones(1, bool), direction=np.array([0.5, 2e-7, 1e-7, 0.0]))
    assert small.columns().tolist() == [0, 1]  # absolute floor 1e-7 * 1, strict
    assert small.columns(tol=0.4).tolist() == [0]
    assert Separation(rows=np.zeros(0, bool), direction=np.zeros(0)).columns().tolist() == []
    assert Separation(rows=np.zeros(1, bool), direction=np.array([0.0, 0.0])).columns().tolist() == []


def test_separated_models_counts_games_on_either_side_and_skips_the_reference() -> None:
    first = np.array([0, 0, 1, 2])
    second = np.array([1, 2, 2, 0])
    rows = np.array([True, False, True, False])
    got = separated_models(rows, first, second, n_models=4, ref=2)
    # model 0: games 0,1,3 (3), separated: game 0; model 1: games 0,2 (2), separated 0 and 2
    assert got == {0: (1, 3), 1: (2, 2)}
    assert separated_models(rows, first, second, n_models=4, ref=0) == {1: (2, 2), 2: (1, 3)}


def test_reason_names_counts_and_terms() -> None:
    assert reason(2, 5, ["a", "b"]) == (
        "not estimable: separation: 2 of its 5 games are predicted exactly by a direction of the "
        "coefficients (the direction moves a, b), so the fit has no finite maximum")
    assert reason(1, 1, []) == (
        "not estimable: separation: 1 of its 1 games are predicted exactly by a direction of the "
        "coefficients, so the fit has no finite maximum")


def test_a_failed_linear_program_is_an_error_with_the_solvers_message(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    import judgelab.board.separation as mod

    monkeypatch.setattr(mod, "linprog", lambda *a, **k: SimpleNamespace(status=4, message="numerical trouble", x=None))
    with pytest.raises(RuntimeError, match=r"^separation check: the linear program did not solve \(numerical trouble\)$"):
        separated_rows(np.eye(2), np.array([1.0, 0.0]))
