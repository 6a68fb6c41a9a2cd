"""
taskfiles - which files of a task library are tasks, for the Python tools:
common/tasklib.c's rule, written once. Every *.json below the library root
is a task, except example plans (*.plan.json) and the top-level folders that
hold no task: baselines/ (PyTorch times per GPU model, tools/baselines) and
kernelbench/ (the KernelBench-format family and its index, tools/kernelbench).
"""
import glob
import os

NOT_TASK_DIRS = ("baselines", "kernelbench")


def is_task_file(root, path):
    """Whether @path, a file under the task library @root, is a task."""
    rel = os.path.relpath(path, root).split(os.sep)
    return path.endswith(".json") and not path.endswith(".plan.json") and rel[0] not in NOT_TASK_DIRS


def task_paths(root):
    """The task files under the library @root, sorted."""
    return sorted(p for p in glob.glob(os.path.join(root, "**", "*.json"), recursive=True) if is_task_file(root, p))
