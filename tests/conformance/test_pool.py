"""The suite's one pool of worker processes (``execution.pool``, D-CNF-054): results in order,
a worker's exception raised here, a dead worker reported, one job run here."""

from __future__ import annotations

import os

import pytest

from intentref.suite.execution.pool import map_in_workers


def _square_and_pid(number: int) -> tuple[int, int]:
    return number * number, os.getpid()


def _refuse_three(number: int) -> int:
    if number == 3:
        raise ValueError("three is refused")
    return number


def _die_on_two(number: int) -> int:
    if number == 2:
        os._exit(7)
    return number


def test_results_come_back_in_the_order_of_the_items_from_other_processes() -> None:
    results = map_in_workers(_square_and_pid, list(range(9)), 2)
    assert [square for square, _ in results] == [n * n for n in range(9)]
    assert os.getpid() not in {pid for _, pid in results}


def test_one_job_runs_everything_here() -> None:
    assert {pid for _, pid in map_in_workers(_square_and_pid, [1, 2, 3], 1)} == {os.getpid()}


def test_an_exception_in_a_worker_is_raised_here() -> None:
    with pytest.raises(ValueError, match="three is refused"):
        map_in_workers(_refuse_three, list(range(6)), 2)


def test_a_worker_that_dies_is_reported() -> None:
    with pytest.raises(RuntimeError, match="exit status 7"):
        map_in_workers(_die_on_two, list(range(6)), 2)
