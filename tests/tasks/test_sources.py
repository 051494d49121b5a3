"""Task sources: bundled suite, KernelBench-format dirs, single files, and the errors users can cause."""

import shutil
from pathlib import Path

import pytest

from tritonrl.errors import TaskError
from tritonrl.tasks import get_task, load_tasks, select_tasks

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KB_FIXTURE = FIXTURES / "kernelbench"


def test_bundled_tasks_have_level_and_solution_from_their_dirs():
    tasks = load_tasks("bundled")
    assert tasks and len({t.name for t in tasks}) == len(tasks)
    for task in tasks:
        assert task.origin == "bundled"
        assert f"level{task.level}" == Path(task.path).parent.name
        assert task.name.startswith(f"l{task.level}_")
        solution = Path(task.path).parents[1] / "solutions" / f"{task.name}.py"
        assert (task.solution is not None) == solution.exists()
    assert {t.level for t in load_tasks("bundled", level=1)} == {1}


def test_kernelbench_dir_names_levels_and_numeric_order(tmp_path):
    root = tmp_path / "repo" / "KernelBench"
    (root / "level2").mkdir(parents=True)
    sources = sorted((KB_FIXTURE / "level2").glob("*.py"))
    for number in (10, 2, 1):  # 10 must sort after 2
        shutil.copy(sources[number % len(sources)], root / "level2" / f"{number}_Task{number}.py")
    tasks = load_tasks(tmp_path / "repo")  # a repo root holding KernelBench/level*
    assert [t.name for t in tasks] == ["1_Task1", "2_Task2", "10_Task10"]
    assert {(t.level, t.origin) for t in tasks} == {(2, "kernelbench")}


def test_fixture_dir_by_level():
    assert len(load_tasks(KB_FIXTURE, level=1)) == 9
    assert all(t.level == 2 for t in load_tasks(KB_FIXTURE, level=2))


def test_single_file_and_get_task_by_path():
    path = KB_FIXTURE / "level1" / "2_Sum_over_dim.py"
    [task] = load_tasks(str(path))
    assert task.origin == "file" and task.name == "2_Sum_over_dim" and task.level == 1
    assert get_task(str(path)).source == path.read_text()


def test_get_task_bundled_by_name():
    name = load_tasks("bundled")[0].name
    assert get_task(name).name == name


@pytest.mark.parametrize("text, message", [
    ("import torch\nclass Model:\n    pass\n", "missing get_inputs, get_init_inputs"),
    ("def get_inputs(:\n", "syntax error on line 1"),
])
def test_malformed_task_file(tmp_path, text, message):
    path = tmp_path / "bad.py"
    path.write_text(text)
    with pytest.raises(TaskError, match=message):
        load_tasks(str(path))


def test_unknown_name_suggests_close_matches():
    name = load_tasks("bundled")[0].name
    with pytest.raises(TaskError, match=f"did you mean .*{name}"):
        get_task(name[:-1] + "x")


def test_missing_source():
    with pytest.raises(TaskError, match="no such task source"):
        load_tasks("/nonexistent/place")
    with pytest.raises(TaskError, match="no such KernelBook file"):
        load_tasks("/nonexistent/rows.jsonl")


# ---------------------------------------------------------------- select_tasks: what eval and the pipeline judge
def test_select_tasks_filters_by_level_and_count():
    assert [t.level for t in select_tasks("bundled", level=2, max_tasks=3)] == [2, 2, 2]
    with pytest.raises(TaskError, match="no tasks selected"):
        select_tasks("l1_relu", level=2)


def test_select_tasks_orders_kernelbench_problems_by_number(tmp_path):
    source = (KB_FIXTURE / "level1" / "2_Sum_over_dim.py").read_text()
    (tmp_path / "kb" / "level1").mkdir(parents=True)
    for n in (100, 10, 2, 1):
        (tmp_path / "kb" / "level1" / f"{n}_Problem.py").write_text(source)
    clone = str(tmp_path / "kb")
    assert [t.name for t in select_tasks(clone)] == ["1_Problem", "2_Problem", "10_Problem", "100_Problem"]
    assert [t.name for t in select_tasks(clone, max_tasks=2)] == ["1_Problem", "2_Problem"]


def test_select_tasks_names_a_missing_directory_as_such(tmp_path):
    with pytest.raises(TaskError) as info:
        select_tasks(str(tmp_path / "KernelBench"))
    assert str(info.value) == (f"no such directory or task file: {tmp_path / 'KernelBench'} (tasks are 'bundled', "
                               "a KernelBench directory, a .py task file, or task names separated by commas)")
